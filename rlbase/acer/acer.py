"""Actor-critic with experience replay (ACER, Wang et al. 2016) for Discrete action spaces."""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from rlbase.acer.buffer import Buffer
from rlbase.acer.model import ALGORITHM, AcerPolicy, Model, check_action_space
from rlbase.acer.runner import Runner
from rlbase.common import logger
from rlbase.common.checkpoint import (
    Checkpointer,
    generator_state,
    object_state,
    restore_object_state,
    set_generator_state,
)
from rlbase.common.cmd_util import as_vec_env
from rlbase.common.errors import NonFiniteError, RLBaseError
from rlbase.common.misc_util import safemean, set_global_seeds
from rlbase.common.policies import is_image_space, xla_is_faster
from rlbase.common.schedules import get_schedule_fn, named_schedule
from rlbase.common.signals import stop_requested
from rlbase.common.tf_util import configure_threads
from rlbase.common.vec_env import VecEnv

Callback = Callable[[Model, dict[str, Any]], "bool | None"]


def learn(network: str | Callable, env: VecEnv | Any, seed: int | None = None,
          nsteps: int = 20, total_timesteps: int = int(80e6), q_coef: float = 0.5,
          ent_coef: float = 0.01, max_grad_norm: float | None = 10,
          lr: float | Callable[[float], float] = 7e-4, lrschedule: str = "linear",
          rprop_epsilon: float = 1e-5, rprop_alpha: float = 0.99, gamma: float = 0.99,
          log_interval: int = 100, buffer_size: int = 50000, replay_ratio: float = 4,
          replay_start: int = 10000, c: float = 10.0, trust_region: bool = True,
          alpha: float = 0.99, delta: float = 1, load_path: str | None = None,
          callback: Callback | None = None, jit_compile: bool | None = None,
          checkpoint_interval: int = 0, checkpoint_path: str | None = None,
          resume: bool = False, **network_kwargs: Any) -> Model:
    """Train a policy with ACER and return the :class:`~rlbase.acer.model.Model`.

    network: a registered network name (mlp, cnn, lstm, ...) or a builder callable.
    env: a VecEnv with a Discrete action space (a gymnasium env or an env id is wrapped).
    seed: seed of python, numpy, TensorFlow and the envs (None: unseeded).
    nsteps: env steps per env per update (one sequence of this length per env).
    total_timesteps: env steps to train for, summed over envs.
    q_coef: weight of the Q loss in the total loss.
    ent_coef: weight of the entropy bonus.
    max_grad_norm: clip the gradient's global norm to this (None: no clipping).
    lr: learning rate, or a function of the fraction of training remaining (1 -> 0).
    lrschedule: how a float lr decays: constant, linear, middle_drop, double_linear_con,
        double_middle_drop.
    rprop_epsilon: RMSProp epsilon (inside the square root, as TF1's RMSProp).
    rprop_alpha: RMSProp decay of the mean square (which starts at 1, as in TF1).
    gamma: discount factor.
    log_interval: log every this many on-policy updates.
    buffer_size: replay buffer size in env steps per env (it keeps buffer_size // nsteps
        rollouts of all envs, as the reference does).
    replay_ratio: each on-policy update is followed by Poisson(replay_ratio) off-policy
        updates on replayed sequences (0: on-policy ACER, no buffer).
    replay_start: replay starts once the buffer holds this many env steps per env.
    c: importance weight clipping factor (the truncation of rho; the rest is bias-corrected).
    trust_region: bound the policy update by the KL divergence to the averaged policy.
    alpha: momentum of the Polyak (exponential moving) average of the policy's weights.
    delta: the KL bound of the trust region.
    load_path: start from this saved model.
    callback: called after every on-policy update as ``callback(model, info)``; returning
        False stops.
    jit_compile: compile the update with XLA. None (auto): on for non-image observations
        and runs of at least 1000 updates (measured: an 8x20 CartPole update takes 2.4 ms
        with XLA, 5.2 ms without; a Breakout cnn update 800 ms with XLA, 410 ms without).
    checkpoint_interval: every this many env steps write a resumable checkpoint (model, averaged
        policy, optimizer, replay buffer, counters, RNG states) to checkpoint_path as
        checkpoint_<steps>.zip (0: never; Ctrl-C still writes one when checkpoint_path is set).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints).
    resume: continue from the newest checkpoint in checkpoint_path (total_timesteps counts the
        whole run, including the steps done before the checkpoint).
    **network_kwargs: passed to the network builder (num_layers, num_hidden, nlstm, ...);
        ``value_network='copy'`` gives the Q head its own torso.
    """
    hyperparameters = {k: v for k, v in locals().items()
                       if k not in ("env", "callback", "network_kwargs", "load_path",
                                    "resume")}
    if nsteps < 1:
        raise RLBaseError(f"nsteps must be at least 1, got {nsteps}")
    if replay_ratio < 0:
        raise RLBaseError(f"replay_ratio must be >= 0 (0: on-policy ACER), got {replay_ratio}")
    if replay_ratio > 0 and replay_start > buffer_size:
        raise RLBaseError(f"replay_start={replay_start} is larger than buffer_size="
                          f"{buffer_size}: replay would never start; use replay_start <= "
                          "buffer_size")
    if replay_ratio > 0 and buffer_size < nsteps:
        raise RLBaseError(f"buffer_size={buffer_size} holds no sequence of nsteps={nsteps}: "
                          "use buffer_size >= nsteps")
    lr_fn = get_schedule_fn(lr) if callable(lr) else named_schedule(lrschedule, lr)
    checkpointer = Checkpointer(ALGORITHM, checkpoint_path, checkpoint_interval)
    set_global_seeds(seed)
    env = as_vec_env(env, seed)
    check_action_space(env.action_space)
    configure_threads(small_model=not is_image_space(env.observation_space))
    kwargs = dict(network_kwargs)
    value_network = kwargs.pop("value_network", None)

    def make_policy() -> AcerPolicy:
        return AcerPolicy(env.observation_space, env.action_space, network, value_network,
                          kwargs)

    policy, average = make_policy(), make_policy()
    nbatch = env.num_envs * nsteps
    nupdates = max(1, int(total_timesteps) // nbatch)
    if jit_compile is None:
        jit_compile = nupdates >= 1000 and xla_is_faster(env.observation_space)
    model = Model(policy, average, env.num_envs, nsteps, q_coef, ent_coef, max_grad_norm,
                  rprop_alpha, rprop_epsilon, gamma, c, trust_region, alpha, delta,
                  hyperparameters, jit_compile)
    model.attach_env(env)
    if load_path is not None:
        model.load(load_path)
    runner = Runner(env, model, nsteps, gamma)
    buffer = Buffer(env, nsteps, buffer_size, policy.state_size) if replay_ratio > 0 else None
    rng = np.random.default_rng(np.random.randint(2**31 - 1))  # replay's Poisson and sampling
    model.replay_buffer, model.replay_rng = buffer, rng  # for inspection (checkpoint tests)
    first = _restore(checkpointer, model, runner, buffer, rng) if resume else 1
    tstart = time.perf_counter()
    for update in range(first, nupdates + 1):
        seq = runner.run()
        cur_lr = lr_fn(1.0 - (update - 1) / nupdates)
        stats = model.train(seq, cur_lr)
        _check_finite(stats, update, "on-policy")
        nreplay = 0
        if buffer is not None:
            buffer.put(seq)
            if buffer.has_atleast(replay_start):
                nreplay = int(rng.poisson(replay_ratio))
                for _ in range(nreplay):
                    _check_finite(model.train(buffer.get(rng), cur_lr), update, "replay")
        model.num_timesteps += nbatch
        if update % log_interval == 0 or update == 1 or update == nupdates:
            _log(update, model, runner, stats, (update - first + 1) * nbatch,
                 time.perf_counter() - tstart, buffer, nreplay)
        stop = False
        if callback is not None:
            info = {"update": update, "num_timesteps": model.num_timesteps,
                    "total_timesteps": nupdates * nbatch, "ep_infos": runner.ep_infos, **stats}
            stop = callback(model, info) is False
        stop = stop or stop_requested()  # Ctrl-C: the update is complete, a safe point
        if checkpointer.due(model.num_timesteps) or (stop and checkpointer.active):
            loop, arrays = _resume_state(model, runner, buffer, rng, update)
            path = checkpointer.save(model, loop, arrays)
            logger.log(f"Checkpoint at update {update}: {path}")
        if stop:
            break
    return model


def _resume_state(model: Model, runner: Runner, buffer: Buffer | None,
                  rng: np.random.Generator, update: int
                  ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """What continuing after ``update`` needs beyond the model file: counters, the replay
    buffer and every generator (the env and its episodes in progress are not saved)."""
    actor = model.calls.actor
    loop: dict[str, Any] = {
        "update": update, "rng": generator_state(rng),
        "actor_rng": None if actor is None else generator_state(actor.rng),
        "ep_infos": [{k: float(v) for k, v in ep.items() if k in ("r", "l", "t")}
                     for ep in runner.ep_infos],
        "replay": None}
    # The TF act path's sampling counter is not among the policy's saved weights.
    arrays = {"loop/sample_seed": model.policy.sample_seed.numpy()}
    if model.vec_normalize is not None:  # running returns: not in its state_dict
        arrays["loop/vec_normalize_returns"] = np.asarray(model.vec_normalize.returns)
    if buffer is not None:
        loop["replay"], replay_arrays = object_state(buffer, "replay")
        arrays.update(replay_arrays)
    return loop, arrays


def _restore(checkpointer: Checkpointer, model: Model, runner: Runner, buffer: Buffer | None,
             rng: np.random.Generator) -> int:
    """Load the newest checkpoint into everything :func:`_resume_state` saved; returns the
    first update to run (1 when there is no checkpoint yet)."""
    resumed = checkpointer.restore(model)
    if resumed is None:
        return 1
    loop, arrays = resumed
    if buffer is not None:
        if loop.get("replay") is None:
            raise RLBaseError(f"{checkpointer.latest()} holds no replay buffer (written with "
                              "replay_ratio=0): resume it with replay_ratio=0")
        restore_object_state(buffer, loop["replay"], arrays, "replay")
    set_generator_state(rng, loop["rng"])
    actor = model.calls.actor
    if actor is not None and loop.get("actor_rng") is not None:
        set_generator_state(actor.rng, loop["actor_rng"])
    seed = arrays.get("loop/sample_seed")
    if seed is not None:
        model.policy.sample_seed.assign(seed)
    returns = arrays.get("loop/vec_normalize_returns")
    if model.vec_normalize is not None and returns is not None:
        if returns.shape != np.shape(model.vec_normalize.returns):
            raise RLBaseError(f"checkpoint's VecNormalize returns have shape {returns.shape}, "
                              f"this run has {np.shape(model.vec_normalize.returns)} envs")
        model.vec_normalize.returns[...] = returns
    runner.ep_infos.extend(loop.get("ep_infos", []))
    return int(loop["update"]) + 1


def _check_finite(stats: dict[str, float], update: int, kind: str) -> None:
    for name in ("loss_policy", "loss_q"):
        if not np.isfinite(stats[name]):
            raise NonFiniteError(f"acer: {name} became {stats[name]} in the {kind} update "
                                 f"{update}")


def _log(update: int, model: Model, runner: Runner, stats: dict[str, float], steps: int,
         elapsed: float, buffer: Buffer | None, nreplay: int) -> None:
    """steps: env steps done in this process in ``elapsed`` seconds (for fps)."""
    episodes = runner.ep_infos
    logger.record_tabular("time/nupdates", update)
    logger.record_tabular("time/total_timesteps", model.num_timesteps)
    logger.record_tabular("time/fps", int(steps / elapsed))
    logger.record_tabular("time/time_elapsed", elapsed)
    for name, value in stats.items():
        logger.record_tabular(f"train/{name}", value)
    logger.record_tabular("train/replay_updates", nreplay)
    if buffer is not None:
        logger.record_tabular("train/buffer_rollouts", buffer.num_in_buffer)
    logger.record_tabular("rollout/eprewmean", safemean(ep["r"] for ep in episodes))
    logger.record_tabular("rollout/eplenmean", safemean(ep["l"] for ep in episodes))
    logger.dump_tabular()
