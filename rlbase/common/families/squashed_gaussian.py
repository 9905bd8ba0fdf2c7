"""The squashed-Gaussian policy SAC and TQC share: its mathematics as pure TensorFlow functions
(formula in each docstring), the temperature's loss, and the actor network.

Notation: ``u`` the pre-tanh Gaussian sample, ``a = tanh(u)`` the action in [-1, 1], ``alpha``
the entropy coefficient (temperature).

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

from rlbase.common.families.continuous import ObservationFeatures, dummy_observations
from rlbase.common.networks.registry import Composite

# SB3 (and the SAC paper's code) clip the policy's log std to this range.
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def gaussian_log_prob(u: tf.Tensor, mean: tf.Tensor, log_std: tf.Tensor) -> tf.Tensor:
    """``log N(u; mean, exp(log_std))`` summed over the action dimensions: ``sum_j -(u_j -
    mean_j)^2 / (2 std_j^2) - log_std_j - log(2 pi) / 2``. Shape ``[B]``."""
    z = (u - mean) * tf.exp(-log_std)
    return tf.reduce_sum(-0.5 * tf.square(z) - log_std - _HALF_LOG_2PI, axis=-1)


def tanh_log_det(u: tf.Tensor) -> tf.Tensor:
    """``sum_j log(1 - tanh(u_j)^2)`` in its numerically stable form ``sum_j 2 (log 2 - u_j -
    softplus(-2 u_j))`` (exact, with no epsilon: the form SB3 writes as ``log(1 - tanh(u)^2 +
    1e-6)`` agrees to ~1e-6 for moderate ``u`` and saturates at ``log(1e-6)`` for large ones).
    Shape ``[B]``."""
    return tf.reduce_sum(2.0 * (math.log(2.0) - u - tf.nn.softplus(-2.0 * u)), axis=-1)


def squashed_sample(mean: tf.Tensor, log_std: tf.Tensor, noise: tf.Tensor
                    ) -> tuple[tf.Tensor, tf.Tensor]:
    """The reparameterized squashed Gaussian: ``u = mean + exp(log_std) * noise`` (``noise``
    standard normal), ``a = tanh(u)``, and ``log pi(a|s) = log N(u; mean, std) - sum_j log(1 -
    tanh(u_j)^2)``. Returns ``(a, log pi(a|s))``; ``log_std`` is taken as already clipped."""
    u = mean + tf.exp(log_std) * noise
    return tf.tanh(u), gaussian_log_prob(u, mean, log_std) - tanh_log_det(u)


def clip_log_std(log_std: tf.Tensor) -> tf.Tensor:
    """``log_std`` clipped to ``[LOG_STD_MIN, LOG_STD_MAX]`` = [-20, 2] (SB3's)."""
    return tf.clip_by_value(log_std, LOG_STD_MIN, LOG_STD_MAX)


def temperature_loss(log_alpha: tf.Tensor, log_prob: tf.Tensor, target_entropy: float
                     ) -> tf.Tensor:
    """``-mean(log_alpha (log pi(a|s) + target_entropy))`` (SB3 optimizes ``log alpha``, not
    ``alpha``); ``log pi`` is a constant here. Its gradient in ``log_alpha`` is
    ``-mean(log pi + target_entropy)``: alpha rises while the entropy ``-log pi`` is below
    the target."""
    return -tf.reduce_mean(log_alpha * tf.stop_gradient(log_prob + target_entropy))


class Actor(Composite, keras.Model):
    """Observations -> ``(mean, log_std)`` of the pre-tanh Gaussian over actions, each
    ``[B, num_actions]``; ``log_std`` clipped to [-20, 2]. The squashing and its
    log-probability are :func:`squashed_sample`.

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


def reinit_torch_linear(layer: layers.Dense) -> None:
    """A built Dense layer's weights and biases drawn anew, uniform in +-1/sqrt(fan_in)
    (PyTorch's default: a Keras bias initializer is not told the fan-in)."""
    bound = 1.0 / math.sqrt(int(layer.kernel.shape[0]))
    uniform = keras.initializers.RandomUniform(-bound, bound)
    layer.kernel.assign(uniform(layer.kernel.shape))
    layer.bias.assign(uniform(layer.bias.shape))
