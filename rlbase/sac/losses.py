"""SAC's mathematics as pure TensorFlow functions: each takes tensors and returns tensors, with
its formula in the docstring, so the tests check it on hand-computed values and the model
(rlbase/sac/graph.py) only wires networks into it. The squashed Gaussian and the temperature's
loss, which TQC shares, are rlbase.common.families.squashed_gaussian's (named here too).

Notation: ``u`` the pre-tanh Gaussian sample, ``a = tanh(u)`` the action in [-1, 1], ``alpha``
the entropy coefficient (temperature), ``d`` 1 where a target must not bootstrap
(rlbase.common.buffers.transitions.target_dones).
"""

from __future__ import annotations

import tensorflow as tf

from rlbase.common.families.squashed_gaussian import (
    LOG_STD_MAX,
    LOG_STD_MIN,
    clip_log_std,
    gaussian_log_prob,
    squashed_sample,
    tanh_log_det,
    temperature_loss,
)

__all__ = ["LOG_STD_MAX", "LOG_STD_MIN", "actor_loss", "clip_log_std", "critic_loss",
           "critic_target", "gaussian_log_prob", "squashed_sample", "tanh_log_det",
           "temperature_loss"]


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
