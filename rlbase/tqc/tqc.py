"""Truncated Quantile Critics (Kuznetsov et al. 2020, "Controlling Overestimation Bias with
Truncated Mixture of Continuous Distributional Quantile Critics"), as sb3-contrib runs it: SAC
whose critics predict quantiles of the return and whose targets drop the largest atoms."""

from __future__ import annotations

from typing import Any, Callable

from rlbase.common.families.soft_actor_critic import LEARN_NOTES
from rlbase.common.families.soft_actor_critic import train_soft_actor_critic as train
from rlbase.common.loops.learning import config_signature, start_learning
from rlbase.common.vec_env import VecEnv
from rlbase.tqc.config import CONFIG
from rlbase.tqc.model import Model, build_model


@config_signature(CONFIG, notes={**LEARN_NOTES,
    "network": "a feed-forward registry network name ('mlp', ...) or builder, the torso of "
               "the actor and of each quantile critic"})
def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(1e6),
          seed: int | None = None, **kwargs: Any) -> Model:
    """Train a squashed-Gaussian actor, quantile critics and the entropy coefficient with TQC
    and return the :class:`~rlbase.tqc.model.Model`."""
    model, env, options = start_learning(CONFIG, build_model, network, env, total_timesteps,
                                         seed, kwargs)
    return train(model, env, total_timesteps, options)

