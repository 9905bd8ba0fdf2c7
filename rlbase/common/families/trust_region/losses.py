"""The trust-region policy objective's terms: pure functions of the policy's outputs (TRPO's,
and GAIL's through TRPO's update)."""

from __future__ import annotations

import tensorflow as tf

from rlbase.common.networks.distributions import Distribution


def surrogate_gain(neglogp: tf.Tensor, old_neglogp: tf.Tensor,
                   advantages: tf.Tensor) -> tf.Tensor:
    """The importance-sampled surrogate ``mean(pi(a|s) / pi_old(a|s) * A)`` (to maximize),
    with the ratio computed as ``exp(old_neglogp - neglogp)``."""
    return tf.reduce_mean(tf.exp(old_neglogp - neglogp) * advantages)


def mean_kl(old: Distribution, new: Distribution) -> tf.Tensor:
    """``mean(KL(pi_old(.|s) || pi(.|s)))`` over the batch's states (the trust region's
    measure; its Hessian at pi = pi_old is the Fisher information)."""
    return tf.reduce_mean(old.kl(new))


def mean_entropy(pd: Distribution) -> tf.Tensor:
    """``mean(H(pi(.|s)))`` over the batch's states."""
    return tf.reduce_mean(pd.entropy())


def policy_gain(neglogp: tf.Tensor, old_neglogp: tf.Tensor, advantages: tf.Tensor,
                pd: Distribution, ent_coef: float) -> tf.Tensor:
    """TRPO's objective (Baselines' ``optimgain``): ``surrogate + ent_coef * mean(H)``."""
    return surrogate_gain(neglogp, old_neglogp, advantages) + ent_coef * mean_entropy(pd)


def value_loss(values: tf.Tensor, returns: tf.Tensor) -> tf.Tensor:
    """The value fit's loss ``mean((V(s) - R)^2)`` against the GAE(lambda) returns."""
    return tf.reduce_mean(tf.square(values - returns))
