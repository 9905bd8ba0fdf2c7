"""GAIL's discriminator: a classifier of (observation, action) pairs, expert against policy."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from rlbase.common import nested
from rlbase.common.errors import RLBaseError
from rlbase.common.networks.policies import ObservationEncoder, is_image_space
from rlbase.common.networks.registry import Composite

#: floor of the observation variance the classifier divides by the square root of (Baselines'
#: RunningMeanStd: std = sqrt(max(var, 1e-2)), so the std's floor is 0.1)
VAR_FLOOR = 1e-2


def check_spaces(ob_space: gym.Space, ac_space: gym.Space) -> None:
    """One line refusing what the discriminator cannot take (image observations)."""
    if any(is_image_space(leaf) for leaf in nested.leaf_spaces(ob_space)):
        raise RLBaseError(f"GAIL's discriminator takes vector observations (Box, Discrete, "
                          f"MultiDiscrete, MultiBinary and Dict/Tuple of them), not the image "
                          f"space {ob_space}")
    if not isinstance(ac_space, gym.spaces.Box | gym.spaces.Discrete | gym.spaces.MultiDiscrete
                      | gym.spaces.MultiBinary):
        raise RLBaseError(f"GAIL's discriminator takes Box, Discrete, MultiDiscrete or "
                          f"MultiBinary actions, not {ac_space}")


def encode_action(space: gym.Space, actions: tf.Tensor) -> tf.Tensor:
    """Actions as the classifier sees them: one-hot for discrete spaces; Box actions clipped to
    the space's bounds, since the env (and so the expert's record) acts on clipped actions while
    the policy's Gaussian samples are not, and the classifier must not tell them apart by that."""
    if isinstance(space, gym.spaces.Discrete):
        return tf.one_hot(tf.cast(actions, tf.int32) - int(space.start), int(space.n))
    if isinstance(space, gym.spaces.MultiDiscrete):
        flat = tf.reshape(tf.cast(actions, tf.int32), [-1, int(space.nvec.size)])
        starts = np.broadcast_to(space.start, space.nvec.shape).ravel()
        return tf.concat([tf.one_hot(part - int(s), int(n)) for part, n, s in
                          zip(tf.unstack(flat, axis=-1), space.nvec.ravel(), starts)], -1)
    x = tf.reshape(tf.cast(actions, tf.float32), [tf.shape(actions)[0], -1])
    if isinstance(space, gym.spaces.Box):
        low = np.nan_to_num(space.low.astype(np.float32).ravel(), neginf=-3e38)
        high = np.nan_to_num(space.high.astype(np.float32).ravel(), posinf=3e38)
        x = tf.clip_by_value(x, low, high)
    return x


class Discriminator(Composite, keras.Model):
    """logit(s, a) of an MLP on the normalized observation features and the encoded action.

    The observation features are normalized by their running mean and standard deviation over
    every batch the classifier trained on (expert and policy pairs alike), the variance floored
    at VAR_FLOOR (0.01: a near-constant feature is divided by 0.1, as in Baselines); the
    statistics are variables, so they are saved and restored with the weights.

    hidden_size: units of each of the two tanh hidden layers.
    """

    def __init__(self, ob_space: gym.Space, ac_space: gym.Space, hidden_size: int = 100,
                 **kwargs: Any):
        super().__init__(**kwargs)
        check_spaces(ob_space, ac_space)
        self.ob_space, self.ac_space = ob_space, ac_space
        self.encoder = ObservationEncoder(ob_space)
        sample = nested.map_structure(tf.constant, nested.zeros(ob_space, [1]))
        size = self.feature_size = int(np.prod(self.encoder(sample).shape[1:]))
        self.obs_mean = self.add_weight(shape=(size,), initializer="zeros", trainable=False,
                                        name="obs_mean")
        self.obs_var = self.add_weight(shape=(size,), initializer="ones", trainable=False,
                                       name="obs_var")
        self.obs_count = self.add_weight(shape=(), initializer=keras.initializers.Constant(1e-4),
                                         trainable=False, name="obs_count")
        self.hidden = [keras.layers.Dense(hidden_size, activation="tanh") for _ in range(2)]
        self.logit = keras.layers.Dense(1)
        n_actions = int(encode_action(ac_space, tf.zeros([1, *(ac_space.shape or ())],
                                                         ac_space.dtype)).shape[-1])
        self(sample, tf.zeros([1, n_actions]))

    def features(self, obs: Any) -> tf.Tensor:
        """The encoded observations, flat, with their size known when tracing (the MPI
        averaging of their moments needs it)."""
        x = self.encoder(obs)
        return tf.reshape(x, [tf.shape(x)[0], self.feature_size])

    def update_statistics(self, mean: tf.Tensor, var: tf.Tensor, n: tf.Tensor) -> None:
        """Merge a batch's feature moments (its mean, variance and size) into the running
        mean and variance (the parallel formula of Chan et al.)."""
        n = tf.cast(n, tf.float32)
        total = self.obs_count + n
        delta = mean - self.obs_mean
        m2 = self.obs_var * self.obs_count + var * n + tf.square(delta) * self.obs_count * n / total
        self.obs_mean.assign_add(delta * n / total)
        self.obs_var.assign(m2 / total)
        self.obs_count.assign(total)

    def call(self, obs: Any, encoded_actions: tf.Tensor) -> tf.Tensor:
        std = tf.sqrt(tf.maximum(self.obs_var, VAR_FLOOR))
        x = tf.concat([(self.features(obs) - self.obs_mean) / std, encoded_actions], -1)
        for layer in self.hidden:
            x = layer(x)
        return tf.squeeze(self.logit(x), -1)

    def logits(self, obs: Any, actions: tf.Tensor) -> tf.Tensor:
        return self(obs, encode_action(self.ac_space, actions))
