"""The parts of an on-policy learn() loop that A2C and PPO share: set-up and per-update
bookkeeping (non-finite checks, logging, the callback, checkpoints and Ctrl-C)."""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from rlbase.common import logger
from rlbase.common.checkpoint import Checkpointer, generator_state, set_generator_state
from rlbase.common.cmd_util import as_vec_env
from rlbase.common.errors import NonFiniteError, RLBaseError
from rlbase.common.misc_util import safemean, set_global_seeds
from rlbase.common.policies import ActorCriticPolicy, build_policy, is_image_space
from rlbase.common.rollout import RolloutRunner
from rlbase.common.signals import stop_requested
from rlbase.common.tf_util import configure_threads
from rlbase.common.vec_env import VecEnv


def setup(env: Any, seed: int | None, network: Any, network_kwargs: dict[str, Any]
          ) -> tuple[VecEnv, ActorCriticPolicy]:
    """Seed everything, make ``env`` a VecEnv, size TF's threads and build the policy."""
    set_global_seeds(seed)
    env = as_vec_env(env, seed)
    configure_threads(small_model=not is_image_space(env.observation_space))
    kwargs = dict(network_kwargs)
    value_network = kwargs.pop("value_network", None)
    policy = build_policy(env.observation_space, env.action_space, network, value_network,
                          **kwargs)
    return env, policy


class UpdateBookkeeper:
    """Checks, logs, reports and checkpoints each update; :meth:`done` returns True to stop
    training (the callback said so, or Ctrl-C: see rlbase.common.signals)."""

    def __init__(self, algorithm: str, model: Any, runner: RolloutRunner, nupdates: int,
                 log_interval: int, callback: Callable[[Any, dict[str, Any]], Any] | None,
                 checkpointer: Checkpointer | None = None):
        self.algorithm, self.model, self.runner = algorithm, model, runner
        self.nupdates, self.log_interval, self.callback = nupdates, log_interval, callback
        self.checkpointer = checkpointer
        self.nbatch = runner.nenv * runner.nsteps
        self.tstart = time.perf_counter()

    def restore(self) -> int:
        """Continue from the newest checkpoint; returns the first update to run (1 if none)."""
        resumed = self.checkpointer.restore(self.model) if self.checkpointer else None
        if resumed is None:
            return 1
        loop, arrays = resumed
        self.runner.ep_infos.extend(loop.get("ep_infos", []))
        actor = self.model.calls.actor
        if actor is not None and loop.get("actor_rng") is not None:
            set_generator_state(actor.rng, loop["actor_rng"])
        for name, value in _extra_state(self.model).items():
            if name not in arrays or np.shape(arrays[name]) != np.shape(value):
                raise RLBaseError(f"checkpoint lacks {name} (or its shape differs): it was "
                                  "written by a run with other settings")
            if hasattr(value, "assign"):
                value.assign(arrays[name])
            else:
                value[...] = arrays[name]
        return int(loop["update"]) + 1

    def _checkpoint(self, update: int) -> None:
        actor = self.model.calls.actor
        loop = {"update": update,
                "ep_infos": [{k: float(v) for k, v in ep.items() if k in ("r", "l", "t")}
                             for ep in self.runner.ep_infos],
                "actor_rng": None if actor is None else generator_state(actor.rng)}
        arrays = {name: np.asarray(v) for name, v in _extra_state(self.model).items()}
        path = self.checkpointer.save(self.model, loop, arrays)
        logger.log(f"Checkpoint at update {update}: {path}")

    def done(self, update: int, stats: dict[str, float],
             extra_logs: Callable[[], dict[str, float]] | None = None) -> bool:
        self.model.num_timesteps += self.nbatch
        for name in ("policy_loss", "value_loss"):
            if not np.isfinite(stats[name]):
                raise NonFiniteError(f"{self.algorithm}: {name} became {stats[name]} at "
                                     f"update {update}")
        if update % self.log_interval == 0 or update == 1 or update == self.nupdates:
            self._log(update, stats, extra_logs() if extra_logs else {})
        stop = False
        if self.callback is not None:
            info = {"update": update, "num_timesteps": self.model.num_timesteps,
                    "total_timesteps": self.nupdates * self.nbatch,
                    "ep_infos": self.runner.ep_infos, **stats}
            stop = self.callback(self.model, info) is False
        stop = stop or stop_requested()
        ckpt = self.checkpointer
        if ckpt is not None and (ckpt.due(self.model.num_timesteps) or (stop and ckpt.active)):
            self._checkpoint(update)
        return stop

    def _log(self, update: int, stats: dict[str, float], extra: dict[str, float]) -> None:
        elapsed = time.perf_counter() - self.tstart
        episodes = self.runner.ep_infos
        logger.record_tabular("time/nupdates", update)
        logger.record_tabular("time/total_timesteps", self.model.num_timesteps)
        logger.record_tabular("time/fps", int(update * self.nbatch / elapsed))
        logger.record_tabular("time/time_elapsed", elapsed)
        for name, value in stats.items():
            logger.record_tabular(f"train/{name}", value)
        logger.record_tabular("rollout/eprewmean", safemean(ep["r"] for ep in episodes))
        logger.record_tabular("rollout/eplenmean", safemean(ep["l"] for ep in episodes))
        for key, value in extra.items():
            logger.record_tabular(key, value)
        logger.dump_tabular()


def _extra_state(model: Any) -> dict[str, Any]:
    """State outside the model file that resuming needs: the policy's sampling counter (the
    TF act path's stateless random draws), PPO's minibatch shuffling seed and VecNormalize's
    running returns."""
    out: dict[str, Any] = {}
    policy = getattr(model, "policy", None)
    if getattr(policy, "sample_seed", None) is not None:
        out["loop/sample_seed"] = policy.sample_seed
    if getattr(model, "shuffle_seed", None) is not None:
        out["loop/shuffle_seed"] = model.shuffle_seed
    if getattr(model, "vec_normalize", None) is not None:
        out["loop/vec_normalize_returns"] = model.vec_normalize.returns
    return out
