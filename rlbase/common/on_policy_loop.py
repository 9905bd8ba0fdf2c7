"""The parts of an on-policy learn() loop that A2C and PPO share: set-up and per-update
bookkeeping (non-finite checks, logging, the callback)."""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from rlbase.common import logger
from rlbase.common.cmd_util import as_vec_env
from rlbase.common.errors import NonFiniteError
from rlbase.common.misc_util import safemean, set_global_seeds
from rlbase.common.policies import ActorCriticPolicy, build_policy, is_image_space
from rlbase.common.rollout import RolloutRunner
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
    """Checks, logs and reports each update; :meth:`done` returns True to stop training."""

    def __init__(self, algorithm: str, model: Any, runner: RolloutRunner, nupdates: int,
                 log_interval: int, callback: Callable[[Any, dict[str, Any]], Any] | None):
        self.algorithm, self.model, self.runner = algorithm, model, runner
        self.nupdates, self.log_interval, self.callback = nupdates, log_interval, callback
        self.nbatch = runner.nenv * runner.nsteps
        self.tstart = time.perf_counter()

    def done(self, update: int, stats: dict[str, float],
             extra_logs: Callable[[], dict[str, float]] | None = None) -> bool:
        self.model.num_timesteps += self.nbatch
        for name in ("policy_loss", "value_loss"):
            if not np.isfinite(stats[name]):
                raise NonFiniteError(f"{self.algorithm}: {name} became {stats[name]} at "
                                     f"update {update}")
        if update % self.log_interval == 0 or update == 1 or update == self.nupdates:
            self._log(update, stats, extra_logs() if extra_logs else {})
        if self.callback is None:
            return False
        info = {"update": update, "num_timesteps": self.model.num_timesteps,
                "total_timesteps": self.nupdates * self.nbatch,
                "ep_infos": self.runner.ep_infos, **stats}
        return self.callback(self.model, info) is False

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
