"""DDPG's actor and critic networks.

The actor maps an observation to actions in [-1, 1] (tanh output); the critic maps an
(observation, action) pair to Q, with the action concatenated to the flattened observation
before the first layer, as in Baselines' and SB3's DDPG. With ``network='mlp'`` the hidden
widths can differ layer by layer (``layer_sizes=(400, 300)``, the TD3 paper's nets).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf
from keras import layers

from rlbase.common.errors import RLBaseError
from rlbase.common.models import MLP, build_network

# Baselines' choice for the output layers: tiny weights, so early actions and Q are near 0.
FINAL_INIT = 3e-3


def check_action_space(space: gym.Space) -> None:
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
        raise RLBaseError(f"ddpg needs a 1-D continuous (Box) action space, got {space}; use "
                          "dqn, a2c or ppo for discrete actions")
    if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
        raise RLBaseError(f"ddpg needs finite action bounds, got low={space.low} "
                          f"high={space.high}")


def make_torso(network: str | Callable, layer_sizes: Sequence[int] | None,
               network_kwargs: dict[str, Any]) -> keras.layers.Layer:
    """The hidden layers of an actor or critic."""
    if network == "mlp":
        kwargs = dict(network_kwargs)
        unknown = sorted(set(kwargs) - {"num_layers", "num_hidden", "activation", "layer_norm"})
        if unknown:
            raise RLBaseError(f"network 'mlp' does not take {', '.join(unknown)}; it takes: "
                              "num_layers, num_hidden, activation, layer_norm")
        sizes = list(layer_sizes) if layer_sizes is not None else \
            [int(kwargs.get("num_hidden", 64))] * int(kwargs.get("num_layers", 2))
        return MLP(0, 1, kwargs.get("activation", "relu"), bool(kwargs.get("layer_norm", False)),
                   sizes=sizes)
    if layer_sizes is not None:
        raise RLBaseError(f"layer_sizes is for network 'mlp' only, got network {network!r}")
    torso = build_network(network, **network_kwargs)
    if getattr(torso, "recurrent", False):
        raise RLBaseError(f"ddpg needs a feed-forward network, got recurrent {network!r}")
    return torso


def _final(units: int, activation: str | None = None) -> layers.Dense:
    init = keras.initializers.RandomUniform(-FINAL_INIT, FINAL_INIT)
    return layers.Dense(units, activation=activation, kernel_initializer=init,
                        bias_initializer=init)


class Actor(keras.Model):
    """Observation (already normalized, float32) -> actions in [-1, 1]."""

    def __init__(self, ob_shape: Sequence[int], nb_actions: int, torso: keras.layers.Layer,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.flatten = layers.Flatten()
        self.torso = torso
        self.out = _final(nb_actions, "tanh")
        self(tf.zeros([1, *ob_shape]))  # create the variables now

    def call(self, obs: tf.Tensor) -> tf.Tensor:
        return self.out(self.torso(self.flatten(obs)))

    def perturbable_variables(self) -> list[tf.Variable]:
        """Weights parameter noise perturbs: all but layer normalization's scale and shift."""
        skip = {id(v) for layer in self._flatten_layers()
                if isinstance(layer, layers.LayerNormalization) for v in layer.weights}
        return [v for v in self.trainable_variables if id(v) not in skip]


class Critic(keras.Model):
    """(observation, action) -> Q (normalized when return normalization is on), shape [B]."""

    def __init__(self, ob_shape: Sequence[int], nb_actions: int, torso: keras.layers.Layer,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.flatten = layers.Flatten()
        self.torso = torso
        self.out = _final(1)
        self(tf.zeros([1, *ob_shape]), tf.zeros([1, nb_actions]))

    def call(self, obs: tf.Tensor, action: tf.Tensor) -> tf.Tensor:
        x = tf.concat([self.flatten(obs), action], axis=-1)
        return self.out(self.torso(x))[:, 0]

    def regularized_kernels(self) -> list[tf.Variable]:
        """The hidden layers' kernels (not biases, not the output layer): what L2 applies to."""
        out = {id(v) for v in self.out.weights}
        return [v for v in self.trainable_variables
                if len(v.shape) >= 2 and id(v) not in out]
