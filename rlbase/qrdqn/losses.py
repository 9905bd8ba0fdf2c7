"""QR-DQN's loss as pure functions (Dabney et al., 2018, "Distributional Reinforcement
Learning with Quantile Regression"): the quantile levels, the target quantiles and the
quantile Huber loss."""

from __future__ import annotations

import tensorflow as tf

from rlbase.common.families.q_learning.losses import huber, td_target


def quantile_midpoints(n: int) -> tf.Tensor:
    """``tau_hat_i = (2 i + 1) / (2 n)`` for ``i = 0 .. n-1``: the midpoints of n equal
    probability intervals, the levels whose quantiles minimize the 1-Wasserstein distance to
    the return distribution (the paper's Lemma 2); output i estimates quantile tau_hat_i."""
    return (tf.range(n, dtype=tf.float32) + 0.5) / float(n)


def target_quantiles(rewards: tf.Tensor, dones: tf.Tensor, gamma: float,
                     next_quantiles: tf.Tensor) -> tf.Tensor:
    """``T theta_j = r + gamma (1 - done) theta_j(s', a*)`` with
    ``a* = argmax_a (1/N) sum_j theta_j(s', a)``, the greedy action of the mean.

    rewards, dones: ``[...]``; ``dones`` marks what must not bootstrap (terminations, and
        with gamma = 1 truncations: rlbase.common.buffers.transitions.target_dones).
    next_quantiles: ``[..., num_actions, N]``, the target network's on s'.
    Returns ``[..., N]``.
    """
    best = tf.argmax(tf.reduce_mean(next_quantiles, axis=-1), axis=-1, output_type=tf.int32)
    chosen = tf.gather(next_quantiles, best, batch_dims=len(best.shape))
    return td_target(rewards[..., None], dones[..., None], gamma, chosen)


def quantile_huber_loss(quantiles: tf.Tensor, targets: tf.Tensor, kappa: float = 1.0
                        ) -> tf.Tensor:
    """Each transition's quantile Huber loss
    ``sum_i (1/N') sum_j rho_kappa(tau_hat_i, u_ij)`` with ``u_ij = T theta_j - theta_i`` and
    ``rho_kappa(tau, u) = |tau - 1{u < 0}| L_kappa(u) / kappa``, where ``L_kappa`` is the
    Huber loss with threshold kappa: an under-estimate (u > 0) of quantile tau weighs tau, an
    over-estimate 1 - tau (the paper's eq. 10; sb3-contrib sums over i and averages over j
    alike).

    quantiles: ``[B, N]``, theta_i(s, a) of the actions taken.
    targets: ``[B, N']``, T theta_j (held fixed: no gradient flows into them).
    Returns ``[B]``.
    """
    u = targets[:, None, :] - quantiles[:, :, None]  # [B, N, N']
    tau = quantile_midpoints(quantiles.shape[-1])[:, None]
    weight = tf.abs(tau - tf.cast(u < 0.0, u.dtype))
    return tf.reduce_sum(tf.reduce_mean(weight * huber(u, kappa) / kappa, axis=-1), axis=-1)
