"""Soft Actor-Critic (Haarnoja et al. 2018, with the learned temperature of "Soft Actor-Critic
Algorithms and Applications"), as Stable-Baselines3 runs it."""

from __future__ import annotations

from typing import Any, Callable

from rlbase.common.families.soft_actor_critic import LEARN_NOTES, SoftActorCriticHooks
from rlbase.common.loops.learning import config_signature, start_learning
from rlbase.common.loops.off_policy import run_off_policy
from rlbase.common.loops.training_loop import LoopOptions
from rlbase.common.vec_env import VecEnv
from rlbase.sac.config import CONFIG
from rlbase.sac.model import Model, build_model


@config_signature(CONFIG, notes={**LEARN_NOTES,
    "network": "a feed-forward registry network name ('mlp', ...) or builder, the torso of "
               "the actor and of each critic",
    "**network_kwargs": "passed to the network builder ('mlp': num_layers (2), num_hidden "
                        "(256 here), activation (relu here), layer_sizes, layer_norm); SB3's "
                        "names (learning_rate, target_update_interval, ...) are taken out "
                        "first"})
def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(1e6),
          seed: int | None = None, **kwargs: Any) -> Model:
    """Train a squashed-Gaussian actor, twin critics and the entropy coefficient with SAC and
    return the :class:`~rlbase.sac.model.Model`."""
    model, env, options = start_learning(CONFIG, build_model, network, env, total_timesteps,
                                         seed, kwargs)
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run SAC's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all)."""
    run_off_policy(SoftActorCriticHooks(model, model.config.lr), env, total_timesteps, options)
    return model
