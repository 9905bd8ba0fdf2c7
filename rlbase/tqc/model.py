"""TQC's model: SAC's actor, temperature, optimizers, replay buffer, acting and fused training
call (rlbase.common.families.soft_actor_critic), with ``n_critics`` quantile critics and their
soft-updated targets; made by :func:`build_model` (what learn() and rlbase.TQC call).

A gradient step, in sb3-contrib's order: the temperature; the critics on the truncated target
atoms (the target critics' atoms at s' pooled, sorted, the top ``d N`` dropped); the actor
against the mean of the updated critics' atoms; the targets.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import tensorflow as tf

from rlbase.common.families.soft_actor_critic import SoftActorCriticAgent, checked_build_inputs
from rlbase.tqc import losses
from rlbase.tqc.config import TQCConfig
from rlbase.tqc.networks import QuantileCritic

ALGORITHM = "tqc"


class Model(SoftActorCriticAgent):
    """A TQC agent: a squashed-Gaussian actor, ``n_critics`` quantile critics of
    ``n_quantiles`` atoms with soft-updated targets, and a learned (or fixed) entropy
    coefficient.

    observation_space: a Box, or a Dict/Tuple space (SB3's MultiInputPolicy).
    action_space: a 1-D Box with finite bounds.
    num_envs: the envs it trains on.
    network / network_kwargs: the registry network of the actor's and each critic's torso.
    config: TQC's parameters (n_quantiles and n_critics shape the variables).
    """

    algorithm = ALGORITHM
    config: TQCConfig

    def __init__(self, observation_space: gym.Space, action_space: gym.spaces.Box,
                 num_envs: int, network: Any, network_kwargs: dict[str, Any], config: TQCConfig):
        self.n_quantiles, self.n_critics = config.n_quantiles, config.n_critics
        #: the pooled target atoms kept: N M - d N
        self.kept_atoms = (config.n_quantiles - config.top_quantiles_to_drop_per_net) * \
            config.n_critics
        super().__init__(observation_space, action_space, num_envs, network, network_kwargs,
                         config)

    def build_critics(self) -> tuple[list[QuantileCritic], list[QuantileCritic]]:
        """``n_critics`` quantile critics and their targets."""
        def critic() -> QuantileCritic:
            return QuantileCritic(self.observation_space, self.num_actions, self.torso(),
                                  self.n_quantiles)

        critics = [critic() for _ in range(self.n_critics)]
        return critics, [critic() for _ in range(self.n_critics)]

    def atoms(self, critics: list[QuantileCritic], obs: Any, actions: tf.Tensor) -> tf.Tensor:
        """Every critic's atoms at (s, a): ``[B, N, M]``."""
        return tf.stack([c(obs, actions) for c in critics], axis=1)

    def critic_targets(self, rewards: tf.Tensor, next_obs: Any, dones: tf.Tensor,
                       noise: tf.Tensor, alpha: tf.Tensor) -> tf.Tensor:
        """The truncated target atoms ``[B, K]`` (losses.truncated_targets), ``a'`` the
        policy's action at s' drawn with ``noise``."""
        next_actions, next_log_prob = self.policy(next_obs, noise)
        pooled = tf.concat([t(next_obs, next_actions) for t in self.target_critics], axis=1)
        return losses.truncated_targets(rewards, dones, pooled, next_log_prob, alpha,
                                        self.gamma, self.kept_atoms)

    def critic_loss(self, obs: Any, actions: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
        return losses.quantile_huber_loss(self.atoms(self.critics, obs, actions), targets)

    def actor_loss(self, obs: Any, actions: tf.Tensor, log_prob: tf.Tensor, alpha: tf.Tensor
                   ) -> tf.Tensor:
        return losses.actor_loss(log_prob, self.atoms(self.critics, obs, actions), alpha)


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: TQCConfig, *,
                total_timesteps: int = 0) -> Model:
    """TQC's model for these spaces and ``num_envs`` envs (learn() and rlbase.TQC call this).

    network_kwargs: the registry network's arguments; 'mlp' here defaults to sb3-contrib's
        TQC nets, two ReLU layers of 256 units.
    config: TQC's parameters.
    """
    box, kwargs = checked_build_inputs(observation_space, action_space, network, network_kwargs,
                                       ALGORITHM, num_hidden=256)
    return Model(observation_space, box, num_envs, network, kwargs, config)
