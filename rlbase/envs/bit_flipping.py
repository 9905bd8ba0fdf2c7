"""The bit-flipping goal env of the HER paper (Andrychowicz et al., 2017, section 3.1), with
Stable-Baselines3's ``BitFlippingEnv`` arguments and behaviour: the standard sanity check of
Hindsight Experience Replay.

The state is ``n_bits`` bits drawn at random at reset; the goal is all ones. A discrete action
``i`` flips bit ``i``; a continuous action flips every bit whose component is > 0. The reward is
0 when the state equals the goal and -1 otherwise (``compute_reward``, vectorized over a batch);
reaching the goal terminates the episode (``info["is_success"]``), and ``max_steps`` steps
truncate it.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rlbase.common.errors import RLBaseError

Obs = dict[str, Any]


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise RLBaseError(f"BitFlippingEnv: {name} must be a positive integer, got {value!r}")
    return int(value)


class BitFlippingEnv(gym.Env):
    """Flip bits until they are all ones (a goal env: Dict observation of ``observation``,
    ``achieved_goal`` and ``desired_goal``).

    n_bits: bits in the state (and actions with discrete actions).
    continuous: Box(-1, 1, (n_bits,)) actions flipping the bits whose component is > 0,
        instead of Discrete(n_bits).
    max_steps: steps after which an episode is truncated (None: n_bits).
    discrete_obs_space: each entry is the state as one integer (bit i has weight 2**i) in
        Discrete(2**n_bits) instead of MultiBinary(n_bits).
    image_obs_space: each entry is a 36x36 uint8 image whose first n_bits pixels are the bits
        (0 or 255), the rest zeros.
    channel_first: the image's shape is (1, 36, 36), else (36, 36, 1).
    render_mode: None, "human" (prints the state) or "rgb_array" (returns a copy of it).
    """

    metadata = {"render_modes": ["human", "rgb_array"]}
    IMAGE_SIDE = 36

    def __init__(self, n_bits: int = 10, continuous: bool = False, max_steps: int | None = None,
                 discrete_obs_space: bool = False, image_obs_space: bool = False,
                 channel_first: bool = True, render_mode: str | None = None):
        super().__init__()
        self.n_bits = _positive("n_bits", n_bits)
        self.max_steps = self.n_bits if max_steps is None else _positive("max_steps", max_steps)
        if discrete_obs_space and image_obs_space:
            raise RLBaseError("BitFlippingEnv: discrete_obs_space and image_obs_space cannot "
                              "both be True")
        side = self.IMAGE_SIDE
        if image_obs_space and self.n_bits > side * side:
            raise RLBaseError(f"BitFlippingEnv: image_obs_space holds at most {side * side} "
                              f"bits, got n_bits={n_bits}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise RLBaseError(f"BitFlippingEnv: render_mode must be None, 'human' or "
                              f"'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        self.continuous = bool(continuous)
        self.discrete_obs_space = bool(discrete_obs_space)
        self.image_obs_space = bool(image_obs_space)
        self.image_shape = (1, side, side) if channel_first else (side, side, 1)
        entry: spaces.Space
        if self.discrete_obs_space:
            entry = spaces.Discrete(2 ** self.n_bits)
        elif self.image_obs_space:
            entry = spaces.Box(0, 255, self.image_shape, np.uint8)
        else:
            entry = spaces.MultiBinary(self.n_bits)
        self.observation_space = spaces.Dict(
            {key: entry for key in ("observation", "achieved_goal", "desired_goal")})
        self.action_space = spaces.Box(-1, 1, (self.n_bits,), np.float32) if self.continuous \
            else spaces.Discrete(self.n_bits)
        self.state = np.zeros(self.n_bits, dtype=np.int8)
        self.desired_goal = np.ones(self.n_bits, dtype=np.int8)
        self.current_step = 0
        self._weights = 2 ** np.arange(self.n_bits, dtype=np.int64)
        # An id (SB3's) and a real entry point: wrappers and gymnasium's checker read them.
        self.spec = gym.envs.registration.EnvSpec(
            "BitFlippingEnv-v0", f"{__name__}:BitFlippingEnv",
            kwargs={"n_bits": self.n_bits, "continuous": self.continuous,
                    "max_steps": self.max_steps, "discrete_obs_space": self.discrete_obs_space,
                    "image_obs_space": self.image_obs_space, "channel_first": channel_first,
                    "render_mode": render_mode})

    # -- conversions between the bits and the observation's form -------------------------
    def convert_if_needed(self, bits: np.ndarray) -> int | np.ndarray:
        """One observation entry for the bit vector ``bits``."""
        if self.discrete_obs_space:
            return int(bits.astype(np.int64) @ self._weights)
        if self.image_obs_space:
            image = np.zeros(int(np.prod(self.image_shape)), dtype=np.uint8)
            image[:self.n_bits] = bits.astype(np.uint8) * 255
            return image.reshape(self.image_shape)
        return bits.copy()

    def convert_to_bit_vector(self, entry: Any) -> np.ndarray:
        """Observation entries (one, or a batch along the first axis) -> bits ``[batch, n]``."""
        if self.discrete_obs_space:
            ints = np.asarray(entry, dtype=np.int64).reshape(-1, 1)
            return ((ints & self._weights) > 0).astype(np.int8)
        if self.image_obs_space:
            flat = np.asarray(entry).reshape(-1, int(np.prod(self.image_shape)))
            return (flat[:, :self.n_bits] > 0).astype(np.int8)
        return np.asarray(entry).reshape(-1, self.n_bits)

    def _obs(self) -> Obs:
        return {"observation": self.convert_if_needed(self.state),
                "achieved_goal": self.convert_if_needed(self.state),
                "desired_goal": self.convert_if_needed(self.desired_goal)}

    # -- the goal env API --------------------------------------------------------------
    def compute_reward(self, achieved_goal: Any, desired_goal: Any,
                       info: Any = None) -> np.ndarray:
        """0 where ``achieved_goal`` equals ``desired_goal``, -1 elsewhere (float32), for one
        pair (shape ``(1,)``) or a batch along the first axis (shape ``(batch,)``); ``info``
        is not used."""
        achieved = self.convert_to_bit_vector(achieved_goal)
        desired = self.convert_to_bit_vector(desired_goal)
        return np.where(np.any(achieved != desired, axis=-1), -1.0, 0.0).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Obs, dict[str, Any]]:
        super().reset(seed=seed)
        self.current_step = 0
        self.state = self.np_random.integers(0, 2, self.n_bits).astype(np.int8)
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Obs, float, bool, bool, dict[str, Any]]:
        if self.continuous:
            flip = np.asarray(action).reshape(self.n_bits) > 0
        else:
            flip = np.zeros(self.n_bits, dtype=bool)
            flip[int(np.asarray(action).reshape(()))] = True
        self.state = np.where(flip, 1 - self.state, self.state).astype(np.int8)
        obs = self._obs()
        reward = float(self.compute_reward(obs["achieved_goal"], obs["desired_goal"])[0])
        terminated = reward == 0.0
        self.current_step += 1
        truncated = self.current_step >= self.max_steps
        return obs, reward, terminated, truncated, {"is_success": terminated}

    def render(self) -> np.ndarray | None:  # type: ignore[override]
        if self.render_mode == "rgb_array":
            return self.state.copy()
        if self.render_mode == "human":
            print(self.state)
        return None
