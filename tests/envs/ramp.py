"""A tiny deterministic continuous-action env for the resume tests of the off-policy
algorithms."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class Ramp(gym.Env):
    """Deterministic: observation (t/10, (t mod 3)/3), reward -(a - t/10)^2, truncated after
    10 steps; every reset is the same, so a run resumed at an episode boundary can repeat an
    uninterrupted one exactly."""

    observation_space = gym.spaces.Box(-1.0, 2.0, (2,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self):
        self.t = 0

    def _obs(self):
        return np.array([self.t / 10, (self.t % 3) / 3], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        reward = -float((np.asarray(action)[0] - self.t / 10) ** 2)
        self.t += 1
        return self._obs(), reward, False, self.t >= 10, {}
