"""Tiny envs with a known best return, for checking that an algorithm learns at all.

Each observation asks for one answer and the reward says how close the action came; every
episode lasts ``episode_len`` steps and ends by truncation (there is no terminal state).
Register-free: pass ``lambda: DiscreteIdentityEnv(4)`` to a VecEnv.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class _IdentityEnv(gym.Env):
    def __init__(self, episode_len: int):
        self.episode_len = episode_len
        self._t = 0
        self._target: Any = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._t = 0
        self._target = self._draw()
        return self._target, {}

    def _draw(self) -> Any:
        self.observation_space.seed(int(self.np_random.integers(2**31)))
        return self.observation_space.sample()

    def step(self, action: Any):
        reward = self._reward(action)
        self._t += 1
        self._target = self._draw()
        return self._target, reward, False, self._t >= self.episode_len, {}

    def _reward(self, action: Any) -> float:
        raise NotImplementedError


class DiscreteIdentityEnv(_IdentityEnv):
    """Observation k in 0..n-1; reward 1 for action k, else 0. Best return: episode_len."""

    def __init__(self, n: int = 4, episode_len: int = 20):
        super().__init__(episode_len)
        self.observation_space = gym.spaces.Discrete(n)
        self.action_space = gym.spaces.Discrete(n)

    def _reward(self, action: Any) -> float:
        return float(int(action) == int(self._target))


class MultiDiscreteIdentityEnv(_IdentityEnv):
    """Observation a vector of choices; reward: the fraction of entries matched."""

    def __init__(self, nvec: tuple[int, ...] = (3, 4), episode_len: int = 20):
        super().__init__(episode_len)
        self.observation_space = gym.spaces.MultiDiscrete(list(nvec))
        self.action_space = gym.spaces.MultiDiscrete(list(nvec))

    def _reward(self, action: Any) -> float:
        return float(np.mean(np.asarray(action) == self._target))


class MultiBinaryIdentityEnv(_IdentityEnv):
    """Observation n bits; reward: the fraction of bits matched."""

    def __init__(self, n: int = 3, episode_len: int = 20):
        super().__init__(episode_len)
        self.observation_space = gym.spaces.MultiBinary(n)
        self.action_space = gym.spaces.MultiBinary(n)

    def _reward(self, action: Any) -> float:
        return float(np.mean(np.asarray(action) == self._target))


class BoxIdentityEnv(_IdentityEnv):
    """Observation x in [-1, 1]^d; reward ``-mean((a - x)^2)``. Best return: 0."""

    def __init__(self, dim: int = 1, episode_len: int = 20):
        super().__init__(episode_len)
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (dim,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (dim,), np.float32)

    def _reward(self, action: Any) -> float:
        return -float(np.mean(np.square(np.asarray(action) - self._target)))


class MemoryEnv(gym.Env):
    """Remember a cue: the first observation shows +1 or -1, the next ``length - 1`` show 0,
    and only the last action is rewarded: +1 if it names the cue (action 1 for +1), else -1.

    A feed-forward policy scores 0 on average (it cannot see the cue when it must answer);
    a recurrent one can score 1. The second observation entry is 1 on the answering step.
    """

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length: int = 3):
        self.length = length
        self._t = 0
        self._cue = 1.0

    def _obs(self) -> np.ndarray:
        cue = self._cue if self._t == 0 else 0.0
        return np.array([cue, float(self._t == self.length - 1)], np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._t = 0
        self._cue = 1.0 if self.np_random.random() < 0.5 else -1.0
        return self._obs(), {}

    def step(self, action: Any):
        last = self._t == self.length - 1
        reward = 0.0
        if last:
            reward = 1.0 if (int(action) == 1) == (self._cue > 0) else -1.0
        self._t += 1
        return (self._obs() if not last else np.zeros(2, np.float32)), reward, last, False, {}


class EndsAtThree(gym.Env):
    """Observation t/10 after t steps, reward 1; the episode ends at step 3, by termination
    (``truncate=False``) or by a time limit (``truncate=True``). For exact checks that only
    truncated episodes are bootstrapped, and from the final observation (0.3), not the reset
    one (0.0)."""

    observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, truncate: bool):
        self.truncate = truncate
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action: Any):
        self.t += 1
        ends = self.t == 3
        obs = np.full(1, self.t / 10, np.float32)
        return obs, 1.0, ends and not self.truncate, ends and self.truncate, {}
