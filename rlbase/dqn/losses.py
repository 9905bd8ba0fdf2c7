"""DQN's loss as pure functions: the (double) Q-learning target and the Huber loss."""

from __future__ import annotations

import tensorflow as tf


def huber(x: tf.Tensor, delta: float = 1.0) -> tf.Tensor:
    """Quadratic within ``delta`` of zero, linear outside (the gradient never exceeds delta):
    ``0.5 x^2`` if ``|x| < delta`` else ``delta (|x| - 0.5 delta)``."""
    ax = tf.abs(x)
    return tf.where(ax < delta, 0.5 * tf.square(x), delta * (ax - 0.5 * delta))


def next_values(next_q_target: tf.Tensor, next_q_online: tf.Tensor | None) -> tf.Tensor:
    """The value of each next state: ``max_a Q_target(s', a)``, or with double Q (the online
    network's Q-values given) ``Q_target(s', argmax_a Q_online(s', a))``."""
    if next_q_online is None:
        return tf.reduce_max(next_q_target, axis=-1)
    best = tf.argmax(next_q_online, axis=-1, output_type=tf.int32)
    return tf.gather(next_q_target, best, batch_dims=1)


def td_target(rewards: tf.Tensor, dones: tf.Tensor, gamma: float, values: tf.Tensor
              ) -> tf.Tensor:
    """``r + gamma (1 - done) V(s')``: no bootstrap past an episode's end (``dones`` marks
    what must not bootstrap: terminations, and with gamma = 1 truncations too)."""
    return rewards + gamma * (1.0 - dones) * values
