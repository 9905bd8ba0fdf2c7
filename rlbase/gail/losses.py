"""GAIL's discriminator loss and imitation reward: pure functions of the classifier's logits.

D(s, a) = sigmoid(logit) is the probability that (s, a) came from the expert.
"""

from __future__ import annotations

import tensorflow as tf


def bernoulli_entropy(logits: tf.Tensor) -> tf.Tensor:
    """Entropy of Bernoulli(sigmoid(l)), elementwise: H = (1 - sigmoid(l)) * l + softplus(-l)
    (equal to -p log p - (1 - p) log(1 - p), without taking the log of a rounded p)."""
    return (1.0 - tf.sigmoid(logits)) * logits + tf.nn.softplus(-logits)


def discriminator_loss(policy_logits: tf.Tensor, expert_logits: tf.Tensor,
                       entropy_coef: float | tf.Tensor) -> tuple[tf.Tensor, ...]:
    """The classifier's loss, expert pairs labelled 1 and the policy's 0, with an entropy
    bonus over both batches:

        L = -mean log(1 - D(policy)) - mean log D(expert) - c * mean H(D(both))

    Returns (L, policy term, expert term, mean entropy, accuracy on policy pairs, accuracy on
    expert pairs)."""
    policy_term = tf.reduce_mean(tf.nn.softplus(policy_logits))    # -log(1 - sigmoid(l))
    expert_term = tf.reduce_mean(tf.nn.softplus(-expert_logits))   # -log sigmoid(l)
    entropy = tf.reduce_mean(bernoulli_entropy(tf.concat([policy_logits, expert_logits], 0)))
    loss = policy_term + expert_term - entropy_coef * entropy
    policy_accuracy = tf.reduce_mean(tf.cast(policy_logits < 0, tf.float32))
    expert_accuracy = tf.reduce_mean(tf.cast(expert_logits > 0, tf.float32))
    return loss, policy_term, expert_term, entropy, policy_accuracy, expert_accuracy


def imitation_reward(logits: tf.Tensor) -> tf.Tensor:
    """The policy's reward r(s, a) = -log(1 - D(s, a)) = softplus(logit): positive, larger the
    more expert-like the pair looks (exact where 1 - D rounds to 0 in float32)."""
    return tf.nn.softplus(logits)
