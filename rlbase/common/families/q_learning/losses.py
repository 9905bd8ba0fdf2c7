"""What the Q-learning losses share, as pure functions: the Huber loss and the one-step target."""

from __future__ import annotations

import tensorflow as tf


def huber(x: tf.Tensor, delta: float = 1.0) -> tf.Tensor:
    """Quadratic within ``delta`` of zero, linear outside (the gradient never exceeds delta):
    ``0.5 x^2`` if ``|x| < delta`` else ``delta (|x| - 0.5 delta)``."""
    ax = tf.abs(x)
    return tf.where(ax < delta, 0.5 * tf.square(x), delta * (ax - 0.5 * delta))


def td_target(rewards: tf.Tensor, dones: tf.Tensor, gamma: float, values: tf.Tensor
              ) -> tf.Tensor:
    """``r + gamma (1 - done) V(s')``: no bootstrap past an episode's end (``dones`` marks
    what must not bootstrap: terminations, and with gamma = 1 truncations too). ``values``
    may be a value per transition or a row per transition (QR-DQN's quantiles) when
    ``rewards`` and ``dones`` have a trailing axis of 1."""
    return rewards + gamma * (1.0 - dones) * values
