"""Test envs of OpenAI Baselines (baselines/common/tests/envs/), rewritten for gymnasium.

- identity envs (identity_env.py): the observation is a random point of the action space and
  the reward says how well the action repeats it (optionally the observation of ``delay``
  steps back);
- FixedSequenceEnv (fixed_sequence_env.py): one constant observation; the reward asks for the
  same fixed action sequence in every episode, so only a recurrent policy can score well;
- DigitsEnv, in place of MnistEnv (mnist_env.py): a 28x28x1 image classification task. MNIST
  would have to be downloaded, so each class is a fixed random stroke pattern plus noise; the
  serialization tests it serves train for 100 steps and only compare a model with its reload.

gymnasium API: ``reset(seed=...)`` replaces ``seed()``, and ``step`` returns
``(obs, reward, terminated, truncated, info)``. A Baselines episode that ended after
``episode_len`` steps ended its return there (``done``), so these envs report ``terminated``:
the value targets are the ones Baselines computed.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np


class IdentityEnv(gym.Env):
    """Observation: a sample of the action space. Subclasses set ``action_space`` and score
    ``(target, action)``. With ``delay`` the target is the observation ``delay`` steps back
    (the first ``delay`` rewards are 0 when ``zero_first_rewards``)."""

    action_space: gym.Space

    def __init__(self, episode_len: int | None = None, delay: int = 0,
                 zero_first_rewards: bool = True):
        self.observation_space = self.action_space
        self.episode_len = episode_len
        self.delay = delay
        self.zero_first_rewards = zero_first_rewards
        self.time = 0
        self.queue: deque = deque(maxlen=delay + 1)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:  # Baselines' env.seed(s) seeded the action space
            self.action_space.seed(seed)
        self.time = 0
        self.queue.clear()
        for _ in range(self.delay + 1):
            self.queue.append(self.action_space.sample())
        return self.queue[-1], {}

    def step(self, action: Any):
        reward = self.score(self.queue.popleft(), action)
        if self.zero_first_rewards and self.time < self.delay:
            reward = 0
        self.queue.append(self.action_space.sample())
        self.time += 1
        ended = self.episode_len is not None and self.time >= self.episode_len
        return self.queue[-1], reward, ended, False, {}

    def score(self, target: Any, action: Any) -> float:
        raise NotImplementedError


class DiscreteIdentityEnv(IdentityEnv):
    """Discrete(dim): reward 1 when the action is the target, else 0."""

    def __init__(self, dim: int, episode_len: int | None = None, delay: int = 0,
                 zero_first_rewards: bool = True):
        self.action_space = gym.spaces.Discrete(dim)
        super().__init__(episode_len, delay, zero_first_rewards)

    def score(self, target: Any, action: Any) -> float:
        return 1 if int(target) == int(action) else 0


class MultiDiscreteIdentityEnv(IdentityEnv):
    """MultiDiscrete(dims): reward 1 when every entry matches, else 0."""

    def __init__(self, dims: tuple[int, ...], episode_len: int | None = None, delay: int = 0):
        self.action_space = gym.spaces.MultiDiscrete(list(dims))
        super().__init__(episode_len, delay)

    def score(self, target: Any, action: Any) -> float:
        return 1 if np.all(np.asarray(target) == np.asarray(action)) else 0


class BoxIdentityEnv(IdentityEnv):
    """Box(-1, 1, shape): reward ``-|action - target|^2 / 2``."""

    def __init__(self, shape: tuple[int, ...], episode_len: int | None = None):
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape, np.float32)
        super().__init__(episode_len)

    def score(self, target: Any, action: Any) -> float:
        diff = (np.asarray(action, np.float64) - target).ravel()
        return -0.5 * float(diff @ diff)


class FixedSequenceEnv(gym.Env):
    """Observation always 0; reward 1 when the action is the sequence's entry for this step.
    The sequence comes from seed 0 when the env is built, as in Baselines, so every copy and
    every episode asks for the same one; ``reset(seed=...)`` seeds nothing that matters."""

    def __init__(self, n_actions: int = 10, episode_len: int = 100):
        self.action_space = gym.spaces.Discrete(n_actions)
        self.observation_space = gym.spaces.Discrete(1)
        self.episode_len = episode_len
        rng = np.random.RandomState(0)
        self.sequence = [rng.randint(0, n_actions) for _ in range(episode_len)]
        self.time = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.time = 0
        return 0, {}

    def step(self, action: Any):
        reward = 1 if int(action) == self.sequence[self.time] else 0
        self.time += 1
        ended = bool(self.episode_len) and self.time >= self.episode_len
        return 0, reward, ended, False, {}


class DigitsEnv(gym.Env):
    """Stands in for Baselines' MnistEnv: observation a 28x28x1 uint8 image of a class 0..9,
    reward 1 for naming the class. The episode ends after ``episode_len`` steps (that last
    step pays 0, as MnistEnv's did)."""

    observation_space = gym.spaces.Box(0, 255, (28, 28, 1), np.uint8)
    action_space = gym.spaces.Discrete(10)

    def __init__(self, episode_len: int | None = None):
        self.episode_len = episode_len
        # Fixed class patterns (independent of the episode seed), noise drawn per image.
        patterns = np.random.RandomState(1234).rand(10, 28, 28, 1) < 0.2
        self.patterns = patterns.astype(np.float32) * 200.0
        self.time = 0
        self.label = 0
        self.image = np.zeros((28, 28, 1), np.uint8)

    def _draw(self) -> None:
        self.label = int(self.np_random.integers(10))
        noise = self.np_random.uniform(0.0, 55.0, (28, 28, 1))
        self.image = (self.patterns[self.label] + noise).astype(np.uint8)
        self.time += 1

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._draw()
        self.time = 0
        return self.image, {}

    def step(self, action: Any):
        reward = 1 if int(action) == self.label else 0
        self._draw()
        ended = bool(self.episode_len) and self.time >= self.episode_len
        if ended:
            reward = 0
        return self.image, reward, ended, False, {}
