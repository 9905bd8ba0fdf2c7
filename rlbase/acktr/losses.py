"""ACKTR's Fisher loss: a pure function of the policy's outputs (its actor-critic loss is
A2C's, rlbase.common.families.actor_critic.actor_critic_losses)."""

from __future__ import annotations

import tensorflow as tf


def sampled_fisher_loss(neglogp_sampled: tf.Tensor, values: tf.Tensor, noise: tf.Tensor,
                        vf_fisher_coef: float) -> tf.Tensor:
    """The log-likelihood whose gradients' second moments are the Fisher's factors:
    ``mean(log pi(a~|s)) - vf_fisher_coef * mean((V - stop(V + eps))^2)``, with ``a~`` the
    actions the policy sampled in the rollout and ``eps ~ N(0, 1)`` (the value as a unit
    Gaussian's mean)."""
    target = tf.stop_gradient(values + noise)
    value_term = tf.reduce_mean(tf.square(values - target))
    return -tf.reduce_mean(neglogp_sampled) - vf_fisher_coef * value_term
