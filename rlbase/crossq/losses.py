"""CrossQ's mathematics as pure TensorFlow functions, formula in each docstring (the squashed
Gaussian and the temperature's loss are SAC's: rlbase.common.families.squashed_gaussian).

Notation: ``N`` critics ``Q_i``; ``alpha`` the entropy coefficient; ``done`` 1 where a target
must not bootstrap (a termination, or a truncation at gamma 1:
rlbase.common.buffers.transitions.target_dones).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf


def joint_q_values(critics: Sequence[Any], obs: Any, actions: tf.Tensor, next_obs: Any,
                   next_actions: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Every critic evaluated once, in training mode, on the ``2B`` rows ``[(s, a); (s',
    a')]``, so that both halves are normalized with the same batch statistics (and the moving
    statistics take one step, on the mixture). Returns ``(Q(s, a), Q(s', a'))``, each ``[B,
    N]``, the second without gradient."""
    both_obs = tf.nest.map_structure(lambda x, y: tf.concat([x, y], axis=0), obs, next_obs)
    both_actions = tf.concat([actions, next_actions], axis=0)
    q = tf.stack([c(both_obs, both_actions, training=True) for c in critics], axis=1)
    current, following = tf.split(q, 2, axis=0)
    return current, tf.stop_gradient(following)


def soft_q_targets(rewards: tf.Tensor, dones: tf.Tensor, next_q: tf.Tensor,
                   next_log_prob: tf.Tensor, alpha: tf.Tensor, gamma: float) -> tf.Tensor:
    """``y = r + gamma (1 - done) (min_i Q_i(s', a') - alpha log pi(a'|s'))``, ``a' ~
    pi(.|s')``; ``next_q``: ``[B, N]``. No gradient flows through it. Shape ``[B]``."""
    soft = tf.reduce_min(next_q, axis=1) - alpha * next_log_prob
    return tf.stop_gradient(rewards + gamma * (1.0 - dones) * soft)


def critic_loss(q: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
    """``1/2 sum_i mean_b (Q_i(s_b, a_b) - y_b)^2`` (sb3-contrib's: half the sum of the
    critics' mean squared errors). ``q``: ``[B, N]``; ``targets``: ``[B]``, constants."""
    error = q - tf.stop_gradient(targets)[:, None]
    return 0.5 * tf.reduce_sum(tf.reduce_mean(tf.square(error), axis=0))


def actor_loss(log_prob: tf.Tensor, q_pi: tf.Tensor, alpha: tf.Tensor) -> tf.Tensor:
    """``mean_b(alpha log pi(a_b|s_b) - min_i Q_i(s_b, a_b))`` with ``a ~ pi(.|s)``
    reparameterized (``alpha`` a constant). ``q_pi``: ``[B, N]``."""
    return tf.reduce_mean(tf.stop_gradient(alpha) * log_prob - tf.reduce_min(q_pi, axis=1))
