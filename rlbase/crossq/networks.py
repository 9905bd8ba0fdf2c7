"""CrossQ's networks: batch renormalization (Ioffe 2017, in sb3-contrib's form), the
normalized MLP the actor's torso and every critic are made of, and the critic.

A normalization layer runs in training mode only when its caller says ``training=True`` (Keras
passes that down through the layers); otherwise (acting, evaluating, the target's next
actions) it normalizes with its moving statistics and leaves them alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

import gymnasium as gym
import keras
import tensorflow as tf
from keras import layers

from rlbase.common.families.continuous import ObservationFeatures, dummy_observations
from rlbase.common.families.squashed_gaussian import reinit_torch_linear
from rlbase.common.networks.registry import Composite

# Batch renormalization's clips of the correction factors (sb3-contrib's r_max and d_max).
R_MAX, D_MAX = 3.0, 5.0


class BatchRenorm(keras.layers.Layer):
    """``scale (x - m) / sqrt(v + eps) + bias`` per feature.

    Inference: ``m, v`` the moving mean and variance. Training: the batch's mean ``mu`` and
    unbiased variance ``s^2`` (PyTorch's ``var``); past ``warmup_steps`` training calls they are
    corrected towards the moving statistics ``M, V`` (before this call's update): with
    ``sigma = sqrt(s^2 + eps)``, ``r = clip(sigma / sqrt(V + eps), 1/3, 3)`` and ``d = clip((mu
    - M) / sqrt(V + eps), -5, 5)``, both constants, ``m = mu - d s / r`` and ``v = s^2 / r^2``.
    Every training call then moves ``M += momentum (mu - M)``, ``V += momentum (s^2 - V)`` and
    counts itself."""

    def __init__(self, momentum: float, epsilon: float, warmup_steps: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.momentum, self.epsilon, self.warmup_steps = momentum, epsilon, warmup_steps

    def build(self, input_shape: Any) -> None:
        n = (int(input_shape[-1]),)
        self.scale = self.add_weight(shape=n, initializer="ones", name="scale")
        self.bias = self.add_weight(shape=n, initializer="zeros", name="bias")
        self.moving_mean = self.add_weight(shape=n, initializer="zeros", trainable=False,
                                           name="moving_mean")
        self.moving_var = self.add_weight(shape=n, initializer="ones", trainable=False,
                                          name="moving_var")
        self.steps = self.add_weight(shape=(), initializer="zeros", dtype="int64",
                                     trainable=False, name="steps")

    def call(self, x: tf.Tensor, training: bool | None = None) -> tf.Tensor:
        if training:
            mean, var = self._training_statistics(x)
        else:
            mean, var = self.moving_mean, self.moving_var
        return self.scale * (x - mean) * tf.math.rsqrt(var + self.epsilon) + self.bias

    def _training_statistics(self, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        n = tf.cast(tf.shape(x)[0], x.dtype)
        mu = tf.reduce_mean(x, axis=0)
        var = tf.reduce_sum(tf.square(x - mu), axis=0) / (n - 1.0)
        moving_std = tf.sqrt(self.moving_var + self.epsilon)
        r = tf.stop_gradient(tf.clip_by_value(tf.sqrt(var + self.epsilon) / moving_std,
                                              1.0 / R_MAX, R_MAX))
        d = tf.stop_gradient(tf.clip_by_value((mu - self.moving_mean) / moving_std,
                                              -D_MAX, D_MAX))
        renorm = self.steps > self.warmup_steps
        # sqrt(var) with a zero gradient at var 0 (a feature constant over the batch, e.g. a
        # dead ReLU): sqrt's infinite slope there would make the gradient NaN, even through
        # the unselected branch of the where below.
        positive = var > 0.0
        batch_std = tf.where(positive, tf.sqrt(tf.where(positive, var, 1.0)), 0.0)
        mean = tf.where(renorm, mu - d * batch_std / r, mu)
        used_var = tf.where(renorm, var / tf.square(r), var)
        self.moving_mean.assign_add(self.momentum * (tf.stop_gradient(mu) - self.moving_mean))
        self.moving_var.assign_add(self.momentum * (tf.stop_gradient(var) - self.moving_var))
        self.steps.assign_add(1)
        return mean, used_var


class NormalizedMLP(Composite, keras.layers.Layer):
    """Dense layers of ``sizes`` units, each preceded by a :class:`BatchRenorm` (sb3-contrib's
    ``create_mlp`` with pre-linear modules), and one more after the last when ``norm_output``
    (the actor's torso). ``norm``: (momentum, eps, warmup steps), or None for no normalization.
    """

    def __init__(self, sizes: Sequence[int], activation: str | Callable,
                 norm: tuple[float, float, int] | None, norm_output: bool, **kwargs: Any):
        super().__init__(**kwargs)
        self.dense = [layers.Dense(w, activation=activation) for w in sizes]
        count = len(sizes) + int(norm_output)
        self.norms = [] if norm is None else [BatchRenorm(*norm) for _ in range(count)]

    def call(self, x: tf.Tensor, training: bool | None = None) -> tf.Tensor:
        for i, dense in enumerate(self.dense):
            if self.norms:
                x = self.norms[i](x, training=training)
            x = dense(x)
        if len(self.norms) > len(self.dense):
            x = self.norms[-1](x, training=training)
        return x

    def reinit_torch_linear(self) -> None:
        """The dense layers drawn anew like PyTorch's ``nn.Linear`` (the peer's)."""
        for dense in self.dense:
            reinit_torch_linear(dense)


class CrossQCritic(Composite, keras.Model):
    """Q(s, a): ``[B]``, the action joined to the observation's features, a
    :class:`NormalizedMLP` (normalized before every dense layer, the output layer included).

    ob_space / num_actions: one observation's space; the action dimension.
    sizes / activation / norm: the hidden layers (see :class:`NormalizedMLP`).
    """

    def __init__(self, ob_space: gym.Space, num_actions: int, sizes: Sequence[int],
                 activation: str | Callable, norm: tuple[float, float, int] | None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.features = ObservationFeatures(ob_space)
        self.torso = NormalizedMLP(sizes, activation, norm, norm_output=True)
        self.out = layers.Dense(1)
        self(dummy_observations(ob_space), tf.zeros([1, num_actions]))  # create the variables
        self.torso.reinit_torch_linear()
        reinit_torch_linear(self.out)

    def call(self, obs: Any, action: tf.Tensor, training: bool | None = None) -> tf.Tensor:
        x = tf.concat([self.features(obs), action], axis=-1)
        return self.out(self.torso(x, training=training))[:, 0]
