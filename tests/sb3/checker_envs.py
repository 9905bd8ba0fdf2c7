"""More of SB3's test envs (stable_baselines3/common/envs/), written for rlbase's tests of
check_env: FakeImageEnv, SimpleMultiObsEnv and the goal-conditioned BitFlippingEnv."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class FakeImageEnv(gym.Env):
    """Random 84x84 uint8 images; Discrete(6) or Box(-1, 1, (6,)) actions; 10-step episodes."""

    def __init__(self, action_dim: int = 6, screen_height: int = 84, screen_width: int = 84,
                 n_channels: int = 1, discrete: bool = True, channel_first: bool = False):
        shape = (n_channels, screen_height, screen_width) if channel_first else \
            (screen_height, screen_width, n_channels)
        self.observation_space = spaces.Box(0, 255, shape, np.uint8)
        self.action_space = spaces.Discrete(action_dim) if discrete else \
            spaces.Box(-1, 1, (action_dim,), np.float32)
        self.ep_length, self.current_step = 10, 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            super().reset(seed=seed)
            self.observation_space.seed(seed)
        self.current_step = 0
        return self.observation_space.sample(), {}

    def step(self, action: Any):
        self.current_step += 1
        return self.observation_space.sample(), 0.0, False, \
            self.current_step >= self.ep_length, {}


class SimpleMultiObsEnv(gym.Env):
    """A Dict observation (a 5-vector and a 1x64x64 image); four actions; 20-step episodes."""

    def __init__(self) -> None:
        self.observation_space = spaces.Dict({
            "vec": spaces.Box(0, 1, (5,), np.float32),
            "img": spaces.Box(0, 255, (1, 64, 64), np.uint8)})
        self.action_space = spaces.Discrete(4)
        self.current_step = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            super().reset(seed=seed)
            self.observation_space.seed(seed)
        self.current_step = 0
        return self.observation_space.sample(), {}

    def step(self, action: Any):
        self.current_step += 1
        return self.observation_space.sample(), 0.0, False, self.current_step >= 20, {}


class BitFlippingEnv(gym.Env):
    """Flip bits until they are all 1 (goal-conditioned: reward -1 until then, 0 on success).

    Observations, achieved and desired goals are MultiBinary(n_bits), or one integer
    (``discrete_obs_space``), or a uint8 image with the bits in its first pixels
    (``image_obs_space``); actions flip one bit (Discrete) or those > 0 (``continuous``).
    """

    def __init__(self, n_bits: int = 10, continuous: bool = False, max_steps: int | None = None,
                 discrete_obs_space: bool = False, image_obs_space: bool = False,
                 channel_first: bool = True):
        self.n_bits, self.discrete_obs, self.image_obs = n_bits, discrete_obs_space, image_obs_space
        self.image_shape = (1, 36, 36) if channel_first else (36, 36, 1)
        if discrete_obs_space:
            goal: spaces.Space = spaces.Discrete(2 ** n_bits)
        elif image_obs_space:
            goal = spaces.Box(0, 255, self.image_shape, np.uint8)
        else:
            goal = spaces.MultiBinary(n_bits)
        self.goal_ndim = len(goal.shape or ())
        self.observation_space = spaces.Dict(
            {"observation": goal, "achieved_goal": goal, "desired_goal": goal})
        self.action_space = spaces.Box(-1, 1, (n_bits,), np.float32) if continuous else \
            spaces.Discrete(n_bits)
        self.continuous = continuous
        self.max_steps = n_bits if max_steps is None else max_steps
        self.state = np.zeros(n_bits, np.int8)
        self.current_step = 0

    def _encode(self, bits: np.ndarray) -> Any:
        if self.discrete_obs:
            return int(sum(int(b) << i for i, b in enumerate(bits)))
        if self.image_obs:
            image = np.zeros(int(np.prod(self.image_shape)), np.uint8)
            image[:self.n_bits] = bits.astype(np.uint8) * 255
            return image.reshape(self.image_shape)
        return bits.astype(np.int8)

    def _obs(self) -> dict[str, Any]:
        return {"observation": self._encode(self.state),
                "achieved_goal": self._encode(self.state),
                "desired_goal": self._encode(np.ones(self.n_bits, np.int8))}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.current_step = 0
        self.state = self.np_random.integers(0, 2, self.n_bits).astype(np.int8)
        return self._obs(), {}

    def step(self, action: Any):
        if self.continuous:
            self.state[np.asarray(action) > 0] ^= 1
        else:
            self.state[int(action)] ^= 1
        obs = self._obs()
        reward = float(self.compute_reward(obs["achieved_goal"], obs["desired_goal"], None))
        self.current_step += 1
        return obs, reward, reward == 0.0, self.current_step >= self.max_steps, {}

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, _info: Any) -> Any:
        achieved, desired = np.asarray(achieved_goal), np.asarray(desired_goal)
        if achieved.ndim <= self.goal_ndim:  # one goal
            return np.float32(-float(np.any(achieved != desired)))
        differ = np.any(achieved.reshape(len(achieved), -1) != desired.reshape(len(desired), -1),
                        axis=1)
        return -differ.astype(np.float32)
