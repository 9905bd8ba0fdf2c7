"""The on-policy loop, written once: A2C, ACKTR, PPO, TRPO, GAIL and ACER run on it.

Each iteration reads the schedules at the progress remaining, collects one rollout of
``nsteps`` steps per env, hands it to the algorithm's update, averages the statistics over
MPI workers where the algorithm has them, runs what the algorithm does after its update (ACER's
replay) and ends the iteration in :class:`~rlbase.common.loops.training_loop.TrainingLoop`, which
logs, calls the callbacks, evaluates and checkpoints. An algorithm supplies only its own steps::

    return run_on_policy(model, env, total_timesteps, options, loss_names=LOSSES,
                         rollouts=policy_rollouts(config.gamma),
                         schedule=learning_rate(config.lr, config.lrschedule),
                         update=lambda rollout, current, _: model.train(
                             rollout, current["learning_rate"]))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from rlbase.common.base_model import BaseModel
from rlbase.common.families.actor_critic import OnPolicyModel
from rlbase.common.loops.rollout import RolloutRunner
from rlbase.common.loops.signals import EnvWaitInterrupted
from rlbase.common.loops.training_loop import LoopOptions, TrainingLoop
from rlbase.common.mpi_util import mpi_rank
from rlbase.common.schedules import get_schedule_fn, named_schedule
from rlbase.common.vec_env import VecEnv

ModelT = TypeVar("ModelT", bound=BaseModel)
Stats = dict[str, float]
#: the schedules' values at the progress remaining (1 -> 0), logged after the update's stats
Schedule = Callable[[float], Stats]
#: update(rollout, current values, iteration number) -> (statistics, the policy's step on the
#: next observations when the update computed it, else None)
Update = Callable[[Any, Stats, int], "tuple[Stats, Any]"]
#: workers_mean(statistics, check the workers' weights agree) -> the statistics averaged
WorkersMean = Callable[[Stats, bool], Stats]
#: after_update(rollout, current values, iteration number) -> more values to log
AfterUpdate = Callable[[Any, Stats, int], Stats]


class Rollouts(Protocol):
    """Where the loop's rollouts come from."""

    #: env steps in each rollout, summed over the envs
    steps: int

    def collect(self, loop: TrainingLoop) -> Any | None:
        """The next rollout; None when an SB3 callback stopped training in the middle of it."""

    def hand_back(self, pending: Any) -> None:
        """The update's step on the current observations (None: none), acted on next."""


class PolicyRollouts:
    """:class:`~rlbase.common.loops.rollout.RolloutRunner`'s rollouts, with SB3's rollout hooks
    run around each of them and after every vector step."""

    def __init__(self, runner: RolloutRunner):
        self.runner = runner
        self.steps = runner.num_envs * runner.nsteps

    def collect(self, loop: TrainingLoop) -> Any | None:
        return self.runner.run(loop.rollout_hooks)

    def hand_back(self, pending: Any) -> None:
        self.runner.pending = pending


def policy_rollouts(gamma: float, action_masks: bool | str = False
                    ) -> Callable[[TrainingLoop], Rollouts]:
    """The rollouts of A2C, ACKTR, PPO, TRPO and GAIL (truncations bootstrapped with
    ``gamma``; actions masked as ``action_masks`` says, see
    :mod:`rlbase.common.loops.action_masks`), made once the loop has restored a checkpoint
    on resume."""
    def make(loop: TrainingLoop) -> Rollouts:
        model = loop.model
        assert isinstance(model, OnPolicyModel)
        return PolicyRollouts(RolloutRunner(loop.env, model, nsteps=model.nsteps, gamma=gamma,
                                            episodes=loop.episodes, action_masks=action_masks))
    return make


def learning_rate(lr: float | Callable[[float], float], lrschedule: str = "constant"
                  ) -> Schedule:
    """``learning_rate`` at the progress remaining: ``lr`` itself when it is a function of
    it, else the named schedule (Baselines' ``lrschedule``: 'constant', 'linear', ...) of
    ``lr``."""
    lr_fn = get_schedule_fn(lr) if callable(lr) else named_schedule(lrschedule, lr)
    return lambda progress: {"learning_rate": lr_fn(progress)}


def update_with_learning_rate(model: OnPolicyModel) -> Update:
    """The update of A2C and ACKTR: ``model.train(rollout, learning rate)``."""
    return lambda rollout, current, _: model.train(rollout, current["learning_rate"])


def run_on_policy(model: ModelT, env: VecEnv, total_timesteps: int, options: LoopOptions, *,
                  loss_names: tuple[str, ...], rollouts: Callable[[TrainingLoop], Rollouts],
                  update: Update, schedule: Schedule = lambda _: {}, comm: Any = None,
                  workers_mean: WorkersMean | None = None,
                  after_update: AfterUpdate | None = None) -> ModelT:
    """Train ``model`` for ``total_timesteps`` more env steps (with ``resume``: up to that
    many in all), one update per rollout (of ``num_envs * nsteps`` env steps).

    loss_names: the statistics that must stay finite.
    rollouts: makes the collector, given the loop (after a resume's restore).
    update: one update on a rollout (its statistics, and its step on the next observations).
    schedule: the current values (learning rate, clip range...) at the progress remaining.
    comm: the MPI workers that stop together (None: this process alone); under MPI every
        rank runs the loop and rank 0 writes checkpoints.
    workers_mean: the statistics averaged over the workers, checking every ``log_interval``
        iterations that their weights agree.
    after_update: what follows the update (ACER's replay), returning more values to log.
    """
    loop = TrainingLoop(model, env, total_timesteps, options, loss_names=loss_names,
                        writer=mpi_rank() == 0, seed=model.config.seed, comm=comm)
    source = rollouts(loop)
    nbatch = source.steps
    for _ in range(loop.iterations_left(nbatch)):
        current = schedule(loop.progress_remaining)
        try:
            rollout, cut = source.collect(loop), None
        except EnvWaitInterrupted as exc:  # hung env workers killed on a stop request
            rollout, cut = None, exc
        if loop.env_step_cut(cut):  # here or on another MPI rank: no update
            break
        if rollout is None:  # an SB3 callback stopped training mid-rollout
            break
        iteration = loop.iterations + 1
        stats, pending = update(rollout, current, iteration)
        source.hand_back(pending)
        if workers_mean is not None:
            stats = workers_mean(stats, iteration % options.log_interval == 0)
        extra = after_update(rollout, current, iteration) if after_update is not None else {}
        if loop.end_iteration(nbatch, {**stats, **current, **extra}):
            break
    return model
