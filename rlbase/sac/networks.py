"""SAC's networks: the squashed-Gaussian actor, and the twin Q-networks (the shared
:class:`rlbase.common.families.continuous.Critic`). Actor and critics each see the observation
through their own :class:`~rlbase.common.families.continuous.ObservationFeatures` (SB3's SAC
shares no features extractor), so Dict/Tuple observations work.

Output layers are initialized like PyTorch's ``nn.Linear`` (weights and biases uniform in
``+-1/sqrt(fan_in)``), the peer's initialization, so early actions and Q values are small.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import keras
import tensorflow as tf
from keras import layers

from rlbase.common.families.continuous import Critic, ObservationFeatures, dummy_observations
from rlbase.common.networks.registry import Composite
from rlbase.sac.losses import clip_log_std


class Actor(Composite, keras.Model):
    """Observations -> ``(mean, log_std)`` of the pre-tanh Gaussian over actions, each
    ``[B, num_actions]``; ``log_std`` clipped to [-20, 2]. The squashing and its
    log-probability are in rlbase.sac.losses.

    observation_space: the env's observation space (a Box, or Dict/Tuple).
    num_actions: the action dimension.
    torso: the hidden layers (rlbase.common.families.continuous.build_torso).
    """

    def __init__(self, observation_space: gym.Space, num_actions: int, torso: keras.layers.Layer,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.features = ObservationFeatures(observation_space)
        self.torso = torso
        self.mu = layers.Dense(num_actions)
        self.log_std = layers.Dense(num_actions)
        self(dummy_observations(observation_space))  # create the variables now
        reinit_torch_linear(self.mu)
        reinit_torch_linear(self.log_std)

    def call(self, obs: Any) -> tuple[tf.Tensor, tf.Tensor]:
        h = self.torso(self.features(obs))
        return self.mu(h), clip_log_std(self.log_std(h))


def q_network(observation_space: gym.Space, num_actions: int, torso: keras.layers.Layer) -> Critic:
    """One of the twin Q-networks: the shared Critic with a PyTorch-initialized output."""
    critic = Critic(observation_space, num_actions, torso, final_init=None)
    reinit_torch_linear(critic.out)
    return critic


def reinit_torch_linear(layer: layers.Dense) -> None:
    """A built Dense layer's weights and biases drawn anew, uniform in +-1/sqrt(fan_in)
    (PyTorch's default: a Keras bias initializer is not told the fan-in)."""
    bound = 1.0 / math.sqrt(int(layer.kernel.shape[0]))
    uniform = keras.initializers.RandomUniform(-bound, bound)
    layer.kernel.assign(uniform(layer.kernel.shape))
    layer.bias.assign(uniform(layer.bias.shape))
