"""Advantage actor-critic (A2C): synchronous n-step actor-critic on a batch of envs."""

from __future__ import annotations

from typing import Any, Callable

from rlbase.a2c.config import CONFIG
from rlbase.a2c.model import Model, build_model
from rlbase.common.loops.learning import (
    ACTOR_CRITIC_NETWORK_KWARGS,
    config_signature,
    start_learning,
)
from rlbase.common.loops.on_policy import (
    learning_rate,
    policy_rollouts,
    run_on_policy,
    update_with_learning_rate,
)
from rlbase.common.loops.training_loop import LoopOptions
from rlbase.common.vec_env import VecEnv

ALGORITHM = "a2c"
LOSSES = ("policy_loss", "value_loss")


@config_signature(CONFIG, notes={"**network_kwargs": ACTOR_CRITIC_NETWORK_KWARGS})
def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(80e6),
          seed: int | None = None, **kwargs: Any) -> Model:
    """Train a policy with A2C and return the :class:`~rlbase.a2c.model.Model`: an update per
    rollout of ``nsteps`` steps of every env (total_timesteps is rounded up to whole updates).
    """
    model, env, options = start_learning(CONFIG, build_model, network, env, total_timesteps,
                                         seed, kwargs)
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run A2C's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all)."""
    config = model.config
    return run_on_policy(model, env, total_timesteps, options, loss_names=LOSSES,
                         rollouts=policy_rollouts(config.gamma, config.action_masks),
                         schedule=learning_rate(config.lr, config.lrschedule),
                         update=update_with_learning_rate(model))
