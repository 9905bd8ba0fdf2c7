"""One probability distribution per action space, and the Keras head that parameterizes it.

Every distribution offers ``mode``, ``sample``, ``neglogp``, ``entropy`` and ``kl`` as TensorFlow
ops, so they run inside compiled calls.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from rlbase.common.errors import RLBaseError
from rlbase.common.networks.registry import Composite, Dense

LOG_2PI = math.log(2.0 * math.pi)
#: the logit a masked-out action gets: exp(MASKED_LOGIT - logsumexp) is exactly 0 in float32,
#: so its probability and its share of the entropy (0 * MASKED_LOGIT) are 0, while -inf would
#: give 0 * -inf = NaN there (sb3-contrib's MaskableCategorical uses -1e8 likewise)
MASKED_LOGIT = -1e8


def masked_logits(logits: tf.Tensor, action_masks: tf.Tensor) -> tf.Tensor:
    """``logits`` where ``action_masks`` is true (a valid action), :data:`MASKED_LOGIT`
    elsewhere; masks ``[B, n]`` (bool, or 0/1 numbers) of the logits' shape. The masked
    entries are constants, so no gradient reaches their logits."""
    valid = tf.cast(action_masks, tf.bool)
    return tf.where(valid, logits, tf.constant(MASKED_LOGIT, logits.dtype))


def masked_binary_logits(logits: tf.Tensor, action_masks: tf.Tensor) -> tf.Tensor:
    """Bernoulli ``logits`` ``[B, n]`` under MultiBinary masks ``[B, 2n]`` (sb3-contrib's
    layout: per dimension, whether 0 and whether 1 may be taken): a dimension where only 1 is
    valid gets ``-MASKED_LOGIT`` (P(1) exactly 1 in float32), only 0 gets ``MASKED_LOGIT``
    (P(1) exactly 0), both keep their logit; either way the entropy of a forced dimension is
    0 and no gradient reaches its logit."""
    valid = tf.cast(action_masks, tf.bool)
    zero, one = valid[..., 0::2], valid[..., 1::2]
    big = tf.constant(-MASKED_LOGIT, logits.dtype)
    return tf.where(one & ~zero, big, tf.where(zero & ~one, -big, logits))


def gumbel_noise(shape: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
    u = tf.random.stateless_uniform(shape, seed, minval=1e-20, maxval=1.0)
    return -tf.math.log(-tf.math.log(u))


class Distribution:
    def mode(self) -> tf.Tensor:
        raise NotImplementedError

    def sample(self, seed: tf.Tensor) -> tf.Tensor:
        """A random draw; ``seed`` is a ``[2]`` int tensor (stateless sampling, so runs are
        reproducible under XLA, which ignores the seeds of stateful random ops)."""
        raise NotImplementedError

    def neglogp(self, x: tf.Tensor) -> tf.Tensor:
        raise NotImplementedError

    def entropy(self) -> tf.Tensor:
        raise NotImplementedError

    def kl(self, other: Distribution) -> tf.Tensor:
        assert isinstance(other, Distribution)
        raise NotImplementedError


class Categorical(Distribution):
    """Actions ``start .. start+n-1`` with probabilities ``softmax(logits)``."""

    def __init__(self, logits: tf.Tensor, start: int = 0, dtype: tf.DType = tf.int64):
        self.logits = logits
        self.start = start
        self.dtype = dtype

    def mode(self) -> tf.Tensor:
        return tf.cast(tf.argmax(self.logits, axis=-1) + self.start, self.dtype)

    def sample(self, seed: tf.Tensor) -> tf.Tensor:
        # argmax(logits + Gumbel noise): one fused op chain that XLA compiles
        # (tf.random.stateless_categorical has no XLA kernel on CPU).
        noisy = self.logits + gumbel_noise(tf.shape(self.logits), seed)
        return tf.cast(tf.argmax(noisy, axis=-1) + self.start, self.dtype)

    def log_probs(self) -> tf.Tensor:
        return tf.nn.log_softmax(self.logits)

    def neglogp(self, x: tf.Tensor) -> tf.Tensor:
        index = tf.cast(x, tf.int32) - self.start
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=index, logits=self.logits)

    def entropy(self) -> tf.Tensor:
        logp = self.log_probs()
        return -tf.reduce_sum(tf.exp(logp) * logp, axis=-1)

    def kl(self, other: Distribution) -> tf.Tensor:
        assert isinstance(other, Categorical)
        logp, logq = self.log_probs(), other.log_probs()
        return tf.reduce_sum(tf.exp(logp) * (logp - logq), axis=-1)


class MultiCategorical(Distribution):
    """Independent categoricals, one per entry of ``nvec``; logits concatenated."""

    def __init__(self, logits: tf.Tensor, nvec: np.ndarray, dtype: tf.DType = tf.int64):
        self.logits = logits
        self.nvec = [int(n) for n in nvec]
        self.parts = [Categorical(lg, 0, dtype) for lg in tf.split(logits, self.nvec, axis=-1)]
        self.dtype = dtype

    def mode(self) -> tf.Tensor:
        return tf.stack([p.mode() for p in self.parts], axis=-1)

    def sample(self, seed: tf.Tensor) -> tf.Tensor:
        # One uniform draw for all parts, split like the logits.
        noise = gumbel_noise(tf.shape(self.logits), seed)
        noisy = tf.split(self.logits + noise, self.nvec, axis=-1)
        return tf.stack([tf.cast(tf.argmax(n, axis=-1), self.dtype) for n in noisy], axis=-1)

    def neglogp(self, x: tf.Tensor) -> tf.Tensor:
        xs = tf.unstack(x, num=len(self.parts), axis=-1)
        return tf.add_n([p.neglogp(xi) for p, xi in zip(self.parts, xs)])

    def entropy(self) -> tf.Tensor:
        return tf.add_n([p.entropy() for p in self.parts])

    def kl(self, other: Distribution) -> tf.Tensor:
        assert isinstance(other, MultiCategorical)
        return tf.add_n([p.kl(q) for p, q in zip(self.parts, other.parts)])


class Bernoulli(Distribution):
    """Independent binary actions with ``P(1) = sigmoid(logits)``."""

    def __init__(self, logits: tf.Tensor, dtype: tf.DType = tf.int8):
        self.logits = logits
        self.probs = tf.sigmoid(logits)
        self.dtype = dtype

    def mode(self) -> tf.Tensor:
        return tf.cast(self.logits > 0, self.dtype)

    def sample(self, seed: tf.Tensor) -> tf.Tensor:
        u = tf.random.stateless_uniform(tf.shape(self.probs), seed)
        return tf.cast(u < self.probs, self.dtype)

    def neglogp(self, x: tf.Tensor) -> tf.Tensor:
        labels = tf.cast(x, tf.float32)
        ce = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=self.logits)
        return tf.reduce_sum(ce, axis=-1)

    def entropy(self) -> tf.Tensor:
        ce = tf.nn.sigmoid_cross_entropy_with_logits(labels=self.probs, logits=self.logits)
        return tf.reduce_sum(ce, axis=-1)

    def kl(self, other: Distribution) -> tf.Tensor:
        assert isinstance(other, Bernoulli)
        cross = tf.nn.sigmoid_cross_entropy_with_logits(labels=self.probs, logits=other.logits)
        return tf.reduce_sum(cross, axis=-1) - self.entropy()


class DiagGaussian(Distribution):
    """A Gaussian with diagonal covariance over a flat Box action."""

    def __init__(self, mean: tf.Tensor, logstd: tf.Tensor):
        self.mean = mean
        self.logstd = logstd
        self.std = tf.exp(logstd)

    def mode(self) -> tf.Tensor:
        return self.mean

    def sample(self, seed: tf.Tensor) -> tf.Tensor:
        return self.mean + self.std * tf.random.stateless_normal(tf.shape(self.mean), seed)

    def neglogp(self, x: tf.Tensor) -> tf.Tensor:
        # Actions of a float64 Box arrive as float64; the network computes in float32.
        z = (tf.cast(x, self.mean.dtype) - self.mean) / self.std
        size = tf.cast(tf.shape(x)[-1], tf.float32)
        return (0.5 * tf.reduce_sum(tf.square(z), axis=-1) + 0.5 * LOG_2PI * size
                + tf.reduce_sum(self.logstd, axis=-1))

    def entropy(self) -> tf.Tensor:
        return tf.reduce_sum(self.logstd + 0.5 * (LOG_2PI + 1.0), axis=-1)

    def kl(self, other: Distribution) -> tf.Tensor:
        assert isinstance(other, DiagGaussian)
        ratio = (tf.square(self.std) + tf.square(self.mean - other.mean)) / (
            2.0 * tf.square(other.std))
        return tf.reduce_sum(other.logstd - self.logstd + ratio - 0.5, axis=-1)


class DistributionHead(Composite, keras.layers.Layer):
    """Maps a latent vector to the distribution of an action space.

    ``call`` returns the flat parameters (logits, or mean and log-std concatenated);
    ``distribution(params)`` turns them into a :class:`Distribution`.
    """

    def __init__(self, action_space: gym.Space, init_scale: float = 0.01,
                 log_std_init: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.action_space = action_space
        init = keras.initializers.Orthogonal(gain=init_scale)
        if isinstance(action_space, gym.spaces.Discrete):
            self.kind, size = "categorical", int(action_space.n)
        elif isinstance(action_space, gym.spaces.MultiDiscrete):
            if action_space.nvec.ndim != 1 or np.any(action_space.start != 0):
                raise RLBaseError(f"MultiDiscrete action spaces must be 1-D and start at 0, "
                                  f"got {action_space}")
            self.kind, size = "multicategorical", int(action_space.nvec.sum())
        elif isinstance(action_space, gym.spaces.MultiBinary):
            if np.ndim(action_space.n) > 0 and len(np.atleast_1d(action_space.n)) != 1:
                raise RLBaseError(f"MultiBinary action spaces must be 1-D, got {action_space}")
            self.kind, size = "bernoulli", int(np.prod(action_space.n))
        elif isinstance(action_space, gym.spaces.Box):
            if len(action_space.shape) != 1:
                raise RLBaseError(f"Box action spaces must be 1-D, got shape "
                                  f"{action_space.shape}")
            self.kind, size = "gaussian", int(action_space.shape[0])
            self.logstd = self.add_weight(
                shape=(size,), initializer=keras.initializers.Constant(float(log_std_init)),
                name="logstd")
        else:
            raise RLBaseError(f"unsupported action space {action_space}; supported: Discrete, "
                              "Box, MultiDiscrete, MultiBinary")
        self.size = size
        self.dense = Dense(size, kernel_initializer=init)

    @property
    def action_dtype(self) -> np.dtype:
        return np.dtype(self.action_space.dtype)

    @property
    def action_shape(self) -> tuple[int, ...]:
        return tuple(self.action_space.shape or ())

    def call(self, latent: tf.Tensor) -> tf.Tensor:
        out = self.dense(latent)
        if self.kind == "gaussian":
            out = tf.concat([out, tf.zeros_like(out) + self.logstd], axis=-1)
        return out

    @property
    def maskable(self) -> bool:
        """Whether action masks apply: Discrete and MultiDiscrete actions (one mask entry per
        logit) and MultiBinary ones (two per dimension: whether 0, whether 1 may be taken)."""
        return self.kind in ("categorical", "multicategorical", "bernoulli")

    @property
    def mask_size(self) -> int:
        """Entries of one row of action masks: one per logit, two per MultiBinary bit."""
        return 2 * self.size if self.kind == "bernoulli" else self.size

    def distribution(self, params: tf.Tensor, action_masks: tf.Tensor | None = None
                     ) -> Distribution:
        """The distribution of ``params``; with ``action_masks`` (``[B, size]``, Discrete,
        MultiDiscrete and MultiBinary only) the invalid actions' logits are set to
        :data:`MASKED_LOGIT` (MultiBinary: :func:`masked_binary_logits`), so sampling, the mode,
        log-probabilities and the entropy all see only valid actions."""
        dtype = tf.as_dtype(self.action_dtype)
        space = self.action_space
        if action_masks is not None:
            if not self.maskable:
                raise RLBaseError(f"action masks need a Discrete, MultiDiscrete or MultiBinary "
                                  f"action space, got {space}")
            params = masked_binary_logits(params, action_masks) if self.kind == "bernoulli" \
                else masked_logits(params, action_masks)
        if isinstance(space, gym.spaces.Discrete):
            return Categorical(params, int(space.start), dtype)
        if isinstance(space, gym.spaces.MultiDiscrete):
            return MultiCategorical(params, space.nvec, dtype)
        if self.kind == "bernoulli":
            return Bernoulli(params, dtype)
        mean, logstd = tf.split(params, 2, axis=-1)
        return DiagGaussian(mean, logstd)
