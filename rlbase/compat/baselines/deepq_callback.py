"""The adapter that runs Baselines' deepq ``callback(lcl, glb)`` in rlbase's loop, made by
:func:`rlbase.compat.baselines.callback_form.translate` (which tells and declares the form)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlbase.common.errors import RLBaseError
from rlbase.common.logs import logger
from rlbase.common.vec_env.base import VecEnv, find_wrapper
from rlbase.common.vec_env.vec_monitor import VecMonitor

#: Baselines' callback: ``fn(lcl, glb)``, a true value stops
BaselinesFn = Callable[[dict[str, Any], dict[str, Any]], Any]


class BaselinesCallback:
    """Calls a Baselines deepq callback as ``fn(lcl, glb)`` from rlbase's loop, where Baselines
    called it: before every env step, at ``t = 0, 1, ..., total_timesteps - 1``; training stops
    when it returns a true value (after ``t`` steps). The loop calls
    :meth:`before_first_step` before its first step and the object after every step.

    ``lcl`` holds the loop's ``info`` plus Baselines' names: ``t`` (env steps of this learn()
    call so far; with ``resume``, of the whole run), ``total_timesteps`` (this call's),
    ``episode_rewards`` (the finished episodes' returns, then the running episode's, as
    Baselines kept the list), ``num_episodes`` (its length), ``done`` (whether the last step
    ended an episode) and ``act`` (the model, callable as Baselines' act).

    fn: the Baselines callback.
    env: the training VecEnv (one env, with a VecMonitor: the returns are the monitor's).
    total_timesteps: the env steps this learn() call trains for.
    glb: what ``fn`` gets as globals (the algorithm module's, as Baselines passed its own).
    """

    def __init__(self, fn: BaselinesFn, env: VecEnv, total_timesteps: int,
                 glb: dict[str, Any]):
        if env.num_envs != 1:
            raise RLBaseError(
                f"a Baselines callback(lcl, glb) needs one env (its episode_rewards follow a "
                f"single env), got num_envs={env.num_envs}: use one env, or write "
                f"callback(model, info), which returns False to stop")
        monitor = find_wrapper(env, VecMonitor)
        if not isinstance(monitor, VecMonitor):
            raise RLBaseError("a Baselines callback(lcl, glb) needs a VecMonitor in the env")
        self.fn, self.monitor, self.glb = fn, monitor, glb
        self.total_timesteps = max(0, int(total_timesteps))
        self.episode_rewards: list[float] = [0.0]
        self._episodes = 0

    def before_first_step(self, model: Any, info: dict[str, Any]) -> bool:
        """The call before the first step (``t == 0``); False: stop before training."""
        self._episodes = info["episodes"]  # a resumed run's earlier episodes are not listed
        return self(model, info)

    def __call__(self, model: Any, info: dict[str, Any]) -> bool:
        if info["num_timesteps"] >= info["total_timesteps"]:
            return True  # the last step: Baselines' loop ended without a call
        rewards = self.episode_rewards
        ended = info["episodes"] - self._episodes
        self._episodes = info["episodes"]
        if ended > 0:
            recent = list(info["ep_infos"])[-ended:]
            rewards[-1:] = [float(ep["r"]) for ep in recent]
            rewards.append(0.0)
        rewards[-1] = float(self.monitor.running_returns[0])
        # The loop's total_timesteps is where the run ends; Baselines' is this call's budget.
        start = info["total_timesteps"] - self.total_timesteps
        lcl = {**info, "t": info["num_timesteps"] - start,
               "total_timesteps": self.total_timesteps, "episode_rewards": rewards,
               "num_episodes": len(rewards), "done": ended > 0, "act": model}
        if self.fn(lcl, self.glb):
            logger.log(f"the Baselines callback(lcl, glb) returned True at t={lcl['t']}: "
                       f"training stops (Baselines' meaning)")
            return False
        return True
