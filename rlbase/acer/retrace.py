"""ACER's math on plain tensors: Retrace targets and the efficient trust-region projection
(Wang et al. 2016, "Sample Efficient Actor-Critic with Experience Replay")."""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

EPS = 1e-6  # the reference's epsilon in log(f + eps), rho = f / (mu + eps), ...


def q_retrace(rewards: tf.Tensor, dones: tf.Tensor, q_i: tf.Tensor, values: tf.Tensor,
              rho_bar: tf.Tensor, gamma: float) -> tf.Tensor:
    """Retrace targets of ``[num_envs, nsteps]`` sequences.

    values: ``[num_envs, nsteps + 1]``, the last column bootstraps the sequence. Going backwards,
    ``Qret_t = r_t + gamma (1 - d_t) X_{t+1}`` with ``X_t = rho_bar_t (Qret_t - Q_t) + V_t``:
    at an episode end the target is the reward alone (the training call adds
    ``gamma V(final observation)`` to a truncated step's reward before this).
    """
    def backward(acc: tuple[tf.Tensor, tf.Tensor], elems: tuple[tf.Tensor, ...]
                 ) -> tuple[tf.Tensor, tf.Tensor]:
        reward, done, q, v, rho = elems
        qret = reward + gamma * (1.0 - done) * acc[1]
        return qret, rho * (qret - q) + v

    elems = tuple(tf.transpose(x) for x in (rewards, dones, q_i, values[:, :-1], rho_bar))
    last = values[:, -1]
    qret_t, _ = tf.scan(backward, elems, initializer=(tf.zeros_like(last), last), reverse=True)
    return tf.transpose(qret_t)


def trust_region_adjust(g: tf.Tensor, k: tf.Tensor, delta: float
                        ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Project each row of the gradient ``g`` (w.r.t. the policy's probabilities) so that the
    linearized KL to the average policy, ``k . z`` with ``k`` its gradient, stays <= delta:
    ``z = g - max(0, (k.g - delta) / |k|^2) k``. Returns (z, k.g, the adjustment)."""
    k_dot_g = tf.reduce_sum(k * g, axis=-1)
    adj = tf.maximum(0.0, (k_dot_g - delta) / (tf.reduce_sum(tf.square(k), axis=-1) + EPS))
    return g - adj[:, None] * k, k_dot_g, adj


def avg_norm(t: tf.Tensor) -> tf.Tensor:
    """Mean over rows of each row's L2 norm."""
    return tf.reduce_mean(tf.sqrt(tf.reduce_sum(tf.square(t), axis=-1)))


def add_grads(a: Sequence[tf.Tensor | None], b: Sequence[tf.Tensor | None]
              ) -> list[tf.Tensor | None]:
    """Elementwise sum of two gradient lists where either may be None (no path)."""
    return [x if y is None else y if x is None else x + y for x, y in zip(a, b)]
