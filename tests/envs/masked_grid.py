"""A grid walk where most actions are invalid: the action-masking tests' env.

The agent starts in a corner of a ``size`` x ``size`` grid and must reach the opposite one.
Of ``n_actions`` actions, 0-3 move (up, down, left, right) and are valid unless they would
leave the grid; the rest are decoys, never valid. An invalid action wastes the step (the agent
stays put) and is counted in ``invalid_taken``. Reward: +1 on reaching the goal, -0.01 per
step; episodes end at the goal or after ``max_steps`` steps (truncated).

The mask is given both ways rlbase reads it: the ``action_masks()`` method (sb3-contrib's
protocol) and ``info["action_mask"]`` (gymnasium's, as Taxi gives it), in reset and step.
Only gymnasium and numpy are imported, so sb3-contrib's venv can use it too.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))


class MaskedGridEnv(gym.Env):
    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, size: int = 6, n_actions: int = 16, max_steps: int = 50):
        self.size, self.n_actions, self.max_steps = size, n_actions, max_steps
        self.observation_space = gym.spaces.Discrete(size * size)
        self.action_space = gym.spaces.Discrete(n_actions)
        self.pos = (0, 0)
        self.steps = 0
        self.total_steps = 0  # over every episode, like invalid_taken
        self.invalid_taken = 0

    def action_masks(self) -> np.ndarray:
        return self._valid_actions()

    def _valid_actions(self) -> np.ndarray:
        mask = np.zeros(self.n_actions, dtype=bool)
        for a, (dr, dc) in enumerate(MOVES):
            r, c = self.pos[0] + dr, self.pos[1] + dc
            mask[a] = 0 <= r < self.size and 0 <= c < self.size
        return mask

    def _obs(self) -> int:
        return self.pos[0] * self.size + self.pos[1]

    def _info(self) -> dict[str, Any]:
        return {"action_mask": self.action_masks().astype(np.int8)}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        self.pos, self.steps = (0, 0), 0
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        action = int(action)
        self.steps += 1
        self.total_steps += 1
        if self._valid_actions()[action]:
            dr, dc = MOVES[action]
            self.pos = (self.pos[0] + dr, self.pos[1] + dc)
        else:
            self.invalid_taken += 1
        goal = self.pos == (self.size - 1, self.size - 1)
        reward = (1.0 if goal else 0.0) - 0.01
        return self._obs(), reward, goal, self.steps >= self.max_steps and not goal, \
            self._info()


class MultiMaskedGridEnv(MaskedGridEnv):
    """The same walk with MultiDiscrete([n_actions, 3]) actions: the first entry moves as
    above; the second is a speed of which only 1 is valid (0 and 2 are masked out)."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.action_space = gym.spaces.MultiDiscrete([self.n_actions, 3])
        self.invalid_speed = 0

    def action_masks(self) -> np.ndarray:
        return np.concatenate([super().action_masks(), [False, True, False]])

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        self.invalid_speed += int(action[1]) != 1
        return super().step(int(action[0]))


class SwitchGridEnv(MaskedGridEnv):
    """The same walk with MultiBinary([4 move bits, 2 switches]) actions: the first set move
    bit moves (none set: stay put), switch 0 must be on and switch 1 off (the other settings
    masked out, counted in ``invalid_switch``); the move bits themselves are always free."""

    def __init__(self, **kwargs: Any):
        super().__init__(n_actions=4, **kwargs)
        self.action_space = gym.spaces.MultiBinary(6)
        self.invalid_switch = 0

    def action_masks(self) -> np.ndarray:
        # per bit: (0 allowed, 1 allowed), sb3-contrib's MultiBinary layout
        return np.array([1, 1] * 4 + [0, 1, 1, 0], dtype=bool)

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        bits = np.asarray(action)
        self.invalid_switch += int(bits[4] != 1) + int(bits[5] != 0)
        moves = np.flatnonzero(bits[:4])
        return super().step(int(moves[0]) if moves.size else 0)
