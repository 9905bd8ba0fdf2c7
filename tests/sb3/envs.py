"""SB3's test envs (stable_baselines3/common/envs/identity_env.py), written for rlbase's tests:
the observation is the answer wanted; reward 1 for a right answer (a Box answer within
``eps``), 0 otherwise; episodes end by truncation after ``ep_length`` steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

BOX_FLOAT64 = gym.spaces.Box(-1, 1, (2,), np.float64)
BOX_FLOAT32 = gym.spaces.Box(-1, 1, (2,), np.float32)


class IdentityEnv(gym.Env):
    def __init__(self, space: gym.Space, ep_length: int = 100):
        self.observation_space = self.action_space = space
        self.ep_length, self.current_step = ep_length, 0
        self.state: Any = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            super().reset(seed=seed)
            self.action_space.seed(seed)
        self.current_step = 0
        self.state = self.action_space.sample()
        return self.state, {}

    def step(self, action: Any):
        reward = self.reward(action)
        self.state = self.action_space.sample()
        self.current_step += 1
        return self.state, reward, False, self.current_step >= self.ep_length, {}

    def reward(self, action: Any) -> float:
        return float(np.all(np.asarray(self.state) == np.asarray(action)))


def discrete_identity(dim: int) -> IdentityEnv:
    return IdentityEnv(gym.spaces.Discrete(dim))


def multidiscrete_identity(dim: int) -> IdentityEnv:
    return IdentityEnv(gym.spaces.MultiDiscrete([dim, dim]))


def multibinary_identity(dim: int) -> IdentityEnv:
    return IdentityEnv(gym.spaces.MultiBinary(dim))


class BoxIdentityEnv(IdentityEnv):
    """Box(-1, 1, (1,)); reward 1 when the action is within ``eps`` of the observation."""

    def __init__(self, eps: float = 0.05, ep_length: int = 100):
        super().__init__(gym.spaces.Box(-1.0, 1.0, (1,), np.float32), ep_length)
        self.eps = eps

    def reward(self, action: Any) -> float:
        return float(np.all(np.abs(np.asarray(action) - self.state) <= self.eps))


@dataclass
class DummyEnv(gym.Env):
    """Random observations of any space, reward 0, never ending (a TimeLimit ends it)."""

    observation_space: gym.Space
    action_space: gym.Space

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            super().reset(seed=seed)
            self.observation_space.seed(seed)
        return self.observation_space.sample(), {}

    def step(self, action: Any):
        assert self.action_space.contains(action), action
        return self.observation_space.sample(), 0.0, False, False, {}
