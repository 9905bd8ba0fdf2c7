"""TRPO's model: the shared trust-region update on an actor-critic policy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from rlbase.common.families.trust_region.model import TrustRegionModel, trust_region_policy
from rlbase.common.mpi_util import get_comm
from rlbase.trpo.config import TRPOConfig


class Model(TrustRegionModel):
    """The TRPO learner: one compiled call per rollout (see
    :class:`~rlbase.common.families.trust_region.model.TrustRegionModel`)."""

    algorithm = "trpo"

    config: TRPOConfig


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: TRPOConfig, *,
                total_timesteps: int = 0) -> Model:
    """TRPO's model for these spaces and ``num_envs`` envs (learn() and rlbase.TRPO call this);
    the policy as :func:`~rlbase.common.families.trust_region.model.trust_region_policy`
    builds it."""
    del total_timesteps  # no XLA choice to make
    policy, kwargs = trust_region_policy(observation_space, action_space, network,
                                         network_kwargs, config.algorithm)
    return Model(policy, num_envs, config, kwargs, comm=get_comm())

__all__: Sequence[str] = ("Model", "build_model")
