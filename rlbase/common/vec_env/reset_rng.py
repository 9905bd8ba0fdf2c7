"""Each env's note of how its last reset can be repeated, so that a run resumed from a
checkpoint taken at an episode boundary draws the first observations the uninterrupted run drew
(a resume otherwise seeds the envs again and replays the run's first episodes)."""

from __future__ import annotations

import copy
import json
from typing import Any

import gymnasium as gym

from rlbase.common.envs.reset_args import reset_arguments, reset_with


class ResetNotes(gym.Wrapper):
    """Notes, at each reset, how to repeat it: the seed it was given, or the env's random state
    just before it (gymnasium envs draw their initial states from ``np_random``).

    ``last_reset``: that note (JSON-able; None where the random state is not).
    ``replay_reset``: a note to repeat at the next reset that is given no seed (a resume).
    The wrapped env's ``reset`` is called with only the arguments it declares.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._reset_arguments = reset_arguments(env)
        self.last_reset: dict[str, Any] | None = None
        self.replay_reset: dict[str, Any] | None = None

    @property
    def spec(self) -> Any:  # type: ignore[override]  # read-only here, on purpose
        """The wrapped env's: a transparent note-taker, not part of what ``gym.make(spec)``
        re-makes."""
        return self.env.spec

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Any, dict[str, Any]]:
        replay, self.replay_reset = self.replay_reset, None
        if seed is None and replay is not None:
            if "seed" in replay:
                seed = int(replay["seed"])
            else:
                self.unwrapped.np_random.bit_generator.state = copy.deepcopy(replay["state"])
        self.last_reset = {"seed": int(seed)} if seed is not None else \
            _jsonable({"state": copy.deepcopy(self.unwrapped.np_random.bit_generator.state)})
        return reset_with(self.env, self._reset_arguments, seed, options)

    def rlbase_is_wrapped(self, wrapper_class: type) -> bool:
        """Whether the env this wraps is, or is wrapped in, ``wrapper_class`` (what
        ``VecEnv.env_is_wrapped`` asks each env, in its worker process too)."""
        env: gym.Env = self.env
        while True:
            if isinstance(env, wrapper_class):
                return True
            if not isinstance(env, gym.Wrapper):
                return False
            env = env.env


def _jsonable(note: dict[str, Any]) -> dict[str, Any] | None:
    """``note`` if it goes into a checkpoint's JSON as it is (PCG64's state does), else None."""
    try:
        json.dumps(note)
    except (TypeError, ValueError):
        return None
    return note
