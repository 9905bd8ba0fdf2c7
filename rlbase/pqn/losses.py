"""PQN's target and loss (pure functions of tensors; formulas in the docstrings)."""

from __future__ import annotations

import tensorflow as tf


def q_lambda_returns(rewards: tf.Tensor, dones: tf.Tensor, next_max_q: tf.Tensor,
                     gamma: float, lam: float) -> tf.Tensor:
    """Q(lambda) returns of a rollout, all ``[num_envs, nsteps]``, computed backwards::

        G_t = r_t + gamma (1 - d_t) (lam G_{t+1} + (1 - lam) M_{t+1}),   G_T = M_T

    where ``M_{t+1} = max_a Q(s_{t+1}, a)`` (``next_max_q[:, t]``: the next row's, and after
    the last step the observation that follows the rollout) and ``d_t`` = 1 where the episode
    ended at step t. A time-limit truncation arrives as ``d_t = 1`` with ``gamma * M(final
    observation)`` already added to ``r_t`` by the rollout, so it bootstraps one step; a
    termination does not bootstrap. lam = 0: one-step targets ``r + gamma max Q(s')``;
    lam = 1: discounted returns bootstrapped once, at the rollout's end.
    """
    keep = gamma * (1.0 - tf.transpose(dones))                 # [nsteps, num_envs]
    r, m = tf.transpose(rewards), tf.transpose(next_max_q)

    def back(following: tf.Tensor, step: tuple[tf.Tensor, tf.Tensor, tf.Tensor]) -> tf.Tensor:
        r_t, keep_t, m_t = step
        return r_t + keep_t * (lam * following + (1.0 - lam) * m_t)

    returns = tf.scan(back, (r, keep, m), initializer=m[-1], reverse=True)
    return tf.transpose(returns)


def q_loss(q_taken: tf.Tensor, returns: tf.Tensor) -> tf.Tensor:
    """The mean squared error ``mean((G - Q(s, a))^2)`` of the taken actions' Q-values
    against the (fixed) returns."""
    return tf.reduce_mean(tf.square(tf.stop_gradient(returns) - q_taken))
