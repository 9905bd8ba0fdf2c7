"""DDPG's training loop: cycles of rollout steps, each fused with its gradient steps, with
resumable checkpoints and a clean stop on Ctrl-C.

The loop's position (epoch, cycle, rollout step) is explicit state, so a checkpoint written
after any env step can be continued exactly there: the gradient-step schedule within a cycle
depends on that position. A resumed run resets its envs (episodes in progress are lost) and
starts its epoch statistics afresh; everything that shapes training comes back bit-for-bit.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Callable

import numpy as np

from rlbase.common import logger
from rlbase.common.checkpoint import (
    Checkpointer,
    generator_state,
    object_state,
    restore_object_state,
    set_generator_state,
)
from rlbase.common.errors import NonFiniteError, RLBaseError
from rlbase.common.mpi_util import allreduce_mean, check_synced, mpi_rank
from rlbase.common.replay_buffer import ReplayBuffer
from rlbase.common.signals import stop_requested
from rlbase.common.tf_util import assign_from_arrays, variables_to_arrays
from rlbase.common.vec_env import VecEnv
from rlbase.ddpg.agent import DDPGModel, scale_actions

# Logged per epoch, averaged over MPI workers (eval/* come from each worker's own eval env).
SHARED_KEYS = ("rollout/return", "rollout/return_std", "rollout/return_history",
               "rollout/return_history_std", "rollout/episode_steps", "rollout/episodes",
               "rollout/actions_mean", "rollout/actions_std", "rollout/Q_mean",
               "train/loss_actor", "train/loss_critic", "train/param_noise_distance",
               "train/param_noise_stddev", "total/steps_per_second")


class _Epoch:
    """What one epoch's log line is computed from."""

    def __init__(self, n_eval_envs: int):
        self.ep_returns: list[float] = []
        self.ep_steps: list[int] = []
        self.actions: list[np.ndarray] = []
        self.qs: list[np.ndarray] = []
        self.losses: list[tuple[float, float]] = []
        self.distances: list[float] = []
        self.eval_returns: list[float] = []
        self.eval_qs: list[np.ndarray] = []
        self.eval_running = np.zeros(n_eval_envs)


