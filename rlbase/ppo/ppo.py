"""Proximal policy optimization (PPO2 of Baselines): clipped surrogate, GAE, minibatches."""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np

from rlbase.common import logger
from rlbase.common.checkpoint import Checkpointer
from rlbase.common.cmd_util import as_vec_env
from rlbase.common.errors import RLBaseError
from rlbase.common.misc_util import safemean
from rlbase.common.mpi_util import allreduce_mean, check_synced, get_comm, mpi_rank
from rlbase.common.on_policy_loop import UpdateBookkeeper, setup
from rlbase.common.policies import xla_is_faster
from rlbase.common.rollout import RolloutRunner
from rlbase.common.schedules import get_schedule_fn
from rlbase.common.vec_env import VecEnv
from rlbase.ppo.model import Model


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int,
          eval_env: VecEnv | Any | None = None, seed: int | None = None, nsteps: int = 2048,
          ent_coef: float = 0.0, lr: float | Callable[[float], float] = 3e-4,
          vf_coef: float = 0.5, max_grad_norm: float | None = 0.5, gamma: float = 0.99,
          lam: float = 0.95, log_interval: int = 10, nminibatches: int = 4,
          noptepochs: int = 4, cliprange: float | Callable[[float], float] = 0.2,
          save_interval: int = 0, load_path: str | None = None,
          model_fn: Callable[..., Model] | None = None,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          clip_value: bool = True, jit_compile: bool | None = None,
          checkpoint_interval: int = 0, checkpoint_path: str | None = None,
          resume: bool = False, **network_kwargs: Any) -> Model:
    """Train a policy with PPO and return the :class:`~rlbase.ppo.model.Model`.

    network: a registered network name (mlp, cnn, lstm, ...) or a builder callable.
    env: a VecEnv (a gymnasium env or an env id is wrapped into one).
    total_timesteps: env steps to train for, summed over envs.
    eval_env: optional second env stepped with the same policy; its returns are logged.
    seed: seed of python, numpy, TensorFlow and the envs (None: unseeded).
    nsteps: env steps per env per update (batch = nsteps * num_envs).
    ent_coef: weight of the entropy bonus.
    lr: Adam learning rate, or a function of the fraction of training remaining (1 -> 0).
    vf_coef: weight of the value loss.
    max_grad_norm: clip each minibatch gradient's global norm to this (None: no clipping).
    gamma: discount factor.
    lam: GAE lambda (1: Monte-Carlo advantages, 0: one-step TD).
    log_interval: log every this many updates.
    nminibatches: minibatches per epoch (recurrent policies: must divide the number of envs).
    noptepochs: passes over each batch.
    cliprange: the surrogate's clipping range (also clips the value change), or a function
        of the fraction of training remaining.
    save_interval: save a checkpoint to <log dir>/checkpoints every this many updates (0: never).
    load_path: start from this saved model.
    model_fn: build the model with this instead of :class:`Model` (same arguments).
    callback: called after every update as ``callback(model, info)``; returning False stops.
    clip_value: clip the value function's change to ``cliprange`` as PPO2 did.
    jit_compile: compile the update with XLA (None: for runs of at least 200 updates, except
        convnets on a CPU, where TF's own convolutions are faster).
    checkpoint_interval: write a resumable checkpoint every this many env steps (0: never;
        rank 0 writes, every rank resumes from it).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints).
    resume: continue from the newest checkpoint in checkpoint_path (total_timesteps counts
        the whole run, including the steps done before the checkpoint).
    **network_kwargs: passed to the network builder (num_layers, num_hidden, nlstm, ...);
        ``value_network='copy'`` gives the value head its own torso.
    """
    hyperparameters = {k: v for k, v in locals().items()
                       if k not in ("env", "eval_env", "callback", "network_kwargs",
                                    "load_path", "model_fn", "jit_compile", "resume")}
    lr_fn, clip_fn = get_schedule_fn(lr), get_schedule_fn(cliprange)
    if nsteps < 1:
        raise RLBaseError(f"nsteps must be at least 1, got {nsteps}")
    if clip_fn(1.0) <= 0:
        raise RLBaseError(f"cliprange must be positive, got {clip_fn(1.0)}")
    checkpointer = Checkpointer("ppo", checkpoint_path, checkpoint_interval,
                                writer=mpi_rank() == 0)
    env, policy = setup(env, seed, network, network_kwargs)
    nbatch = env.num_envs * nsteps
    nupdates = max(1, int(total_timesteps) // nbatch)
    jit = nupdates >= 200 and xla_is_faster(env.observation_space) \
        if jit_compile is None else jit_compile
    comm = get_comm()
    model = (model_fn or Model)(policy, env.num_envs, nsteps, nminibatches, noptepochs,
                                ent_coef, vf_coef, max_grad_norm, gamma, lam, clip_value,
                                hyperparameters, jit_compile=jit, comm=comm)
    model.attach_env(env)
    if load_path is not None:
        model.load(load_path)
    runner = RolloutRunner(env, model, nsteps=nsteps, gamma=gamma)
    eval_runner = RolloutRunner(model.normalized_like_training(as_vec_env(eval_env)), model,
                                nsteps, gamma) if eval_env is not None else None
    eval_logs = (lambda: {"eval/eprewmean": safemean(ep["r"] for ep in eval_runner.ep_infos)}) \
        if eval_runner is not None else None
    books = UpdateBookkeeper("ppo", model, runner, nupdates, log_interval, callback,
                             checkpointer)
    # Under MPI every rank resumes from the checkpoint rank 0 wrote (same weights and count).
    first = books.restore() if resume else 1
    for update in range(first, nupdates + 1):
        frac = 1.0 - (update - 1) / nupdates
        rollout = runner.run()
        if eval_runner is not None:
            eval_runner.run()
        stats, runner.pending = model.train(rollout, lr_fn(frac), clip_fn(frac))
        if comm is not None and comm.Get_size() > 1:
            stats = dict(zip(stats, allreduce_mean(np.array(list(stats.values())), comm)))
            if update % log_interval == 0 or update == nupdates:
                check_synced(model.policy.trainable_variables, comm)
        stop = books.done(update, stats, eval_logs)
        if save_interval and update % save_interval == 0 and logger.get_dir() and \
                mpi_rank() == 0:
            model.save(os.path.join(logger.get_dir(), "checkpoints", f"{update:05d}.zip"))
        if stop:
            break
    return model
