"""The off-policy loop, written once for SAC, DDPG/TD3 and DQN.

One vector env step per iteration: choose actions (uniformly random during the warm-up, or
the policy's), store the raw transitions, train (the phases a step owes once the count is past
``learning_starts``, SB3's rule: TrainSchedule), count, log, call back, evaluate, checkpoint
(rlbase.common.loops.training_loop.TrainingLoop). What only one algorithm does (its
exploration, target copies, observation statistics, ...) comes through
:class:`OffPolicyHooks`::

    class SACHooks(OffPolicyHooks[Model]):
        def act(self, obs, t): ...
        def train_and_act(self, obs, phases, lr): ...

    run_off_policy(SACHooks(model), env, total_timesteps, options)
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar, cast

import numpy as np

from rlbase.common.base_model import BaseModel
from rlbase.common.buffers.raw_replay import RawReplay, reset_env, step_and_store
from rlbase.common.loops.signals import EnvWaitInterrupted
from rlbase.common.loops.train_schedule import TrainSchedule
from rlbase.common.loops.training_loop import LoopOptions, TrainingLoop
from rlbase.common.mpi_util import mpi_rank
from rlbase.common.schedules import get_schedule_fn
from rlbase.common.vec_env import VecEnv


class OffPolicyConfig(Protocol):
    """The config fields the loop reads (every off-policy config has them)."""

    train_freq: int
    gradient_steps: int
    learning_starts: int
    batch_size: int
    seed: int | None


class OffPolicyModel(Protocol):
    """What the loop reads from an off-policy model besides :class:`BaseModel`'s."""

    config: OffPolicyConfig
    replay_buffer: Any
    raw_replay: RawReplay
    gamma: float


M = TypeVar("M", bound=BaseModel)


class OffPolicyHooks(Generic[M]):
    """What one off-policy algorithm adds to the loop; the defaults add nothing.

    model: the model trained.
    lr: the learning rate handed to training, or its schedule (of the progress remaining).
    loss_names: statistics that must stay finite.
    train_first: True: the phases a vector step owes run before the next step, in one
        compiled call with its acting (:meth:`train_and_act`; fewer Python->TF crossings; the
        run's last step's are not run); False: right after the step, one :meth:`train` each
        (SB3's order).
    random_warmup: act uniformly at random before ``learning_starts`` (SB3); False: the
        policy explores from the first step (Baselines' deepq, epsilon-greedy).
    run_clock: count ``t`` from this run's start (False: the model's whole count).
    comm: MPI workers that stop together (None: one process).
    """

    loss_names: tuple[str, ...] = ()
    train_first = True
    random_warmup = True
    run_clock = False
    comm: Any = None

    def __init__(self, model: M, lr: float | Callable[[float], float]):
        self.model, self.lr = model, lr
        self.loop: TrainingLoop | None = None

    @property
    def num_envs(self) -> int:
        assert self.loop is not None
        return self.loop.env.num_envs

    def start(self, loop: TrainingLoop) -> None:
        """Once the loop is made (a resume restored), before the env is reset."""
        self.loop = loop

    def first_stats(self, lr: float) -> dict[str, float]:
        """The statistics reported before any training."""
        return {"learning_rate": lr}

    def random_actions(self) -> np.ndarray:
        """The warm-up's actions (the buffer's form)."""
        raise NotImplementedError

    def act(self, obs: Any, t: int) -> np.ndarray:
        """The policy's exploring actions for ``obs``, ``t`` env steps into the run."""
        raise NotImplementedError

    def train_and_act(self, obs: Any, phases: int, lr: float
                      ) -> tuple[dict[str, float], np.ndarray]:
        """``phases`` training phases, then :meth:`act`'s actions: one compiled call."""
        raise NotImplementedError

    def train(self, t: int, lr: float) -> dict[str, float]:
        """One training phase after the step that brought the count to ``t``."""
        raise NotImplementedError

    def to_env(self, actions: np.ndarray) -> np.ndarray:
        """The actions the env takes for the stored ``actions``."""
        return actions

    def n_updates(self) -> int:
        """Gradient steps taken."""
        raise NotImplementedError

    def before_step(self, t: int, warming_up: bool, stored: int) -> None:
        """After acting, before the env step (``stored`` transitions in the buffer)."""

    def after_step(self, obs: Any, step: dict[str, Any], t: int) -> None:
        """After the step from ``obs`` (``step``: SB3's locals) brought the count to ``t``;
        before the training that follows it."""

    def after_training(self, t: int, started: bool) -> None:
        """After the phases that follow the step to ``t``; ``started``: past the warm-up."""

    def extra_stats(self) -> dict[str, float]:
        """Statistics of this algorithm's own, reported with every iteration."""
        return {}

    def finish(self, loop: TrainingLoop) -> None:
        """When the loop ends normally."""


