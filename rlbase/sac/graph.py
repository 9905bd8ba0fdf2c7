"""SAC's part of the training graph: the soft Bellman targets of the twin critics, their loss,
and the actor's loss, wired into the gradient step and the fused training call of
:class:`rlbase.common.families.soft_actor_critic.SoftActorCriticAgent` (shared with TQC)."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from rlbase.common.families.soft_actor_critic import SoftActorCriticAgent
from rlbase.sac import losses

# Means over the call's gradient steps (SB3's train/ keys).
STAT_NAMES = SoftActorCriticAgent.stat_names


class SACGraph(SoftActorCriticAgent):
    """The graph code of :class:`~rlbase.sac.model.Model` (SAC has no target actor)."""

    def critic_targets(self, rewards: tf.Tensor, next_obs: Any, dones: tf.Tensor,
                       noise: tf.Tensor, alpha: tf.Tensor) -> tf.Tensor:
        """``r + gamma (1 - d) (min_i Q'_i(s', a') - alpha log pi(a'|s'))``, ``a'`` the
        policy's action at s' drawn with ``noise``."""
        next_actions, next_log_prob = self.policy(next_obs, noise)
        q1, q2 = (t(next_obs, next_actions) for t in self.target_critics)
        return losses.critic_target(rewards, dones, q1, q2, next_log_prob, alpha, self.gamma)

    def critic_loss(self, obs: Any, actions: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
        q1, q2 = (c(obs, actions) for c in self.critics)
        return losses.critic_loss(q1, q2, targets)

    def actor_loss(self, obs: Any, actions: tf.Tensor, log_prob: tf.Tensor, alpha: tf.Tensor
                   ) -> tf.Tensor:
        q1_pi, q2_pi = (c(obs, actions) for c in self.critics)
        return losses.actor_loss(log_prob, q1_pi, q2_pi, alpha)
