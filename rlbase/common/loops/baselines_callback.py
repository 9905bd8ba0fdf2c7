"""Baselines' deepq callback, ``callback(lcl, glb)`` returning True to stop, in a learn() whose
own callbacks are ``callback(model, info)`` returning False to stop.

Both take two positional arguments, so the form is told by the parameters' names, the way a
Baselines script spells them (``def callback(lcl, _glb)``): a first parameter named like
``lcl``/``locals`` and a second named like ``glb``/``globals`` (leading or trailing
underscores aside) is Baselines' form. ``baselines_callback(fn)`` declares the form for any
callable (a lambda, a partial, a callable object). A callback with one name of each kind is
refused: it cannot be told which meaning its return value has.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from rlbase.common.errors import RLBaseError
from rlbase.common.logs import logger
from rlbase.common.vec_env.base import VecEnv, find_wrapper
from rlbase.common.vec_env.vec_monitor import VecMonitor

LOCALS_NAMES = frozenset({"lcl", "lcls", "locals", "local_vars", "loc"})
GLOBALS_NAMES = frozenset({"glb", "glbs", "globals", "global_vars", "gbl", "glob"})

BaselinesFn = Callable[[dict[str, Any], dict[str, Any]], Any]


class BaselinesForm:
    """A callable declared to be a Baselines deepq callback (see :func:`baselines_callback`)."""

    def __init__(self, fn: BaselinesFn):
        if not callable(fn):
            raise RLBaseError(f"baselines_callback takes a callable, got {fn!r}")
        self.fn = fn

    def __call__(self, lcl: dict[str, Any], glb: dict[str, Any]) -> Any:
        return self.fn(lcl, glb)


def baselines_callback(fn: BaselinesFn) -> BaselinesForm:
    """Declare ``fn`` a Baselines deepq callback: called as ``fn(lcl, glb)`` after every env
    step, training stops when it returns a true value."""
    return fn if isinstance(fn, BaselinesForm) else BaselinesForm(fn)


def _first_two_names(fn: Any) -> tuple[str | None, str | None]:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: rlbase's form
        return None, None
    names: list[str | None] = [p.name.strip("_") for p in params
                                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names += [None, None]
    return names[0], names[1]


def is_baselines_form(callback: Any) -> bool:
    """Whether ``callback`` is Baselines' ``callback(lcl, glb)`` (True stops) rather than
    ``callback(model, info)`` (False stops); a callback named half one way, half the other,
    is refused."""
    if isinstance(callback, BaselinesForm):
        return True
    if callback is None:
        return False
    first, second = _first_two_names(callback)
    is_locals, is_globals = first in LOCALS_NAMES, second in GLOBALS_NAMES
    if is_locals != is_globals:
        raise RLBaseError(
            f"callback{_signature(callback)} is named half as Baselines' callback(lcl, glb) "
            f"(True stops) and half as rlbase's callback(model, info) (False stops): name its "
            f"parameters (lcl, glb) or (model, info), or wrap it in baselines_callback(fn)")
    return is_locals


def _signature(fn: Any) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "(...)"


class BaselinesCallback:
    """Calls a Baselines deepq callback as ``fn(lcl, glb)`` from rlbase's loop, where Baselines
    called it: before every env step, at ``t = 0, 1, ..., total_timesteps - 1``; training stops
    when it returns a true value (after ``t`` steps). The algorithm calls :meth:`start` before
    its first step, the loop calls the object after every step.

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

    def start(self, model: Any, info: dict[str, Any]) -> bool:
        """The call before the first step (``t == 0``); True: stop before training."""
        self._episodes = info["episodes"]  # a resumed run's earlier episodes are not listed
        return not self(model, info)

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
