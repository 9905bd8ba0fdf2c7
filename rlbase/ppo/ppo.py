"""Proximal policy optimization (PPO2 of Baselines): clipped surrogate, GAE, minibatches."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.learning import Alias, start_learning
from rlbase.common.loop import LoopOptions, TrainingLoop
from rlbase.common.mpi_util import allreduce_mean, check_synced, mpi_rank
from rlbase.common.rollout import RolloutRunner
from rlbase.common.schedules import get_schedule_fn
from rlbase.common.vec_env import VecEnv
from rlbase.ppo.model import Model, build_model

ALGORITHM = "ppo"
LOSSES = ("policy_gradient_loss", "value_loss")
# Baselines' spellings, still accepted (with a DeprecationWarning).
ALIASES = {
    # PPO2 saved a model every save_interval updates: a checkpoint every as many env steps.
    "save_interval": Alias("checkpoint_interval",
                           lambda updates, args, num_envs: int(updates) * args["nsteps"] * num_envs,
                           "in env steps: save_interval * nsteps * num_envs"),
}


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(1e6),
          seed: int | None = None, nsteps: int = 2048, ent_coef: float = 0.0,
          lr: float | Callable[[float], float] = 3e-4, vf_coef: float = 0.5,
          max_grad_norm: float | None = 0.5, gamma: float = 0.99, lam: float = 0.95,
          nminibatches: int = 4, noptepochs: int = 4,
          cliprange: float | Callable[[float], float] = 0.2, clip_value: bool = True,
          model_fn: Callable[..., Model] | None = None, jit_compile: bool | None = None,
          log_interval: int = 10, eval_env: VecEnv | Any | None = None, eval_freq: int = 0,
          eval_episodes: int = 5,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_interval: int = 0,
          checkpoint_path: str | None = None, resume: bool = False,
          **network_kwargs: Any) -> Model:
    """Train a policy with PPO and return the :class:`~rlbase.ppo.model.Model`.

    network: a registered network name (mlp, cnn, lstm, ...) or a builder callable.
    env: a VecEnv (a gymnasium env or an env id is wrapped into one).
    total_timesteps: env steps to train for, summed over envs (rounded up to whole updates).
    seed: seed of python, numpy, TensorFlow and the envs (None: unseeded).
    nsteps: env steps per env per update (batch = nsteps * num_envs).
    ent_coef: weight of the entropy bonus.
    lr: Adam learning rate, or a function of the fraction of training remaining (1 -> 0).
    vf_coef: weight of the value loss.
    max_grad_norm: clip each minibatch gradient's global norm to this (None: no clipping).
    gamma: discount factor (1: a time-limit truncation ends the return; see
        rlbase.common.transitions).
    lam: GAE lambda (1: Monte-Carlo advantages, 0: one-step TD).
    nminibatches: minibatches per epoch (recurrent policies: must divide the number of envs).
    noptepochs: passes over each batch.
    cliprange: the surrogate's clipping range (also clips the value change), or a function
        of the fraction of training remaining.
    clip_value: clip the value function's change to ``cliprange`` as PPO2 did.
    model_fn: build the model with this instead of :class:`Model` (same arguments).
    jit_compile: compile the update with XLA (None: for runs of at least 200 updates, except
        convnets on a CPU, where TF's own convolutions are faster).
    log_interval: log every this many updates.
    eval_env: an env (or env id, seeded with seed + 1000) to evaluate the policy on.
    eval_freq: evaluate every this many env steps (0: at every log row when eval_env is
        given); logged as eval/mean_reward, the best model written to
        <log dir>/best_model.zip.
    eval_episodes: episodes per evaluation.
    callback: called after every update as ``callback(model, info)``; returning False stops.
    load_path: continue from this saved model (its network and architecture are used).
    checkpoint_interval: write a resumable checkpoint every this many env steps (0: never;
        under MPI rank 0 writes, every rank resumes from it).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints).
    resume: continue from the newest checkpoint in checkpoint_path (total_timesteps counts
        the whole run, including the steps done before the checkpoint).
    **network_kwargs: passed to the network builder (num_layers, num_hidden, nlstm, ...);
        ``value_network='copy'`` gives the value head its own torso, ``log_std_init`` sets a
        Gaussian policy's initial log standard deviation.
    """
    if get_schedule_fn(cliprange)(1.0) <= 0:
        raise RLBaseError(f"cliprange must be positive, got {get_schedule_fn(cliprange)(1.0)}")
    model, env, options = start_learning(ALGORITHM, build_model, locals(), ALIASES,
                                         architecture=Model.architecture)
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run PPO's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all). Under MPI every rank runs it; rank 0 writes checkpoints."""
    hp = model.hyperparameters
    lr_fn, clip_fn = get_schedule_fn(hp["lr"]), get_schedule_fn(hp["cliprange"])
    # Under MPI every rank resumes from the checkpoint rank 0 wrote (same weights and count),
    # and the ranks stop together (a callback or a signal on one rank stops all).
    loop = TrainingLoop(model, env, total_timesteps, options, loss_names=LOSSES,
                        writer=mpi_rank() == 0, seed=hp.get("seed"), comm=model.comm)
    runner = RolloutRunner(env, model, nsteps=model.nsteps, gamma=model.gamma,
                           episodes=loop.episodes)
    comm = model.comm
    nbatch = model.nenvs * model.nsteps
    for _ in range(loop.iterations_left(nbatch)):
        frac = loop.progress_remaining
        current_lr, current_clip = lr_fn(frac), clip_fn(frac)
        rollout = runner.run()
        stats, runner.pending = model.train(rollout, current_lr, current_clip)
        if comm is not None:
            stats = dict(zip(stats, allreduce_mean(np.array(list(stats.values())), comm)))
            if (loop.iterations + 1) % options.log_interval == 0:
                check_synced(model.policy.trainable_variables, comm)
        if loop.end_iteration(nbatch, {**stats, "learning_rate": current_lr,
                                       "clip_range": current_clip}):
            break
    return model
