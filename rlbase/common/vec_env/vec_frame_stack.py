"""VecFrameStack: the last ``nstack`` observations of each env, stacked on the channel axis."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env.base import VecEnv, VecEnvWrapper, VecStepResult

_CHANNELS_ORDERS = ("last", "first")


class VecFrameStack(VecEnvWrapper):
    """Stack the last ``nstack`` Box observations of each env along the channel axis.

    When an env's episode ends its stack is zeroed, so the new episode starts from zeros plus
    its first frame; ``infos[i]["final_observation"]`` gets the ended episode's own stack.
    The observation dtype is kept (uint8 frames stay uint8).

    :param venv: the env to wrap (Box observations).
    :param nstack: how many observations to stack (>= 1).
    :param channels_order: ``"last"`` (HWC, the default) or ``"first"`` (CHW).
    """

    def __init__(self, venv: VecEnv, nstack: int, channels_order: str = "last"):
        space = venv.observation_space
        if not isinstance(space, gym.spaces.Box) or not space.shape:
            raise RLBaseError(f"VecFrameStack needs a Box observation space with at least one "
                              f"axis, got {space}")
        if isinstance(nstack, bool) or not isinstance(nstack, (int, np.integer)) or nstack < 1:
            raise RLBaseError(f"nstack={nstack!r} is not allowed: use an integer >= 1")
        if channels_order not in _CHANNELS_ORDERS:
            raise RLBaseError(f"channels_order={channels_order!r} is not allowed: use one of "
                              f"{_CHANNELS_ORDERS}")
        self.nstack = int(nstack)
        self.channels_order = channels_order
        axis = -1 if channels_order == "last" else 0  # the channel axis of one observation
        self._channels = space.shape[axis]
        stacked = gym.spaces.Box(low=np.repeat(space.low, self.nstack, axis=axis),
                                 high=np.repeat(space.high, self.nstack, axis=axis),
                                 dtype=space.dtype)
        super().__init__(venv, observation_space=stacked)
        self.stackedobs = np.zeros((self.num_envs, *stacked.shape), dtype=space.dtype)

    def _newest(self, stack: np.ndarray) -> np.ndarray:
        """View of the slot holding the newest observation (works for a batch or one env)."""
        if self.channels_order == "last":
            return stack[..., -self._channels:]
        offset = stack.ndim - len(self.observation_space.shape)  # 1 for a batch, 0 for one env
        index = (slice(None),) * offset + (slice(-self._channels, None),)
        return stack[index]

    def _age_frames(self) -> None:
        """Move every stacked frame one slot older, in place (the newest slot is written next).

        Channels last, the batch is one run of [pixel][slot] values: shifting the flat array
        by one frame's channels ages every pixel's slots at once and leaves stale values only
        in the newest slots. ~5 us for 8 Atari stacks against ~280 us for np.roll.
        """
        c, stack = self._channels, self.stackedobs
        if self.channels_order == "last":
            flat = stack.reshape(-1)  # a view: the stack is always C-contiguous
            flat[:-c] = flat[c:]
        else:
            stack[:, :-c] = stack[:, c:]

    def reset(self) -> np.ndarray:
        obs = self.venv.reset()
        self.stackedobs[...] = 0
        self._newest(self.stackedobs)[...] = obs
        return self.stackedobs.copy()

    def step_wait(self) -> VecStepResult:
        obs, rewards, terminated, truncated, infos = self.venv.step_wait()
        self._age_frames()
        for i in np.flatnonzero(np.logical_or(terminated, truncated)):
            final_obs = infos[i].get("final_observation")
            if final_obs is not None:
                # The ended episode's stack: its older frames plus its true last frame.
                final_stack = self.stackedobs[i].copy()
                self._newest(final_stack)[...] = final_obs
                infos[i]["final_observation"] = final_stack
            self.stackedobs[i] = 0
        self._newest(self.stackedobs)[...] = obs
        return self.stackedobs.copy(), rewards, terminated, truncated, infos
