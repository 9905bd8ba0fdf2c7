"""TQC's mathematics as pure TensorFlow functions, formula in each docstring (the squashed
Gaussian and the temperature's loss are SAC's: rlbase.common.families.squashed_gaussian).

Notation: ``N`` critics each predict ``M`` quantiles (atoms) ``Z_n(s, a)_m`` of the return
at the quantile fractions ``tau_m = (m + 1/2) / M``; ``d`` atoms per critic are dropped from
the target, which keeps ``K = N M - d N`` of the pooled atoms; ``alpha`` the entropy
coefficient; ``done`` 1 where a target must not bootstrap (a termination, or a truncation at
gamma 1: rlbase.common.buffers.transitions.target_dones).
"""

from __future__ import annotations

import tensorflow as tf


def truncated_targets(rewards: tf.Tensor, dones: tf.Tensor, next_atoms: tf.Tensor,
                      next_log_prob: tf.Tensor, alpha: tf.Tensor, gamma: float, keep: int
                      ) -> tf.Tensor:
    """The target atoms ``y_k = r + gamma (1 - done) (z_(k) - alpha log pi(a'|s'))`` for
    ``k = 1..K``, ``z_(1) <= ... <= z_(NM)`` the target critics' ``N M`` atoms at ``(s',
    a' ~ pi(.|s'))`` pooled and sorted, the ``NM - K`` largest left out. ``next_atoms``:
    ``[B, N M]`` (any order). No gradient flows through it. Shape ``[B, K]``."""
    lowest = tf.sort(next_atoms, axis=-1)[:, :keep]
    soft = lowest - alpha * next_log_prob[:, None]
    return tf.stop_gradient(rewards[:, None] + gamma * (1.0 - dones[:, None]) * soft)


def quantile_huber_loss(atoms: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
    """The quantile Huber loss of every critic's atoms against every target atom, averaged
    (sb3-contrib's TQC, which does not sum over the quantiles as the paper does: the paper's
    value is this one times M):

    ``mean_{b, n, m, k} |tau_m - 1{u < 0}| H(u)`` with ``u = y_{b,k} - Z_n(s_b, a_b)_m``
    and ``H(u) = u^2 / 2`` for ``|u| <= 1``, ``|u| - 1/2`` beyond (the Huber loss at
    kappa 1). ``atoms``: ``[B, N, M]``; ``targets``: ``[B, K]``, taken as constants."""
    n_quantiles = atoms.shape[-1]
    taus = (tf.range(n_quantiles, dtype=atoms.dtype) + 0.5) / n_quantiles
    u = tf.stop_gradient(targets)[:, None, None, :] - atoms[:, :, :, None]
    abs_u = tf.abs(u)
    huber = tf.where(abs_u > 1.0, abs_u - 0.5, 0.5 * tf.square(u))
    below = tf.cast(u < 0.0, atoms.dtype)
    return tf.reduce_mean(tf.abs(taus[:, None] - tf.stop_gradient(below)) * huber)


def actor_loss(log_prob: tf.Tensor, atoms: tf.Tensor, alpha: tf.Tensor) -> tf.Tensor:
    """``mean_b(alpha log pi(a_b|s_b) - mean_{n, m} Z_n(s_b, a_b)_m)`` with ``a ~ pi(.|s)``
    reparameterized: the policy climbs the mean of every critic's every quantile, none
    truncated (``alpha`` is a constant here). ``atoms``: ``[B, N, M]``."""
    return tf.reduce_mean(tf.stop_gradient(alpha) * log_prob -
                          tf.reduce_mean(atoms, axis=[1, 2]))
