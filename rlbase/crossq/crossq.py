"""CrossQ (Bhatt et al. 2024, "CrossQ: Batch Normalization in Deep Reinforcement Learning for
Greater Sample Efficiency and Simplicity"), as sb3-contrib runs it: SAC without target
networks, batch-renormalized networks, the critics evaluated once on (s, a) and (s', a')
together, a delayed actor."""

from __future__ import annotations

from typing import Any, Callable

from rlbase.common.families.soft_actor_critic import (
    LEARN_NOTES,
    SoftActorCriticHooks,
    train_soft_actor_critic,
)
from rlbase.common.loops.learning import config_signature, start_learning
from rlbase.common.loops.training_loop import LoopOptions
from rlbase.common.vec_env import VecEnv
from rlbase.crossq.config import CONFIG
from rlbase.crossq.model import Model, build_model


class CrossQHooks(SoftActorCriticHooks):
    """SAC's hooks; the actor's loss is logged only from the calls that moved the actor."""

    loss_names: tuple[str, ...] = ("critic_loss",)  # type: ignore[assignment]


@config_signature(CONFIG, notes={
    **LEARN_NOTES,
    "network": "'mlp' (CrossQ builds its own batch-normalized MLPs)",
    "eval_env": "an env (or env id, seeded with seed + 1000) to evaluate the deterministic "
                "policy (tanh of the Gaussian's mean, the networks in inference mode) on",
    "**network_kwargs": "'mlp's layer_sizes (or num_layers (2), num_hidden (256)) of the "
                        "actor and activation (relu) of every network; SB3's names "
                        "(learning_rate, ...) are taken out first"})
def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(1e6),
          seed: int | None = None, **kwargs: Any) -> Model:
    """Train a squashed-Gaussian actor, batch-normalized critics and the entropy coefficient
    with CrossQ and return the :class:`~rlbase.crossq.model.Model`."""
    model, env, options = start_learning(CONFIG, build_model, network, env, total_timesteps,
                                         seed, kwargs)
    return train(model, env, total_timesteps, options)



def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run CrossQ's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all)."""
    return train_soft_actor_critic(model, env, total_timesteps, options, hooks=CrossQHooks)
