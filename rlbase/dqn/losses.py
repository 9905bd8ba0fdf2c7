"""DQN's own part of its loss, as a pure function: the (double) Q-learning value of the next
state (the Huber loss and the one-step target are the family's:
rlbase.common.families.q_learning.losses)."""

from __future__ import annotations

import tensorflow as tf


def next_values(next_q_target: tf.Tensor, next_q_online: tf.Tensor | None) -> tf.Tensor:
    """The value of each next state: ``max_a Q_target(s', a)``, or with double Q (the online
    network's Q-values given) ``Q_target(s', argmax_a Q_online(s', a))``."""
    if next_q_online is None:
        return tf.reduce_max(next_q_target, axis=-1)
    best = tf.argmax(next_q_online, axis=-1, output_type=tf.int32)
    return tf.gather(next_q_target, best, batch_dims=1)
