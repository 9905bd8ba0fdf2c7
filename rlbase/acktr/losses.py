"""ACKTR's losses: pure functions of the policy's outputs."""

from __future__ import annotations

import tensorflow as tf


def actor_critic_losses(neglogp: tf.Tensor, entropy: tf.Tensor, values: tf.Tensor,
                        returns: tf.Tensor, ent_coef: float, vf_coef: float
                        ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
    """``L = mean(A * -log pi(a|s)) - ent_coef * H + vf_coef * mean((V - R)^2)`` with
    ``A = R - V`` held constant; returns (total, policy, value, entropy)."""
    advantages = tf.stop_gradient(returns - values)
    policy_loss = tf.reduce_mean(advantages * neglogp)
    value_loss = tf.reduce_mean(tf.square(values - returns))
    entropy = tf.reduce_mean(entropy)
    return policy_loss - ent_coef * entropy + vf_coef * value_loss, policy_loss, value_loss, \
        entropy


def sampled_fisher_loss(neglogp_sampled: tf.Tensor, values: tf.Tensor, noise: tf.Tensor,
                        vf_fisher_coef: float) -> tf.Tensor:
    """The log-likelihood whose gradients' second moments are the Fisher's factors:
    ``mean(log pi(a~|s)) - vf_fisher_coef * mean((V - stop(V + eps))^2)``, with ``a~`` the
    actions the policy sampled in the rollout and ``eps ~ N(0, 1)`` (the value as a unit
    Gaussian's mean)."""
    target = tf.stop_gradient(values + noise)
    value_term = tf.reduce_mean(tf.square(values - target))
    return -tf.reduce_mean(neglogp_sampled) - vf_fisher_coef * value_term