class TrainingLoop:
    """Runs ``learn``'s loop; ``checkpointer`` writes checkpoints, ``resumed`` is what
    :meth:`Checkpointer.restore` returned (None: a fresh run)."""

    def __init__(self, model: DDPGModel, env: VecEnv, eval_env: VecEnv | None, total: int,
                 cycles: int, rollout_steps: int, train_steps: int, eval_steps: int,
                 batch_size: int, buffer_size: int, reward_scale: float, learning_starts: int,
                 adapt_interval: int, render: bool, render_eval: bool, comm: Any | None,
                 seed: int | None, callback: Callable | None, checkpointer: Checkpointer):
        self.model, self.env, self.eval_env, self.total = model, env, eval_env, total
        self.cycles, self.rollout_steps, self.train_steps = cycles, rollout_steps, train_steps
        self.eval_steps, self.batch_size, self.reward_scale = eval_steps, batch_size, reward_scale
        self.learning_starts, self.adapt_interval = learning_starts, adapt_interval
        self.render, self.render_eval, self.comm, self.callback = render, render_eval, comm, \
            callback
        self.checkpointer = checkpointer
        self.rng = np.random.default_rng(None if seed is None else seed + 7)
        self.buffer = ReplayBuffer(buffer_size, model.ob_space.shape, np.float32,
                                   ac_shape=model.ac_space.shape, ac_dtype=np.float32)
        model.replay_buffer = self.buffer  # kept for inspection and for continuing in a script
        model.loop_rng = self.rng  # minibatch sampling and random warm-up actions (inspection)
        self.nenvs = env.num_envs
        # Position: steps taken, epochs started, cycle in the epoch, rollout step in the cycle.
        self.t, self.epoch, self.cycle, self.r = 0, 0, 0, 0
        self.grad_steps = 0
        self.history: deque[float] = deque(maxlen=100)
        self.eval_history: deque[float] = deque(maxlen=100)

    # -- checkpoints -------------------------------------------------------------------------
    def _save_checkpoint(self) -> None:
        model, learner = self.model, self.model.learner
        replay_meta, arrays = object_state(self.buffer, "replay")
        noise_meta = None
        if model.action_noise is not None:
            noise_meta, noise_arrays = model.action_noise.state("action_noise")
            arrays.update(noise_arrays)
        if learner.perturbed_actor is not None:  # drawn at the episode's start, not derivable
            arrays.update(variables_to_arrays(learner.perturbed_actor.weights,
                                              "perturbed_actor"))
        self.checkpointer.save(model, {
            "t": self.t, "epoch": self.epoch, "cycle": self.cycle, "r": self.r,
            "grad_steps": self.grad_steps, "history": list(self.history),
            "eval_history": list(self.eval_history), "replay": replay_meta,
            "loop_rng": generator_state(self.rng), "learner_rng": generator_state(learner.rng),
            "action_noise": noise_meta}, arrays)

    def restore(self, loop: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Put a checkpoint's loop state back (after the env reset and the fresh noise
        draw, which it replaces)."""
        model, learner = self.model, self.model.learner
        try:
            restore_object_state(self.buffer, loop["replay"], arrays, "replay")
            set_generator_state(self.rng, loop["loop_rng"])
            set_generator_state(learner.rng, loop["learner_rng"])
            if model.action_noise is not None:
                model.action_noise.set_state(loop["action_noise"], arrays, "action_noise")
            if learner.perturbed_actor is not None:
                assign_from_arrays(learner.perturbed_actor.weights, arrays, "perturbed_actor")
            self.t, self.epoch = int(loop["t"]), int(loop["epoch"])
            self.cycle, self.r = int(loop["cycle"]), int(loop["r"])
            self.grad_steps = int(loop["grad_steps"])
            self.history.extend(float(x) for x in loop["history"])
            self.eval_history.extend(float(x) for x in loop["eval_history"])
        except (KeyError, TypeError, ValueError) as exc:
            raise RLBaseError(f"ddpg checkpoint has a malformed loop state "
                              f"({type(exc).__name__}: {exc})") from exc
        if not (0 <= self.cycle < self.cycles and 0 <= self.r < self.rollout_steps):
            raise RLBaseError(f"ddpg checkpoint stopped at cycle {self.cycle}, rollout step "
                              f"{self.r}: this run has nb_epoch_cycles={self.cycles} and "
                              f"nb_rollout_steps={self.rollout_steps}; resume with the same")

    # -- the loop ----------------------------------------------------------------------------
    def _gradient_steps(self, r: int) -> int:
        """Gradient steps due at rollout step r of a cycle (they sum to train_steps)."""
        t, n = self.train_steps, self.rollout_steps
        return (r + 1) * t // n - r * t // n

    def _batch(self) -> tuple[np.ndarray, ...]:
        g, b = self.model.learner.max_steps, self.batch_size
        batch = self.buffer.get(self.buffer.sample_indices(g * b, self.rng))
        return tuple(x.reshape(g, b, *x.shape[1:]) for x in
                     (batch.obs, batch.actions, batch.rewards, batch.next_obs, batch.dones))

    def run(self, resumed: tuple[dict[str, Any], dict[str, np.ndarray]] | None) -> None:
        model, env, nenvs = self.model, self.env, self.nenvs
        self.obs = env.reset()
        model.reset_noise()
        if resumed is not None:
            self.restore(*resumed)
        self.running, self.lengths = np.zeros(nenvs), np.zeros(nenvs, dtype=int)
        self.eval_obs = self.eval_env.reset() if self.eval_env is not None else None
        n_eval = self.eval_env.num_envs if self.eval_env is not None else 0
        start_t, tstart = self.t, time.perf_counter()
        acc, stats = _Epoch(n_eval), {}
        while self.t < self.total:
            if self.cycle == 0 and self.r == 0:
                self.epoch += 1
                acc = _Epoch(n_eval)
            if self.r == 0 and nenvs > 1:  # episodes end at different times: once per cycle
                model.reset_noise()
            stats = self._step(acc, stats)
            self.r += 1
            stop = stop_requested()
            logged = False
            if self.r == self.rollout_steps or self.t >= self.total:
                if self.eval_env is not None:
                    self.eval_obs = self._evaluate(self.eval_obs, acc)
                if self.callback is not None and self.callback(model, {
                        "num_timesteps": model.num_timesteps, "total_timesteps": self.total,
                        "epoch": self.epoch, **stats}) is False:
                    self.total = self.t
                self.r, self.cycle = 0, self.cycle + 1
                if self.cycle == self.cycles or self.t >= self.total:
                    self._log(acc, start_t, tstart)
                    self.cycle, logged = 0, True
            if self.checkpointer.due(model.num_timesteps) or \
                    (stop and self.checkpointer.active):
                self._save_checkpoint()
            if stop:
                if not logged:  # the epoch so far, so the last line shows where it stopped
                    self._log(acc, start_t, tstart)
                logger.log(f"ddpg: stopped at {model.num_timesteps} timesteps on request")
                break

    def _step(self, acc: _Epoch, stats: dict[str, float]) -> dict[str, float]:
        """Rollout step ``self.r`` of the cycle, with its gradient steps."""
        model, nenvs, obs = self.model, self.nenvs, self.obs
        n = self._gradient_steps(self.r)
        if self.t < self.learning_starts:
            actions = self.rng.uniform(-1.0, 1.0, (nenvs, *model.ac_space.shape))
        elif n and len(self.buffer) >= self.batch_size:
            stats, actions, q = model.train_and_act(self._batch(), n, obs)
            for name in ("loss_critic", "loss_actor"):
                # loss_actor is NaN by design when policy_delay left no actor step.
                if not np.isfinite(stats[name]) and (name == "loss_critic" or
                                                     stats["actor_steps"] > 0):
                    raise NonFiniteError(f"ddpg: {name} became {stats[name]} at gradient "
                                         f"step {self.grad_steps + n}")
            acc.losses.append((stats["loss_actor"], stats["loss_critic"]))
            acc.qs.append(q)
            acc.distances += self._maybe_adapt(n)
        else:
            actions, q = model.act(obs, explore=True)
            acc.qs.append(q)
        acc.actions.append(actions)
        new_obs, rewards, terminated, truncated, infos = self.env.step(
            scale_actions(actions, model.low, model.high))
        if self.render:
            self.env.render()
        done = np.logical_or(terminated, truncated)
        next_obs = new_obs
        if done.any():  # the true last observation, not the next episode's first
            next_obs = new_obs.copy()
            for i in np.flatnonzero(done):
                final = infos[i].get("final_observation")
                if final is not None:
                    next_obs[i] = final
        self.buffer.add(obs, actions, rewards * self.reward_scale, next_obs, terminated,
                        truncated)
        model.update_obs_stats(obs)
        self.obs = new_obs
        self.t += nenvs
        model.num_timesteps += nenvs
        self.running += rewards
        self.lengths += 1
        for i in np.flatnonzero(done):
            acc.ep_returns.append(self.running[i])
            acc.ep_steps.append(self.lengths[i])
            self.history.append(self.running[i])
            self.running[i], self.lengths[i] = 0.0, 0
            if nenvs == 1:
                model.reset_noise()
        return stats

    def _maybe_adapt(self, n: int) -> list[float]:
        before = self.grad_steps
        self.grad_steps += n
        model = self.model
        if model.param_noise is None or \
                self.grad_steps // self.adapt_interval == before // self.adapt_interval:
            return []
        obs = self.buffer.get(self.buffer.sample_indices(self.batch_size, self.rng)).obs
        return [model.adapt_param_noise(obs)]

    def _evaluate(self, obs: np.ndarray, acc: _Epoch) -> np.ndarray:
        env, model = self.eval_env, self.model
        for _ in range(self.eval_steps):
            actions, q = model.act(obs, explore=False)
            obs, rewards, terminated, truncated, _ = env.step(
                scale_actions(actions, model.low, model.high))
            if self.render_eval:
                env.render()
            acc.eval_running += rewards
            acc.eval_qs.append(q)
            for i in np.flatnonzero(np.logical_or(terminated, truncated)):
                acc.eval_returns.append(acc.eval_running[i])
                self.eval_history.append(acc.eval_running[i])
                acc.eval_running[i] = 0.0
        return obs

    def _log(self, acc: _Epoch, start_t: int, tstart: float) -> None:
        duration = time.perf_counter() - tstart
        acts = np.concatenate(acc.actions) if acc.actions else np.zeros(1)
        loss = np.array(acc.losses) if acc.losses else np.full((1, 2), np.nan)
        actor_losses = loss[np.isfinite(loss[:, 0]), 0]
        noise = self.model.param_noise

        def mean(x: Any) -> float:
            return float(np.mean(x)) if len(x) else float("nan")

        def std(x: Any) -> float:
            return float(np.std(x)) if len(x) else float("nan")

        values = [mean(acc.ep_returns), std(acc.ep_returns), mean(self.history),
                  std(self.history), mean(acc.ep_steps), len(acc.ep_returns),
                  float(acts.mean()), float(acts.std()),
                  mean(np.concatenate(acc.qs)) if acc.qs else float("nan"), mean(actor_losses),
                  float(loss[:, 1].mean()), mean(acc.distances),
                  noise.current_stddev if noise is not None else float("nan"),
                  (self.t - start_t) / max(duration, 1e-9)]  # this process's steps only
        size = 1
        if self.comm is not None:
            size = self.comm.Get_size()
            values = allreduce_mean(np.array(values), self.comm).tolist()
            check_synced(self.model.learner.synced_variables, self.comm)
        if mpi_rank() != 0:
            return
        for key, value in zip(SHARED_KEYS, values):
            logger.record_tabular(key, value)
        if self.eval_env is not None:
            logger.record_tabular("eval/return", mean(acc.eval_returns))
            logger.record_tabular("eval/return_history", mean(self.eval_history))
            logger.record_tabular("eval/Q", mean(np.concatenate(acc.eval_qs)) if acc.eval_qs
                                  else float("nan"))
            logger.record_tabular("eval/episodes", len(acc.eval_returns))
        logger.record_tabular("total/sps_all_workers", values[-1] * size)
        logger.record_tabular("total/duration", duration)
        logger.record_tabular("total/epochs", self.epoch)
        logger.record_tabular("total/steps", self.t * size)
        logger.dump_tabular()