def run_off_policy(hooks: OffPolicyHooks[Any], env: VecEnv, total_timesteps: int,
                   options: LoopOptions) -> TrainingLoop:
    """Train ``hooks.model`` for ``total_timesteps`` more env steps (with ``resume``: up to
    that many in all) and return the finished loop."""
    config = cast(OffPolicyModel, hooks.model).config
    schedule = TrainSchedule(config.train_freq, config.gradient_steps, config.learning_starts,
                             config.batch_size)
    loop = TrainingLoop(hooks.model, env, total_timesteps, options, log_unit="episodes",
                        loss_names=hooks.loss_names,
                        writer=hooks.comm is None or mpi_rank() == 0, seed=config.seed,
                        comm=hooks.comm)
    hooks.start(loop)
    try:
        _iterate(hooks, loop, schedule)
    except EnvWaitInterrupted as exc:  # hung env workers killed on a stop request
        loop.stop_in_env_step(exc)
    except BaseException:
        if hooks.comm is not None:  # the other workers wait in a collective: stop the job
            traceback.print_exc()
            sys.stderr.flush()
            hooks.comm.Abort(1)
        raise
    hooks.finish(loop)
    return loop


def _iterate(hooks: OffPolicyHooks[Any], loop: TrainingLoop, schedule: TrainSchedule) -> None:
    """The vector steps, until the loop stops."""
    model, env = hooks.model, loop.env
    replay = cast(OffPolicyModel, model)
    lr_fn = get_schedule_fn(hooks.lr)
    num_envs = env.num_envs
    stats = hooks.first_stats(lr_fn(loop.progress_remaining))
    # After a resume's restore: normalized with the restored statistics.
    obs = reset_env(env, replay.replay_buffer)
    while loop.running():
        t = model.num_timesteps - (loop.start if hooks.run_clock else 0)
        stored = len(replay.replay_buffer)
        warming_up = schedule.warming_up(t)
        # The phases owed to the step that brought the count to t, run with this one's acting.
        phases = schedule.phases(t, num_envs, stored) if hooks.train_first else 0
        if warming_up and hooks.random_warmup:
            actions = hooks.random_actions()
        elif phases:
            lr = lr_fn(loop.progress_remaining)
            step_stats, actions = hooks.train_and_act(obs, phases, lr)
            stats.update(step_stats, learning_rate=lr)
        else:
            actions = hooks.act(obs, t)
        hooks.before_step(t, warming_up, stored)
        try:
            new_obs, rewards, done, infos = step_and_store(
                env, replay.replay_buffer, replay.raw_replay, loop.episodes, obs, actions,
                hooks.to_env(actions), replay.gamma)
            cut = None
        except EnvWaitInterrupted as exc:  # hung env workers killed on a stop request
            cut = exc
        if loop.env_step_cut(cut):  # here or on another MPI rank: no training on this step
            return
        step = {"new_obs": new_obs, "rewards": rewards, "dones": done, "infos": infos,
                "actions": actions}
        t += num_envs
        hooks.after_step(obs, step, t)
        obs = new_obs
        started = False
        if not hooks.train_first:
            stored = len(replay.replay_buffer)
            started = schedule.started(t, stored)
            for _ in range(schedule.phases(t, num_envs, stored)):
                lr = lr_fn(loop.progress_remaining)
                stats.update(hooks.train(t, lr), learning_rate=lr, n_updates=hooks.n_updates())
        hooks.after_training(t, started)
        if hooks.train_first:
            stats["n_updates"] = hooks.n_updates()
        stats.update(hooks.extra_stats())
        if loop.end_iteration(num_envs, stats, step=step):
            break
