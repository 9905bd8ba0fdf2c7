"""The bookkeeping every learn() loop shares: one mechanism, used by all algorithms.

An algorithm's loop body collects experience and trains; after each iteration (an on-policy
update, an off-policy env step, an ES generation) it calls :meth:`TrainingLoop.end_iteration`,
which counts timesteps, stops on a non-finite loss, logs SB3's keys, calls the callback,
evaluates on the evaluation env, polls Ctrl-C and writes resumable checkpoints::

    loop = TrainingLoop(model, env, total_timesteps, options, loss_names=("value_loss",))
    while loop.running():
        ...collect (calling loop.episodes.update(infos) after each env step), train...
        if loop.end_iteration(steps, {"value_loss": ..., "learning_rate": ...}):
            break
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rlbase.common.base_model import BaseModel
from rlbase.common.errors import NonFiniteError, RLBaseError
from rlbase.common.io.checkpoint import Checkpointer
from rlbase.common.logs import logger
from rlbase.common.loops import callback_forms
from rlbase.common.loops.action_masks import warn_unused_masks
from rlbase.common.loops.callbacks import BaseCallback
from rlbase.common.loops.episodes import EpisodeStats
from rlbase.common.loops.evaluation import Evaluator
from rlbase.common.loops.signals import stop_requested
from rlbase.common.vec_env.base import VecEnv, find_wrapper
from rlbase.common.vec_env.gym_vec import GymVecEnv
from rlbase.common.vec_env.vec_monitor import VecMonitor
from rlbase.common.vec_env.vec_normalize import VecNormalize

Callback = Callable[[Any, dict[str, Any]], "bool | None"]

#: the learn() arguments every algorithm shares (see LoopOptions)
LOOP_ARGUMENTS = ("log_interval", "callback", "checkpoint_interval", "checkpoint_path",
                  "resume", "eval_env", "eval_freq", "eval_episodes")


@dataclass
class LoopOptions:
    """The learn() arguments of the shared loop.

    log_interval: log every this many iterations (updates, generations) or, for off-policy
        algorithms, finished episodes (SB3's convention).
    callback: ``callback(model, info)`` after every iteration; returning False stops training.
    checkpoint_interval: write a resumable checkpoint every this many env steps (0: never).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints).
    resume: continue from the newest checkpoint in that folder.
    eval_env: an env to evaluate on (None: no evaluation).
    eval_freq: evaluate every this many env steps (0: at every log row, when eval_env is
        given).
    eval_episodes: episodes per evaluation.
    hooks: an SB3 callback (rlbase.common.loops.callbacks.BaseCallback) whose rollout and step
        hooks the loop runs; the model classes set it (it is not a learn() argument).
    """

    log_interval: int = 100
    callback: Callback | None = None
    checkpoint_interval: int = 0
    checkpoint_path: str | None = None
    resume: bool = False
    eval_env: Any = None
    eval_freq: int = 0
    eval_episodes: int = 5
    hooks: BaseCallback | None = None

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any]) -> LoopOptions:
        return cls(**{k: arguments[k] for k in LOOP_ARGUMENTS if k in arguments})

    def check(self) -> None:
        for name in ("log_interval", "eval_episodes"):
            value = getattr(self, name)
            if not _is_int(value) or value < 1:
                raise RLBaseError(f"{name} must be a positive integer, got {value!r}")
        for name in ("checkpoint_interval", "eval_freq"):
            value = getattr(self, name)
            if value is not None and (not _is_int(value) or value < 0):
                raise RLBaseError(f"{name} must be a non-negative integer number of env steps, "
                                  f"got {value!r}")
        if self.eval_freq and self.eval_env is None:
            raise RLBaseError(f"eval_freq={self.eval_freq} needs an eval_env to evaluate on")
        if isinstance(self.callback, BaseCallback):
            raise RLBaseError(f"{type(self.callback).__name__} is a Stable-Baselines3 callback, "
                              f"for the model classes: PPO(...).learn(n, callback=...); "
                              f"learn() takes callback(model, info)")
        if self.callback is not None and not callable(self.callback):
            raise RLBaseError(f"callback must be callable, got {self.callback!r}")


def _is_int(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, np.integer))


def crossings(t: int, step: int, every: int | None) -> int:
    """How many multiples of ``every`` a counter passed going from ``t - step`` to ``t``."""
    if not every:
        return 0
    return t // every - (t - step) // every


class TrainingLoop:
    """Counts, checks, logs, reports, evaluates and checkpoints a learn() run.

    model: the algorithm's model (its ``num_timesteps`` is advanced here).
    total_timesteps: env steps to train for in this call; with ``resume`` the whole run's.
    options: the shared learn() arguments.
    log_unit: 'iterations' or 'episodes' (what log_interval counts).
    loss_names: statistics that must stay finite (training stops naming the first that does
        not, and the iteration).
    writer: False on MPI ranks other than 0 (they never write checkpoints).
    seed: seeds an evaluation env given as an id (with seed + 1000).
    comm: an mpi4py communicator of workers that must stop together: when one rank's
        callback or Ctrl-C stops it, every rank stops after the same iteration (a rank left
        alone would wait for the others forever).
    """

    def __init__(self, model: BaseModel, env: VecEnv, total_timesteps: int,
                 options: LoopOptions, log_unit: str = "iterations",
                 loss_names: tuple[str, ...] = (), writer: bool = True,
                 seed: int | None = None, comm: Any = None):
        options.check()
        # A foreign callback form adapted (or refused) by the compatibility layer's translators.
        callback = callback_forms.translate(options.callback, callback_forms.CallbackSite(
            model.algorithm, env, max(0, int(total_timesteps))))
        if callback is not options.callback:
            options = replace(options, callback=callback)
        warn_unused_masks(model, env)
        if log_unit not in ("iterations", "episodes"):
            raise ValueError(f"log_unit must be 'iterations' or 'episodes', got {log_unit!r}")
        self.model, self.env, self.options = model, env, options
        self.comm = comm if comm is not None and comm.Get_size() > 1 else None
        if self.comm is not None and options.hooks is not None:
            # One rank stopping mid-rollout would leave the others waiting for it forever.
            raise RLBaseError("SB3 callbacks stop a rank mid-rollout, which MPI workers cannot "
                              "follow: under mpiexec write callback(model, info), which every "
                              "rank obeys after the same update")
        self.log_unit, self.loss_names = log_unit, loss_names
        self.episodes = EpisodeStats()
        self.iterations = 0
        self.checkpointer = Checkpointer(model.algorithm, options.checkpoint_path,
                                         options.checkpoint_interval, writer=writer)
        self.evaluator: Evaluator | None = None
        if options.eval_env is not None:
            logdir = logger.get_dir()
            self.evaluator = Evaluator(
                options.eval_env, options.eval_episodes, seed=None if seed is None else seed + 1000,
                best_model_path=os.path.join(logdir, "best_model.zip") if logdir else None)
        self.start = model.num_timesteps
        if options.resume:
            self._restore_checkpoint()
            self._cut_history()  # after a restore that failed, the files are left as they were
            self.start = 0  # total_timesteps counts the whole run
        self.target = self.start + max(0, int(total_timesteps))
        self._run_start = model.num_timesteps
        self._logged_episodes = self.episodes.count
        self.tstart = time.perf_counter()
        self._rollout_hooks: RolloutHooks | None = None
        self.stopped = False
        before_first_step = getattr(self.options.callback, "before_first_step", None)
        if before_first_step is not None:
            self.stopped = before_first_step(model, {
                "iteration": 0, "num_timesteps": model.num_timesteps,
                "total_timesteps": self.target, "ep_infos": self.episodes.recent,
                "episodes": self.episodes.count}) is False

    # -- where the run is ---------------------------------------------------------------------
    def running(self) -> bool:
        """Whether training goes on: steps remain and nothing asked it to stop."""
        return not self.stopped and self.model.num_timesteps < self.target

    @property
    def progress_remaining(self) -> float:
        """1 at the start of the run, 0 at its end (what schedules take)."""
        span = self.target - self.start
        if span <= 0:
            return 0.0
        return float(np.clip(1.0 - (self.model.num_timesteps - self.start) / span, 0.0, 1.0))

    def iterations_left(self, batch: int, what: str = "update") -> int:
        """Whole iterations of ``batch`` env steps that reach the target; says so in the log
        when the steps asked for are not a multiple of the batch."""
        left = self.target - self.model.num_timesteps
        if left <= 0:
            return 0
        n = max(1, math.ceil(left / batch))
        if left % batch:
            logger.log(f"{self.model.algorithm}: {left} timesteps is not a whole number of "
                       f"{what}s of {batch} steps: training for {n} {what}s = {n * batch} steps")
        return n

    # -- after each iteration -------------------------------------------------------------------
    def end_iteration(self, steps: int, stats: Mapping[str, float],
                      logs: Mapping[str, Any] | None = None,
                      step: Mapping[str, Any] | None = None) -> bool:
        """Account for one iteration of ``steps`` env steps; returns True when training must
        stop (the callback returned False, or Ctrl-C). ``step``: what the iteration's env step
        gave (``new_obs``, ``rewards``, ``dones``, ``infos``, ``actions``), for SB3 callbacks'
        ``locals`` where an iteration is one vector step."""
        model = self.model
        model.num_timesteps += steps
        self.iterations += 1
        for name in self.loss_names:
            value = stats.get(name)
            if value is not None and not math.isfinite(value):
                raise NonFiniteError(f"{model.algorithm}: {name} became {value} at iteration "
                                     f"{self.iterations} ({model.num_timesteps} timesteps)")
        log_due = self._log_due(model.num_timesteps >= self.target, self.iterations)
        evaluated = self.evaluator is not None and bool(
            crossings(model.num_timesteps, steps, self.options.eval_freq) or
            (not self.options.eval_freq and log_due))
        if evaluated:
            self.evaluate()
        if log_due or evaluated:  # every evaluation gets its own row, none is overwritten
            self.log(stats, logs, evaluated)
        stop = False
        hooks = self.options.hooks
        if hooks is not None and self._rollout_hooks is None:  # one rollout per iteration
            hooks.on_rollout_start()
            hooks.update_locals(dict(step or {}))
            stop = not hooks.on_step()
            hooks.on_rollout_end()
        callback = self.options.callback
        if callback is not None:
            info = {"iteration": self.iterations, "num_timesteps": model.num_timesteps,
                    "total_timesteps": self.target, "ep_infos": self.episodes.recent,
                    "episodes": self.episodes.count, **stats}
            stop = callback(model, info) is False or stop
        stop = stop or stop_requested()
        if self.comm is not None:
            stop = any(self.comm.allgather(bool(stop)))
        ckpt = self.checkpointer
        # A finished run leaves a checkpoint too: a --resume after it (a scheduler starting
        # the job again) finds nothing left to do instead of retraining from an older one.
        finished = model.num_timesteps >= self.target
        if ckpt.due(model.num_timesteps) or ((stop or finished) and ckpt.active):
            self.save_checkpoint()
        if stop:
            logger.log(f"{model.algorithm}: stopped at {model.num_timesteps} timesteps on request")
        self.stopped = stop
        return stop

    def env_step_cut(self, exc: BaseException | None) -> bool:
        """Whether a stop request cut an env step short on this rank (``exc``, raised by the
        step) or, under MPI, on any rank; if so the loop stops as :meth:`stop_in_env_step`.
        Every rank calls this once after the same env step (off-policy) or rollout
        (on-policy), before an update whose gradients the ranks average: a rank whose step was
        cut cannot reach that update, and the others would wait for it there forever."""
        cut = exc is not None
        if self.comm is not None:
            cut = any(self.comm.allgather(cut))
        if cut:
            self.stop_in_env_step(exc if exc is not None else
                                  "another MPI rank's env step was cut short by its stop request")
        return cut

    def stop_in_env_step(self, exc: BaseException | str) -> None:
        """A stop request cut an env step short (workers that did not answer were killed):
        stop without an update on the partial rollout, checkpointing as a stop at a safe point
        does; the caller (the CLI) then saves the model."""
        if self.checkpointer.active:
            self.save_checkpoint()
        logger.log(f"{self.model.algorithm}: stopped at {self.model.num_timesteps} timesteps "
                   f"on request ({exc})")
        self.stopped = True

    @property
    def rollout_hooks(self) -> RolloutHooks | None:
        """SB3 callback hooks for an on-policy runner to run around its rollouts and after
        every vector step (None without an SB3 callback)."""
        if self.options.hooks is not None and self._rollout_hooks is None:
            self._rollout_hooks = RolloutHooks(self.options.hooks, self.model)
        return self._rollout_hooks

    def log_due(self, steps: int) -> bool:
        """Whether the iteration about to end, of ``steps`` env steps, will write a log row
        (for work done only for logged rows, such as ES's unperturbed episodes)."""
        return self._log_due(self.model.num_timesteps + steps >= self.target, self.iterations + 1)

    def _log_due(self, last: bool, iteration: int) -> bool:
        interval = self.options.log_interval
        if self.log_unit == "iterations":
            return iteration % interval == 0 or iteration == 1 or last
        due = self.episodes.count // interval > self._logged_episodes // interval
        return due or (last and self.episodes.count > 0)

    def log(self, stats: Mapping[str, float], logs: Mapping[str, Any] | None = None,
            evaluated: bool = False) -> None:
        """Write one row of SB3's keys (time/, rollout/, train/) plus ``logs``, and the
        evaluation's (eval/) when one ran at this iteration."""
        self._logged_episodes = self.episodes.count
        elapsed = max(time.perf_counter() - self.tstart, 1e-9)
        timesteps, episodes, evaluator = self.model.num_timesteps, self.episodes, self.evaluator
        row: dict[str, Any] = {
            "time/iterations": self.iterations, "time/total_timesteps": timesteps,
            "time/fps": int((timesteps - self._run_start) / elapsed), "time/time_elapsed": elapsed,
            "time/episodes": episodes.count, "rollout/ep_rew_mean": episodes.mean_return(),
            "rollout/ep_len_mean": episodes.mean_length()}
        if (success_rate := episodes.success_rate()) is not None:  # goal envs, as SB3 logs it
            row["rollout/success_rate"] = success_rate
        row.update((name if "/" in name else f"train/{name}", v) for name, v in stats.items())
        row.update(logs or {})
        if evaluated and evaluator is not None and evaluator.last is not None:
            row["eval/mean_reward"], row["eval/mean_ep_length"] = evaluator.last
            if evaluator.last_success_rate is not None:
                row["eval/success_rate"] = evaluator.last_success_rate
        logger.logkvs(row)  # one record per key, in this order, as record_tabular one by one
        logger.dump_tabular()

    def evaluate(self) -> float:
        """Evaluate now on the evaluation env (logged with the next row; the best model is
        kept, and written to <log dir>/best_model.zip when there is a log dir)."""
        assert self.evaluator is not None
        return self.evaluator.evaluate(self.model)

    # -- checkpoints ----------------------------------------------------------------------------
    def save_checkpoint(self) -> None:
        model_meta, arrays = self.model.resume_state()
        loop: dict[str, Any] = {"iterations": self.iterations,
                                "episodes": self.episodes.state(), "model": model_meta}
        monitor = self._monitor()
        if monitor is not None:  # what a resumed run keeps of monitor.csv
            loop["monitor_rows"] = monitor.file_rows
        envs = find_wrapper(self.env, GymVecEnv)
        if isinstance(envs, GymVecEnv):  # a resumed run repeats the envs' last resets
            loop["env_resets"] = envs.reset_notes()
        if self.evaluator is not None:
            eval_meta, eval_arrays = self.evaluator.state()
            loop["evaluator"] = eval_meta
            arrays = {**arrays, **eval_arrays}
        path = self.checkpointer.save(self.model, loop, arrays)
        if path is not None:  # None: not written (a full disk), warned once
            logger.log(f"Checkpoint at {self.model.num_timesteps} timesteps: {path}")

    def _cut_history(self) -> None:
        """A resumed run's monitor file goes on from its checkpoint: drop the episodes the
        interrupted run wrote past it (the restore cut the logger's files already). Other MPI
        ranks keep theirs whole: the checkpoint holds rank 0's row count only."""
        monitor = self._monitor()
        if monitor is not None and self.checkpointer.writer:
            monitor.truncate_episodes(self._monitor_rows)

    def _monitor(self) -> VecMonitor | None:
        monitor = find_wrapper(self.env, VecMonitor)
        return monitor if isinstance(monitor, VecMonitor) else None

    def _replay_env_resets(self, notes: Any) -> None:
        """The resumed run's first reset repeats the resets the checkpointed run noted, so at
        an episode boundary it continues with the very episodes the uninterrupted run had."""
        envs = find_wrapper(self.env, GymVecEnv)
        if isinstance(envs, GymVecEnv) and isinstance(notes, list) and \
                len(notes) == envs.num_envs:
            envs.replay_resets(notes)
        else:
            logger.log("The envs' randomness restarts from the seed on this resume: their "
                       "VecEnv (or this checkpoint) does not note how to repeat their resets")

    def _restore_checkpoint(self) -> None:
        self._monitor_rows = 0  # none kept when the run starts from scratch
        resumed = self.checkpointer.restore(self.model)
        if resumed is None:
            return
        loop, arrays = resumed
        try:
            self.iterations = int(loop["iterations"])
            self.episodes.set_state(loop["episodes"])
            # Checkpoints from before monitor_rows: the episodes counted (equal for all but ES).
            self._monitor_rows = int(loop.get("monitor_rows", self.episodes.count))
            model_meta = loop["model"]
        except (KeyError, TypeError, ValueError) as exc:
            raise RLBaseError(f"{self.checkpointer.latest()} is not a checkpoint of this rlbase "
                              f"version ({type(exc).__name__}: {exc}); start a new run") from exc
        self.model.restore_resume_state(model_meta, arrays)
        normalizer = find_wrapper(self.env, VecNormalize)
        if isinstance(normalizer, VecNormalize):
            normalizer.resumed()
        self._replay_env_resets(loop.get("env_resets"))
        if self.evaluator is not None and isinstance(loop.get("evaluator"), dict):
            self.evaluator.set_state(loop["evaluator"], arrays)


class RolloutHooks:
    """SB3's callback hooks around one on-policy rollout: ``on_rollout_start``, then after
    every vector step the step's ``locals`` and ``on_step`` (with the model's count advanced by
    the steps done so far, as SB3 counts), then ``on_rollout_end``. A rollout stopped by
    ``on_step`` keeps the count of the steps it took; a finished one hands the count back to
    :meth:`TrainingLoop.end_iteration`, which adds the whole batch."""

    def __init__(self, callback: BaseCallback, model: BaseModel):
        self.callback, self.model = callback, model
        self.base = model.num_timesteps

    def start(self) -> None:
        self.base = self.model.num_timesteps
        self.callback.on_rollout_start()

    def step(self, steps_done: int, step_locals: dict[str, Any]) -> bool:
        """After a vector step; False: training stops now."""
        self.model.num_timesteps = self.base + steps_done
        self.callback.update_locals(step_locals)
        return self.callback.on_step()

    def end(self) -> None:
        self.model.num_timesteps = self.base
        self.callback.on_rollout_end()
