"""Stop at the first NaN or infinity an env produces, naming the env and the step.

A non-finite observation or reward poisons every later update without any error: the losses
become NaN a few updates later, far from the cause. :class:`VecCheckFinite` raises
:class:`~rlbase.common.errors.NonFiniteError` on the step where it happens instead. The CLI
wraps every env with it (``--no-check_finite`` turns it off); losses are checked by the learn
loops themselves.

The check costs one sum per step on float data (integer observations, such as Atari frames,
cannot hold NaN and are skipped); the element-wise search runs only when the sum is not finite.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlbase.common import nested
from rlbase.common.errors import NonFiniteError
from rlbase.common.vec_env.base import VecEnv, VecEnvWrapper, VecStepResult


def _finite(x: Any) -> bool:
    arr = np.asarray(x)
    if arr.dtype.kind not in "fc":
        return True
    # A sum of finite values can overflow to inf: confirm element-wise before reporting.
    return bool(np.isfinite(arr.sum())) or bool(np.isfinite(arr).all())


class VecCheckFinite(VecEnvWrapper):
    """Raise NonFiniteError when an observation, final observation or reward is NaN or inf.

    venv: the env to check (wrap it below normalization, to see the env's own values).
    """

    def __init__(self, venv: VecEnv):
        super().__init__(venv)
        self.steps = 0  # vectorized steps since creation

    def reset(self) -> Any:
        obs = self.venv.reset()
        self._check_observation(obs, "reset")
        return obs

    def step_wait(self) -> VecStepResult:
        obs, rewards, terminated, truncated, infos = self.venv.step_wait()
        self.steps += 1
        where = f"step {self.steps}"
        self._check("reward", rewards, where)
        self._check_observation(obs, where)
        space = self.venv.observation_space
        for i, info in enumerate(infos):
            final = info.get("final_observation")
            if final is None:
                continue
            for name, leaf in zip(nested.leaf_names(space), nested.flatten(space, final)):
                if not _finite(leaf):
                    entry = "" if name == "obs" else f" (entry {name})"
                    raise NonFiniteError(f"env {i} returned a non-finite final observation"
                                         f"{entry} at {where}: {np.asarray(leaf).ravel()[:8]}")
        return obs, rewards, terminated, truncated, infos

    def _check_observation(self, obs: Any, where: str) -> None:
        """Each entry of a Dict/Tuple observation on its own (an object array checks nothing)."""
        space = self.venv.observation_space
        for name, leaf in zip(nested.leaf_names(space), nested.flatten(space, obs)):
            self._check("observation" if name == "obs" else f"observation (entry {name})",
                        leaf, where)

    def _check(self, what: str, values: np.ndarray, where: str) -> None:
        if _finite(values):
            return
        arr = np.asarray(values)
        i = int(np.flatnonzero(~np.isfinite(arr.reshape(arr.shape[0], -1)).all(axis=1))[0])
        shown = arr[i].ravel()[:8]
        raise NonFiniteError(f"env {i} returned a non-finite {what} at {where}: {shown} "
                             "(CLI: --no-check_finite turns this check off)")
