"""SAC's networks: the squashed-Gaussian actor and the Q-network, each with its own observation
encoder (SB3's SAC shares no features extractor between actor and critics), so Dict/Tuple
observations work like they do for the actor-critic policies.

Output layers are initialized like PyTorch's ``nn.Linear`` (weights uniform in
``+-1/sqrt(fan_in)``), the peer's initialization, so early actions and Q values are near 0.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import keras
import tensorflow as tf
from keras import layers

from rlbase.common import nested
from rlbase.common.continuous import Critic
from rlbase.common.policies import ObservationEncoder
from rlbase.sac.losses import clip_log_std

# U(-1/sqrt(fan_in), 1/sqrt(fan_in)): variance scaling with scale 1/3 is PyTorch's default
# (kaiming_uniform with a = sqrt(5)).
TORCH_LINEAR = keras.initializers.VarianceScaling(scale=1.0 / 3.0, mode="fan_in",
                                                  distribution="uniform")


def dummy_observations(space: gym.Space, batch: int = 1) -> Any:
    """A batch of sample observations as tensors (nested like the space): what builds a
    network's variables before anything is compiled."""
    obs = nested.stack(space, [space.sample()] * batch)
    return tf.nest.map_structure(tf.constant, obs)


class Actor(keras.Model):
    """Observations -> ``(mean, log_std)`` of the pre-tanh Gaussian over actions, each
    ``[B, nb_actions]``; ``log_std`` clipped to [-20, 2]. The squashing and its
    log-probability are in rlbase.sac.losses.

    ob_space: the env's observation space (any that ObservationEncoder takes).
    nb_actions: the action dimension.
    torso: the hidden layers (rlbase.common.continuous.build_torso).
    """

    def __init__(self, ob_space: gym.Space, nb_actions: int, torso: keras.layers.Layer,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.encoder = ObservationEncoder(ob_space)
        self.torso = torso
        self.mu = layers.Dense(nb_actions, kernel_initializer=TORCH_LINEAR)
        self.log_std = layers.Dense(nb_actions, kernel_initializer=TORCH_LINEAR)
        self(dummy_observations(ob_space))  # create the variables now

    def call(self, obs: Any) -> tuple[tf.Tensor, tf.Tensor]:
        h = self.torso(self.encoder(obs))
        return self.mu(h), clip_log_std(self.log_std(h))


class QNetwork(keras.Model):
    """Q(s, a) ``[B]``: the observation encoded, then the shared
    :class:`rlbase.common.continuous.Critic` (the action joins the features before the first
    layer). Twin critics are two of these.

    ob_space: the env's observation space.
    nb_actions: the action dimension.
    torso: the hidden layers.
    """

    def __init__(self, ob_space: gym.Space, nb_actions: int, torso: keras.layers.Layer,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.encoder = ObservationEncoder(ob_space)
        features = self.encoder(dummy_observations(ob_space))
        width = int(torso(tf.zeros([1, int(math.prod(features.shape[1:])) + nb_actions]))
                    .shape[-1])
        self.critic = Critic(tuple(features.shape[1:]), nb_actions, torso,
                             final_init=1.0 / math.sqrt(width))

    @property
    def out(self) -> layers.Dense:
        """The linear output layer."""
        return self.critic.out

    def call(self, obs: Any, actions: tf.Tensor) -> tf.Tensor:
        return self.critic(self.encoder(obs), actions)
