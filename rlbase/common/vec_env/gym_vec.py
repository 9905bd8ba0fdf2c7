"""GymVecEnv and DummyVecEnv: the Baselines API over ``gymnasium.vector`` (SubprocVecEnv:
:mod:`rlbase.common.vec_env.subproc_vec_env`)."""

from __future__ import annotations

from typing import Any, Callable, Sequence, cast

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from rlbase.common.envs.checks import observation_shape_error
from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env.base import Indices, VecEnv, VecStepResult
from rlbase.common.vec_env.reset_rng import ResetNotes


class GymVecEnv(VecEnv):
    """Adapts a gymnasium vector env (same-step autoreset) to the Baselines VecEnv API."""

    def __init__(self, vector_env: SyncVectorEnv | AsyncVectorEnv):
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
        # gymnasium takes one seed per env as a list (its stub says int).
        obs, info = self.vector_env.reset(seed=self._seeds)  # type: ignore[arg-type]
        self._seeds = None  # seed once; later resets continue the envs' own RNG streams
        self._note_reset_infos(info)
        return obs

    def _note_reset_infos(self, info: dict[str, Any]) -> None:
        """Keep a reset's infos, one dict per env (:attr:`reset_infos`)."""
        self._reset_infos = [_split_info_one(info, i) for i in range(self.num_envs)]

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecStepResult:
        obs, rewards, terminated, truncated, info = self.vector_env.step(self._actions)
        return obs, rewards, terminated, truncated, self._split_info(info)

    def _split_info(self, info: dict[str, Any]) -> list[dict[str, Any]]:
        """gymnasium's dict of arrays (with ``_key`` masks) -> one dict per env."""
        rest = {k: v for k, v in info.items() if k not in ("final_obs", "final_info")}
        infos = [_split_info_one(rest, i) for i in range(self.num_envs)]
        final_obs_mask = info.get("_final_obs")
        final_info = info.get("final_info")
        if final_obs_mask is not None:
            for i in np.flatnonzero(final_obs_mask).tolist():
                # (same-step autoreset: the top-level info of an env that ended is its reset's)
                self._reset_infos[i] = dict(infos[i])
                if final_info:
                    infos[i].update(_split_info_one(final_info, i))
                infos[i]["final_observation"] = info["final_obs"][i]
        return infos

    def close(self) -> None:
        self.vector_env.close()

    def render(self) -> np.ndarray | None:
        frames = self.vector_env.render()
        return None if frames is None else np.asarray(frames[0])

    @property
    def render_fps(self) -> float | None:
        return (self.vector_env.metadata or {}).get("render_fps")

    def reset_notes(self) -> list[dict[str, Any] | None]:
        """How each env's last reset can be repeated (see ResetNotes): what a checkpoint keeps
        so a resumed run draws the first observations the uninterrupted one drew."""
        return list(self._call_all("last_reset"))

    def replay_resets(self, notes: list[dict[str, Any] | None]) -> None:
        """The next reset repeats each env's noted reset instead of seeding it again (a note
        of None: that env's reset draws on from its own state)."""
        self._set_all("replay_reset", list(notes))
        self._seeds = None

    def env_method(self, name: str, *args: Any, indices: Indices = None,
                   **kwargs: Any) -> list[Any]:
        return self._pick(self._call_all(name, *args, **kwargs), indices)

    def get_attr(self, name: str, indices: Indices = None) -> list[Any]:
        return self._pick(self._call_all(name), indices)

    def set_attr(self, name: str, value: Any, indices: Indices = None) -> None:
        if indices is None:
            self._set_all(name, [value] * self.num_envs)
            return
        values = list(self._call_all(name))  # the others keep theirs
        for i in self._indices(indices):
            values[i] = value
        self._set_all(name, values)

    def has_attr(self, name: str) -> bool:
        # gymnasium's Env.has_wrapper_attr, called in each env (in its worker process too):
        # calling a missing method instead would fail, and stop a SubprocVecEnv's workers.
        return all(self._call_all("has_wrapper_attr", name))

    def env_is_wrapped(self, wrapper_class: type, indices: Indices = None) -> list[bool]:
        # Each env's ResetNotes answers (in its worker process for a SubprocVecEnv).
        return self._pick(self._call_all("rlbase_is_wrapped", wrapper_class), indices)

    def _call_all(self, name: str, *args: Any, **kwargs: Any) -> Sequence[Any]:
        """Every env's ``name`` (called with the arguments when it is callable)."""
        return self.vector_env.call(name, *args, **kwargs)

    def _set_all(self, name: str, values: list[Any]) -> None:
        """Env i's attribute ``name`` set to ``values[i]``."""
        self.vector_env.set_attr(name, values)

    def _indices(self, indices: Indices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        chosen = [int(indices)] if isinstance(indices, (int, np.integer)) else \
            [int(i) for i in indices]
        bad = [i for i in chosen if not -self.num_envs <= i < self.num_envs]
        if bad:
            raise RLBaseError(f"env index {bad[0]} out of range for {self.num_envs} envs")
        return chosen

    def _pick(self, values: Sequence[Any], indices: Indices) -> list[Any]:
        return [values[i] for i in self._indices(indices)]


def _split_info_one(info: dict[str, Any], i: int) -> dict[str, Any]:
    """Env ``i``'s entries of a dict of arrays (nested dicts hold their own ``_key`` masks)."""
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
        self._sync = SyncVectorEnv([_with_notes(fn) for fn in env_fns],
                                   autoreset_mode=AutoresetMode.SAME_STEP)
        envs = self.envs
        if len({id(env.unwrapped) for env in envs}) < len(envs):
            self._sync.close()
            raise RLBaseError("the env functions given to DummyVecEnv return the same env "
                              "object more than once; each must make a new env (lambda: "
                              "gym.make(...), not lambda: env)")
        super().__init__(self._sync)
        self._episode_steps = np.zeros(self.num_envs, np.int64)

    @property
    def envs(self) -> list[gym.Env]:
        """The envs the env functions made (each runs under a transparent ResetNotes)."""
        return [cast(ResetNotes, env).env for env in self._sync.envs]

    def reset(self) -> np.ndarray:
        self._episode_steps[:] = 0
        try:
            return super().reset()
        except ValueError as exc:  # numpy's 'Output array is the wrong shape' names no env
            raise self._shape_error() or exc from exc

    def step_wait(self) -> VecStepResult:
        self._episode_steps += 1
        try:
            obs, rewards, terminated, truncated, infos = super().step_wait()
        except ValueError as exc:
            raise self._shape_error() or exc from exc
        self._episode_steps[terminated | truncated] = 0
        return obs, rewards, terminated, truncated, infos

    def _shape_error(self) -> RLBaseError | None:
        """After gymnasium failed to stack the observations: the first env whose observation
        does not have its space's shape (checked only then, so stepping costs nothing)."""
        shape = self.observation_space.shape
        if shape is None:  # Dict / Tuple spaces: no single shape to compare
            return None
        observations: list[Any] = list(self._sync._env_obs)  # the obs each env returned
        for i, obs in enumerate(observations):
            if np.shape(obs) != shape:
                return observation_shape_error(self._sync.envs[i], i,
                                               int(self._episode_steps[i]), obs, shape)
        return None


def _with_notes(fn: Callable[[], gym.Env]) -> Callable[[], gym.Env]:
    return lambda: ResetNotes(fn())
