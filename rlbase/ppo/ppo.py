"""Proximal policy optimization (PPO2 of Baselines): clipped surrogate, GAE, minibatches."""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import numpy as np

from rlbase.common.learning import start_learning
from rlbase.common.loop import LoopOptions
from rlbase.common.loops.on_policy import policy_rollouts, run_on_policy
from rlbase.common.mpi_util import allreduce_mean, check_synced
from rlbase.common.rollout import Rollout
from rlbase.common.schedules import get_schedule_fn
from rlbase.common.vec_env import VecEnv
from rlbase.ppo.config import CONFIG, PPOConfig
from rlbase.ppo.model import Model, build_model

ALGORITHM = "ppo"
LOSSES = ("policy_gradient_loss", "value_loss")
C = PPOConfig


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(1e6),
          seed: int | None = None, *, nsteps: int = C.nsteps,
          nminibatches: int = C.nminibatches, noptepochs: int = C.noptepochs,
          lr: float | Callable[[float], float] = C.lr, ent_coef: float = C.ent_coef,
          vf_coef: float = C.vf_coef, max_grad_norm: float | None = C.max_grad_norm,
          gamma: float = C.gamma, lam: float = C.lam,
          cliprange: float | Callable[[float], float] = C.cliprange,
          clip_value: bool = C.clip_value,
          cliprange_vf: float | Callable[[float], float] | None = C.cliprange_vf,
          normalize_advantage: bool = C.normalize_advantage,
          target_kl: float | None = C.target_kl,
          jit_compile: bool | None = C.jit_compile,
          log_interval: int = C.log_interval, eval_freq: int = C.eval_freq,
          eval_episodes: int = C.eval_episodes,
          checkpoint_interval: int = C.checkpoint_interval,
          precision: str = C.precision,
          eval_env: VecEnv | Any | None = None,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_path: str | None = None,
          resume: bool = False, model_fn: Callable[..., Model] | None = None,
          **network_kwargs: Any) -> Model:
    """Train a policy with PPO and return the :class:`~rlbase.ppo.model.Model`.

    The keyword arguments from ``nsteps`` to ``precision`` are the fields of
    :class:`~rlbase.ppo.config.PPOConfig` (type, unit, range and meaning there, and in
    rlbase/docs/algorithms/ppo.md); Stable-Baselines3's names (``n_steps``, ``batch_size``,
    ``learning_rate``, ...) are accepted too.

    network: a registered network name (mlp, cnn, lstm, ...) or a builder callable.
    env: a VecEnv (a gymnasium env or an env id is wrapped into one).
    total_timesteps: env steps to train for, summed over envs (rounded up to whole updates).
    seed: seed of python, numpy, TensorFlow and the envs (None: unseeded).
    eval_env: an env (or env id, seeded with seed + 1000) to evaluate the policy on.
    callback: called after every update as ``callback(model, info)``; returning False stops.
    load_path: continue from this saved model (its network and architecture are used).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints).
    resume: continue from the newest checkpoint in checkpoint_path (total_timesteps counts
        the whole run, including the steps done before the checkpoint).
    model_fn: build the model with this instead of :class:`Model` (same arguments).
    **network_kwargs: passed to the network builder (num_layers, num_hidden, nlstm, ...);
        ``value_network='copy'`` gives the value head its own torso, ``log_std_init`` sets a
        Gaussian policy's initial log standard deviation.
    """
    model, env, options = start_learning(CONFIG, partial(build_model, model_fn=model_fn),
                                         locals())
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
                         rollouts=policy_rollouts(config.gamma), schedule=schedule,
                         update=update, comm=model.comm,
                         workers_mean=partial(_workers_mean, model))


def _workers_mean(model: Model, stats: dict[str, float], check: bool) -> dict[str, float]:
    """Under MPI: the update's statistics averaged over the workers and, when ``check``, a
    check that the workers still hold the same weights. Unchanged without MPI."""
    comm = model.comm
    if comm is None:
        return stats
    stats = dict(zip(stats, allreduce_mean(np.array(list(stats.values())), comm)))
    if check:
        check_synced(model.policy.trainable_variables, comm)
    return stats
