"""SAC's mathematics as pure TensorFlow functions: each takes tensors and returns tensors, with
its formula in the docstring, so the tests check it on hand-computed values and the training
graph (rlbase/sac/graph.py) only wires networks into it.

Notation: ``u`` the pre-tanh Gaussian sample, ``a = tanh(u)`` the action in [-1, 1], ``alpha``
the entropy coefficient (temperature), ``d`` 1 where a target must not bootstrap
(rlbase.common.buffers.transitions.target_dones).
"""

from __future__ import annotations

import math

import tensorflow as tf

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


def critic_target(rewards: tf.Tensor, dones: tf.Tensor, next_q1: tf.Tensor, next_q2: tf.Tensor,
                  next_log_prob: tf.Tensor, alpha: tf.Tensor, gamma: float) -> tf.Tensor:
    """The soft Bellman target ``y = r + gamma (1 - d) (min_i Q'_i(s', a') - alpha log
    pi(a'|s'))`` with ``a' ~ pi(.|s')`` and ``Q'_i`` the target critics. No gradient flows
    through it. Shape ``[B]``."""
    soft_value = tf.minimum(next_q1, next_q2) - alpha * next_log_prob
    return tf.stop_gradient(rewards + gamma * (1.0 - dones) * soft_value)


def critic_loss(q1: tf.Tensor, q2: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
    """``0.5 (mean (Q_1(s, a) - y)^2 + mean (Q_2(s, a) - y)^2)`` (SB3's scale)."""
    return 0.5 * (tf.reduce_mean(tf.square(q1 - targets)) +
                  tf.reduce_mean(tf.square(q2 - targets)))


def actor_loss(log_prob: tf.Tensor, q1: tf.Tensor, q2: tf.Tensor, alpha: tf.Tensor
               ) -> tf.Tensor:
    """``mean(alpha log pi(a|s) - min_i Q_i(s, a))`` with ``a ~ pi(.|s)`` reparameterized
    (the gradient reaches the actor through ``a`` and ``log pi``; ``alpha`` is a constant
    here)."""
    return tf.reduce_mean(tf.stop_gradient(alpha) * log_prob - tf.minimum(q1, q2))


def temperature_loss(log_alpha: tf.Tensor, log_prob: tf.Tensor, target_entropy: float
                     ) -> tf.Tensor:
    """``-mean(log_alpha (log pi(a|s) + target_entropy))`` (SB3 optimizes ``log alpha``, not
    ``alpha``); ``log pi`` is a constant here. Its gradient in ``log_alpha`` is
    ``-mean(log pi + target_entropy)``: alpha rises while the entropy ``-log pi`` is below
    the target."""
    return -tf.reduce_mean(log_alpha * tf.stop_gradient(log_prob + target_entropy))
