"""The envs of the rlib classes: ``gymnasium.make(**env_kwargs, render_mode=...)`` with rlib's
episode limits, as rlbase VecEnvs (observation and reward normalization by VecNormalize, above
the monitor, so logged and tested returns are the env's own)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env import DummyVecEnv, VecEnv, VecNormalize
from rlbase.compat.rlib.episode_log import EpisodeRecorder

EnvWrapper = Callable[[gym.Env], gym.Env]


class MaxTotalReward(gym.Wrapper):
    """Ends (truncates) an episode once its return reaches ``max_total_reward``: rlib's cap on
    an episode's score. A truncation, not a termination: the state after it still has value."""

    def __init__(self, env: gym.Env, max_total_reward: float):
        super().__init__(env)
        self.max_total_reward = float(max_total_reward)
        self.total = 0.0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self.total = 0.0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.total += float(reward)
        return obs, reward, terminated, truncated or self.total >= self.max_total_reward, info


def clip_observations(env: gym.Env) -> gym.Env:
    """Observations clipped to [-10, 10] (rlib's wrapper for continuous control)."""
    space = env.observation_space
    if not isinstance(space, gym.spaces.Box):
        return env
    low = np.maximum(space.low, -10).astype(space.dtype)
    high = np.minimum(space.high, 10).astype(space.dtype)
    clipped = gym.spaces.Box(low, high, dtype=space.dtype)  # type: ignore[arg-type]
    return gym.wrappers.TransformObservation(env, lambda obs: np.clip(obs, -10, 10), clipped)


@dataclass
class EnvSpec:
    """How every env of one rlib algorithm is made.

    env_kwargs: ``gymnasium.make(**env_kwargs, render_mode=...)``.
    max_episode_length: cut episodes after this many steps (-1: no limit), as a truncation.
    max_total_reward: cut episodes once their return reaches this (-1: no limit).
    wrappers: gymnasium wrappers applied to each env after the limits (ClipAction, ...).
    normalize_observation / normalize_reward: a VecNormalize over the training envs (clipped
        to [-10, 10]); test envs see observations through its statistics, rewards raw.
    """

    env_kwargs: dict[str, Any]
    max_episode_length: int = -1
    max_total_reward: float = -1
    wrappers: Sequence[EnvWrapper] = field(default_factory=list)
    normalize_observation: bool = False
    normalize_reward: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.env_kwargs, dict) or "id" not in self.env_kwargs:
            raise RLBaseError(f"env_kwargs must be a dict with the env's 'id' (passed to "
                              f"gymnasium.make), got {self.env_kwargs!r}")
        if "render_mode" in self.env_kwargs:
            raise RLBaseError("env_kwargs must not hold render_mode: train() renders nothing, "
                              "test(display=True) and save_videos() choose it")
        length = self.max_episode_length
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)) \
                or (length < 1 and length != -1):
            raise RLBaseError(f"max_episode_length must be a positive integer or -1 (no limit), "
                              f"got {length!r}")

    def make(self, render_mode: str | None = None) -> gym.Env:
        env = gym.make(**self.env_kwargs, render_mode=render_mode)
        if self.max_episode_length != -1:
            env = gym.wrappers.TimeLimit(env, int(self.max_episode_length))
        if self.max_total_reward != -1:
            env = MaxTotalReward(env, self.max_total_reward)
        for wrapper in self.wrappers:
            env = wrapper(env)
        return env

    def spaces(self) -> tuple[gym.Space, gym.Space, int | None]:
        """(observation space, action space, the episode length cap or None)."""
        env = self.make()
        try:
            caps = [c for c in (self.max_episode_length,
                                env.spec.max_episode_steps if env.spec is not None else None)
                    if c is not None and c != -1]
            return env.observation_space, env.action_space, min(caps) if caps else None
        finally:
            env.close()

    def vec_env(self, num_envs: int, seed: int | None, render_mode: str | None = None,
                training: bool = True) -> VecEnv:
        """``num_envs`` envs (env i seeded with seed + i at the first reset); training envs
        carry the episode recorder (their monitor) below the normalization."""
        venv: VecEnv = DummyVecEnv([lambda: self.make(render_mode)] * int(num_envs))
        venv.seed(seed)
        if training:
            venv = EpisodeRecorder(venv)
        if training and (self.normalize_observation or self.normalize_reward):
            venv = VecNormalize(venv, ob=self.normalize_observation, ret=self.normalize_reward)
        return venv
