"""DummyVecEnv and SubprocVecEnv: the Baselines API over ``gymnasium.vector``."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from rlbase.common.vec_env.base import VecEnv, VecStepResult


class GymVecEnv(VecEnv):
    """Adapts a gymnasium vector env (same-step autoreset) to the Baselines VecEnv API."""

    def __init__(self, vector_env: gym.vector.VectorEnv):
        self.vector_env = vector_env
        super().__init__(vector_env.num_envs, vector_env.single_observation_space,
                         vector_env.single_action_space)
        self._seeds: list[int] | None = None
        self._actions: np.ndarray | None = None

    def seed(self, seed: int | Sequence[int] | None = None) -> None:
        if seed is None:
            self._seeds = None
        elif isinstance(seed, (int, np.integer)):
            self._seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            self._seeds = [int(s) for s in seed]

    def reset(self) -> np.ndarray:
        obs, _ = self.vector_env.reset(seed=self._seeds)
        self._seeds = None  # seed once; later resets continue the envs' own RNG streams
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecStepResult:
        obs, rewards, terminated, truncated, info = self.vector_env.step(self._actions)
        return obs, rewards, terminated, truncated, self._split_info(info)

    def _split_info(self, info: dict[str, Any]) -> list[dict[str, Any]]:
        """gymnasium's dict of arrays (with ``_key`` masks) -> one dict per env."""
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if not info:
            return infos
        final_obs_mask = info.get("_final_obs")
        final_info = info.get("final_info")
        for key, value in info.items():
            if key.startswith("_") or key in ("final_obs", "final_info"):
                continue
            mask = info.get("_" + key)
            for i in range(self.num_envs):
                if mask is None or mask[i]:
                    infos[i][key] = value[i]
        if final_obs_mask is not None:
            for i in np.flatnonzero(final_obs_mask):
                if final_info:
                    infos[i].update(_split_info_one(final_info, i))
                infos[i]["final_observation"] = info["final_obs"][i]
        return infos

    def close(self) -> None:
        self.vector_env.close()

    def render(self) -> np.ndarray | None:
        frames = self.vector_env.render()
        return None if frames is None else frames[0]

    def env_method(self, name: str, *args: Any, **kwargs: Any) -> list[Any]:
        return list(self.vector_env.call(name, *args, **kwargs))


def _split_info_one(info: dict[str, Any], i: int) -> dict[str, Any]:
    out = {}
    for key, value in info.items():
        if key.startswith("_"):
            continue
        mask = info.get("_" + key)
        if mask is None or mask[i]:
            out[key] = _split_info_one(value, i) if isinstance(value, dict) else value[i]
    return out


class DummyVecEnv(GymVecEnv):
    """Steps every env in this process, one after the other (``gymnasium.vector.SyncVectorEnv``)."""

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]]):
        super().__init__(SyncVectorEnv(list(env_fns), autoreset_mode=AutoresetMode.SAME_STEP))

    @property
    def envs(self) -> list[gym.Env]:
        return list(self.vector_env.envs)


class SubprocVecEnv(GymVecEnv):
    """Steps each env in its own process (``gymnasium.vector.AsyncVectorEnv``)."""

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], context: str | None = None):
        super().__init__(AsyncVectorEnv(list(env_fns), context=context,
                                        autoreset_mode=AutoresetMode.SAME_STEP))

    def step_async(self, actions: np.ndarray) -> None:
        self.vector_env.step_async(actions)

    def step_wait(self) -> VecStepResult:
        obs, rewards, terminated, truncated, info = self.vector_env.step_wait()
        return obs, rewards, terminated, truncated, self._split_info(info)
