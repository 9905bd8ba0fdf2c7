"""rlib's record of training episodes: every one, each at the env step it ended at."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlbase.common.vec_env import VecMonitor
from rlbase.common.vec_env.base import VecStepResult


class EpisodeRecorder(VecMonitor):
    """The training env's monitor, keeping ``[env steps at its end, return, length]`` of each
    finished episode until :meth:`drain` takes them.

    The loop's callback sees only the last 100 episodes, all at the iteration's end step; this
    sees each one as it ends. ``steps`` counts env steps over all envs (set it to the model's
    ``num_timesteps`` before each learn() call); ES plays its episodes on the envs below and
    reports them through :meth:`record_episode`, so their lengths are its steps.
    """

    def __init__(self, venv: Any):
        super().__init__(venv)
        self.steps = 0
        self._finished: list[list[float]] = []
        self._stepping = False

    def step_wait(self) -> VecStepResult:
        self.steps += self.num_envs
        self._stepping = True
        try:
            return super().step_wait()
        finally:
            self._stepping = False

    def record_episode(self, ret: float, length: int, extras: Sequence[Any] = (),
                       elapsed: float | None = None) -> None:
        if not self._stepping:  # an episode ES played itself: its steps come with it
            self.steps += int(length)
        self._finished.append([float(self.steps), float(ret), float(length)])
        super().record_episode(ret, length, extras, elapsed)

    def drain(self) -> list[list[float]]:
        """The episodes finished since the last call, in the order they ended."""
        finished, self._finished = self._finished, []
        return finished
