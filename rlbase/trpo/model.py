"""TRPO's model: the shared trust-region update on an actor-critic policy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from rlbase.common.errors import RLBaseError
from rlbase.common.models import build_network, is_recurrent
from rlbase.common.mpi_util import get_comm
from rlbase.common.policies import POLICY_KWARGS, has_images, policy_from_kwargs
from rlbase.common.tf_util import configure_threads
from rlbase.common.trust_region_model import TrustRegionModel
from rlbase.trpo.config import TRPOConfig


class Model(TrustRegionModel):
    """The TRPO learner: one compiled call per rollout (see
    :class:`~rlbase.common.trust_region_model.TrustRegionModel`)."""

    algorithm = "trpo"

    config: TRPOConfig


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: TRPOConfig, *,
                total_timesteps: int = 0) -> Model:
    """TRPO's model for these spaces and ``num_envs`` envs (learn() and rlbase.TRPO call this).

    network_kwargs: the network builder's arguments; without ``value_network`` the value gets
        its own torso (``'copy'``, as Baselines' trpo_mpi built it), so the value fit never
        moves the policy. Under MPI the model averages over the workers.
    """
    del total_timesteps  # no XLA choice to make
    configure_threads(small_model=not has_images(observation_space))
    kwargs = dict(network_kwargs)
    torso_kwargs = {k: v for k, v in kwargs.items() if k not in POLICY_KWARGS}
    if is_recurrent(build_network(network, **torso_kwargs)):
        name = network if isinstance(network, str) else getattr(network, "__name__", network)
        raise RLBaseError(f"{config.algorithm} needs a feed-forward network, not the recurrent "
                          f"{name!r}; use mlp or cnn")
    kwargs.setdefault("value_network", "copy")
    policy = policy_from_kwargs(observation_space, action_space, network, kwargs)
    return Model(policy, num_envs, config, kwargs, comm=get_comm())


__all__: Sequence[str] = ("Model", "build_model")
