"""SAC's model: the actor, the twin critics and their targets, the temperature, three
optimizers, the replay buffer and the random generators, all made by :func:`build_model` (what
learn() and rlbase.SAC call). What it shares with TQC (the actor, the temperature, acting,
the fused training call, files) is
:class:`rlbase.common.families.soft_actor_critic.SoftActorCriticAgent`.

Actions live in [-1, 1] inside the model (the tanh range, the replay buffer) and are mapped
onto the env's [low, high] only when they leave it.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from rlbase.common.families.continuous import (
    Critic,
)
from rlbase.common.families.soft_actor_critic import checked_build_inputs
from rlbase.sac.config import SACConfig, parse_ent_coef
from rlbase.sac.graph import SACGraph
from rlbase.sac.networks import q_network

__all__ = ["ALGORITHM", "Model", "build_model", "parse_ent_coef"]

ALGORITHM = "sac"


class Model(SACGraph):
    """A SAC agent: a squashed-Gaussian actor, twin critics with soft-updated targets and a
    learned (or fixed) entropy coefficient.

    observation_space: a Box, or a Dict/Tuple space (SB3's MultiInputPolicy).
    action_space: a 1-D Box with finite bounds.
    num_envs: the envs it trains on.
    network / network_kwargs: the registry network of the actor's and each critic's torso.
    config: SAC's parameters (none shapes the variables: the temperature and its optimizer
        exist whether ent_coef is learned or fixed).
    """

    algorithm = ALGORITHM
    config: SACConfig

    def build_critics(self) -> tuple[list[Critic], list[Critic]]:
        """Twin Q-networks and their targets."""
        space, n = self.observation_space, self.num_actions
        critics = [q_network(space, n, self.torso()) for _ in range(2)]
        return critics, [q_network(space, n, self.torso()) for _ in range(2)]


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: SACConfig, *,
                total_timesteps: int = 0) -> Model:
    """SAC's model for these spaces and ``num_envs`` envs (learn() and rlbase.SAC call this).

    network_kwargs: the registry network's arguments; 'mlp' here defaults to SB3's SAC nets,
        two ReLU layers of 256 units.
    config: SAC's parameters.
    """
    # (TF's thread pools: figures in rlbase/docs/algorithms/sac.md)
    box, kwargs = checked_build_inputs(observation_space, action_space, network, network_kwargs,
                                       ALGORITHM, num_hidden=256)
    return Model(observation_space, box, num_envs, network, kwargs, config)
