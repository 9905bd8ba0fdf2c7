"""Soft Actor-Critic (Haarnoja et al. 2018, with the learned temperature of "Soft Actor-Critic
Algorithms and Applications"), as Stable-Baselines3 runs it."""

from __future__ import annotations

from typing import Any, Callable

from rlbase.common.families.soft_actor_critic import LEARN_NOTES
from rlbase.common.families.soft_actor_critic import train_soft_actor_critic as train
from rlbase.common.loops.learning import config_signature, start_learning
from rlbase.common.vec_env import VecEnv
from rlbase.sac.config import CONFIG
from rlbase.sac.model import Model, build_model


@config_signature(CONFIG, notes={**LEARN_NOTES,
    "network": "a feed-forward registry network name ('mlp', ...) or builder, the torso of "
               "the actor and of each critic"})
def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(1e6),
          seed: int | None = None, **kwargs: Any) -> Model:
    """Train a squashed-Gaussian actor, twin critics and the entropy coefficient with SAC and
    return the :class:`~rlbase.sac.model.Model`."""
    model, env, options = start_learning(CONFIG, build_model, network, env, total_timesteps,
                                         seed, kwargs)
    return train(model, env, total_timesteps, options)

