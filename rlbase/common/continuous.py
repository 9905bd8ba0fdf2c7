"""Pieces every continuous-control algorithm shares (DDPG/TD3 today, SAC next): the action
space check, action scaling, the registry torso and the critic Q(s, a).

Actions live in [-1, 1] inside the agent (a tanh output's range, the replay buffer, the
exploration noise) and are mapped affinely onto the env's [low, high] only when they leave it,
so asymmetric bounds such as [0, 2] or [-1, 3] work.
"""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf
from keras import layers

from rlbase.common.errors import RLBaseError
from rlbase.common.models import build_network

# Baselines' DDPG output layers: weights uniform in +-3e-3, so early actions and Q are near 0.
FINAL_INIT = 3e-3


def check_continuous_action_space(space: gym.Space, algorithm: str) -> gym.spaces.Box:
    """``space`` if it is a 1-D Box with finite bounds, else a clear error naming the
    algorithms that fit."""
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
        raise RLBaseError(f"{algorithm} needs a 1-D continuous (Box) action space, got "
                          f"{space}; use dqn, a2c or ppo for discrete actions")
    if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
        raise RLBaseError(f"{algorithm} needs finite action bounds, got low={space.low} "
                          f"high={space.high}")
    return space


def check_box_observation_space(space: gym.Space, algorithm: str) -> gym.spaces.Box:
    """``space`` if it is a Box, else a clear error."""
    if not isinstance(space, gym.spaces.Box):
        raise RLBaseError(f"{algorithm} needs a Box observation space, got {space}")
    return space


def scale_actions(actions: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """[-1, 1] -> [low, high], element-wise (low maps to -1, high to +1)."""
    return low + (np.asarray(actions) + 1.0) * 0.5 * (high - low)


def unscale_actions(actions: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """[low, high] -> [-1, 1], the inverse of :func:`scale_actions`."""
    return 2.0 * (np.asarray(actions) - low) / (high - low) - 1.0


def build_torso(network: str | Callable[..., keras.layers.Layer],
                network_kwargs: dict[str, Any], algorithm: str) -> keras.layers.Layer:
    """A fresh feed-forward registry network (hidden layers of an actor or a critic); a
    recurrent one is an error (off-policy replay here samples single transitions)."""
    torso = build_network(network, **network_kwargs)
    # The registry's convention: recurrent layers say so with ``recurrent = True``.
    if getattr(torso, "recurrent", False):
        raise RLBaseError(f"{algorithm} needs a feed-forward network, got recurrent "
                          f"{network!r}")
    return torso


def final_layer(units: int, activation: str | None = None,
                init: float | None = FINAL_INIT) -> layers.Dense:
    """An output layer; ``init``: its weights and biases uniform in +-init (None: Keras')."""
    if init is None:
        return layers.Dense(units, activation=activation)
    uniform = keras.initializers.RandomUniform(-init, init)
    return layers.Dense(units, activation=activation, kernel_initializer=uniform,
                        bias_initializer=uniform)


class Critic(keras.Model):
    """Q(s, a): the action concatenated to the flattened observation before the first layer
    (as in Baselines' and SB3's DDPG, TD3 and SAC), a registry torso, one linear output.
    Output shape ``[B]``. Twin critics are two of these.

    ob_shape / nb_actions: one observation's shape; the action dimension.
    torso: the hidden layers (see :func:`build_torso`).
    final_init: the output layer's uniform init range (None: Keras' default init).
    """

    def __init__(self, ob_shape: tuple[int, ...], nb_actions: int, torso: keras.layers.Layer,
                 final_init: float | None = FINAL_INIT, **kwargs: Any):
        super().__init__(**kwargs)
        self.flatten = layers.Flatten()
        self.torso = torso
        self.out = final_layer(1, init=final_init)
        self(tf.zeros([1, *ob_shape]), tf.zeros([1, nb_actions]))  # create the variables now

    def call(self, obs: tf.Tensor, action: tf.Tensor) -> tf.Tensor:
        x = tf.concat([self.flatten(obs), action], axis=-1)
        return self.out(self.torso(x))[:, 0]

    def regularized_kernels(self) -> list[tf.Variable]:
        """The hidden layers' kernels (not biases, not the output layer): what L2 applies to."""
        out = {id(v) for v in self.out.weights}
        return [v for v in self.trainable_variables
                if len(v.shape) >= 2 and id(v) not in out]
