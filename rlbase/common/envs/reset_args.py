"""Calling an env's ``reset`` with only the arguments it declares.

gymnasium's ``reset(*, seed=None, options=None)`` is the norm, but hand-written envs often
declare ``reset(self)`` or ``reset(self, seed=None)``. What a ``reset`` accepts is read once
(when the env is wrapped), not tried on every call.
"""

from __future__ import annotations

import inspect
from typing import Any

import gymnasium as gym
from gymnasium.utils import seeding

from rlbase.common.errors import RLBaseError

RESET_ARGUMENTS = frozenset({"seed", "options"})


def reset_arguments(env: gym.Env) -> frozenset[str]:
    """Which of ``seed`` and ``options`` ``env.reset`` takes (``**kwargs`` takes both)."""
    try:
        parameters = inspect.signature(env.reset).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: assume gymnasium's
        return RESET_ARGUMENTS
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return RESET_ARGUMENTS
    return RESET_ARGUMENTS & {p.name for p in parameters}


def reset_with(env: gym.Env, accepted: frozenset[str], seed: int | None = None,
               options: dict[str, Any] | None = None, **extra: Any) -> Any:
    """``env.reset(seed=..., options=...)`` passing only what ``accepted`` lists.

    A seed for an env whose ``reset`` takes none seeds its ``np_random`` (what
    ``gymnasium.Env.reset(seed=...)`` does); options it cannot take are refused.
    """
    kwargs = dict(extra)
    if "seed" in accepted:
        kwargs["seed"] = seed
    elif seed is not None:
        env.unwrapped._np_random, _ = seeding.np_random(seed)
    if "options" in accepted:
        kwargs["options"] = options
    elif options is not None:
        raise RLBaseError(f"{type(env.unwrapped).__name__}.reset takes no 'options' argument, "
                          f"got options={options!r}: add an options parameter to its reset")
    return env.reset(**kwargs)
