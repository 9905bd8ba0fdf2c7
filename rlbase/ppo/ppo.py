"""Proximal policy optimization (PPO2 of Baselines): clipped surrogate, GAE, minibatches."""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from rlbase.common.loops.learning import (
    ACTOR_CRITIC_NETWORK_KWARGS,
    config_signature,
    start_learning,
)
from rlbase.common.loops.on_policy import policy_rollouts, run_on_policy
from rlbase.common.loops.rollout import Rollout
from rlbase.common.loops.training_loop import LoopOptions
from rlbase.common.schedules import get_schedule_fn
from rlbase.common.vec_env import VecEnv
from rlbase.ppo.config import CONFIG
from rlbase.ppo.model import Model, build_model

ALGORITHM = "ppo"
LOSSES = ("policy_gradient_loss", "value_loss")


@config_signature(CONFIG, notes={"**network_kwargs": ACTOR_CRITIC_NETWORK_KWARGS})
def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(1e6),
          seed: int | None = None, *, model_fn: Callable[..., Model] | None = None,
          **kwargs: Any) -> Model:
    """Train a policy with PPO and return the :class:`~rlbase.ppo.model.Model`: ``noptepochs``
    epochs of minibatch updates per rollout of ``nsteps`` steps of every env (total_timesteps
    is rounded up to whole rollouts)."""
    model, env, options = start_learning(CONFIG, partial(build_model, model_fn=model_fn),
                                         network, env, total_timesteps, seed, kwargs)
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run PPO's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all). Under MPI every rank runs it; rank 0 writes checkpoints."""
    config = model.config
    lr_fn, clip_fn = get_schedule_fn(config.lr), get_schedule_fn(config.cliprange)
    vf_clip_fn = None if config.cliprange_vf is None else get_schedule_fn(config.cliprange_vf)

    def schedule(progress: float) -> dict[str, float]:
        current = {"learning_rate": lr_fn(progress), "clip_range": clip_fn(progress)}
        if vf_clip_fn is not None:
            current["clip_range_vf"] = vf_clip_fn(progress)
        return current

    def update(rollout: Rollout, current: dict[str, float], _: int
               ) -> tuple[dict[str, float], Any]:
        # Without cliprange_vf the value clips by the policy's clip range.
        return model.train(rollout, current["learning_rate"], current["clip_range"],
                           current.get("clip_range_vf", current["clip_range"]))

    # Under MPI every rank resumes from the checkpoint rank 0 wrote (same weights and count),
    # and the ranks stop together (a callback or a signal on one rank stops all).
    return run_on_policy(model, env, total_timesteps, options, loss_names=LOSSES,
                         rollouts=policy_rollouts(config.gamma, config.action_masks),
                         schedule=schedule,
                         update=update, comm=model.comm,
                         workers_mean=model.workers_mean)
