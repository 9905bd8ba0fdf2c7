"""VecFrameStack: the last ``nstack`` observations of each env, stacked on the channel axis."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common import nested
from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env.base import VecEnv, VecEnvWrapper, VecStepResult

_CHANNELS_ORDERS = ("last", "first")


class _Stack:
    """The stacks of one Box (an observation, or one entry of a Dict/Tuple observation) for
    every env, aged in place."""

    def __init__(self, space: gym.spaces.Box, num_envs: int, nstack: int, first: bool):
        axis = 0 if first else -1  # the channel axis of one observation
        self.first, self.channels = first, space.shape[axis]
        self.space = gym.spaces.Box(low=np.repeat(space.low, nstack, axis=axis),
                                    high=np.repeat(space.high, nstack, axis=axis),
                                    dtype=space.dtype)
        self.ndim = len(space.shape)
        self.obs = np.zeros((num_envs, *self.space.shape), dtype=space.dtype)

    def newest(self, stack: np.ndarray) -> np.ndarray:
        """View of the slot holding the newest observation (works for a batch or one env)."""
        if not self.first:
            return stack[..., -self.channels:]
        offset = stack.ndim - self.ndim  # 1 for a batch, 0 for one env
        return stack[(slice(None),) * offset + (slice(-self.channels, None),)]

    def age(self) -> None:
        """Move every stacked frame one slot older, in place (the newest slot is written next).

        Channels last, the batch is one run of [pixel][slot] values: shifting the flat array
        by one frame's channels ages every pixel's slots at once and leaves stale values only
        in the newest slots. ~5 us for 8 Atari stacks against ~280 us for np.roll.
        """
        c, stack = self.channels, self.obs
        if not self.first:
            flat = stack.reshape(-1)  # a view: the stack is always C-contiguous
            flat[:-c] = flat[c:]
        else:
            stack[:, :-c] = stack[:, c:]

    def final(self, env: int, final_obs: np.ndarray) -> np.ndarray:
        """The ended episode's stack: its older frames plus its true last frame."""
        stack = self.obs[env].copy()
        self.newest(stack)[...] = final_obs
        return stack


class VecFrameStack(VecEnvWrapper):
    """Stack the last ``nstack`` Box observations of each env along the channel axis.

    When an env's episode ends its stack is zeroed, so the new episode starts from zeros plus
    its first frame; ``infos[i]["final_observation"]`` gets the ended episode's own stack.
    The observation dtype is kept (uint8 frames stay uint8). Dict/Tuple observations (as
    SB3's StackedObservations): every entry is stacked on its own channel axis, images and
    vectors alike; every entry must be a Box.

    :param venv: the env to wrap (Box observations, or Dict/Tuple spaces of Boxes).
    :param nstack: how many observations to stack (>= 1); SB3's ``n_stack`` is the same.
    :param channels_order: ``"last"`` (HWC, the default) or ``"first"`` (CHW); None (SB3's
        default) detects it: ``"first"`` for a 3-D Box whose first axis is its smallest
        (CHW images), else ``"last"``.
    """

    def __init__(self, venv: VecEnv, nstack: int | None = None,
                 channels_order: str | None = "last", *, n_stack: int | None = None):
        if (nstack is None) == (n_stack is None):
            raise RLBaseError(f"VecFrameStack takes nstack (or SB3's n_stack), exactly one: "
                              f"got nstack={nstack!r}, n_stack={n_stack!r}")
        nstack = nstack if nstack is not None else n_stack
        space = venv.observation_space
        if channels_order is None:
            channels_order = _detect_channels_order(space)
        for name, leaf in zip(nested.leaf_names(space), nested.leaf_spaces(space)):
            if not isinstance(leaf, gym.spaces.Box) or not leaf.shape:
                what = f"entry {name!r} of {space}" if nested.is_nested(space) else str(space)
                raise RLBaseError(f"VecFrameStack stacks Box observations with at least one "
                                  f"axis (in Dict/Tuple spaces: every entry), got {what}")
        if isinstance(nstack, bool) or not isinstance(nstack, (int, np.integer)) or nstack < 1:
            raise RLBaseError(f"nstack={nstack!r} is not allowed: use an integer >= 1")
        if channels_order not in _CHANNELS_ORDERS:
            raise RLBaseError(f"channels_order={channels_order!r} is not allowed: use one of "
                              f"{_CHANNELS_ORDERS}")
        self.nstack = int(nstack)
        self.channels_order = channels_order
        self.space = space
        self._stacks = [_Stack(leaf, venv.num_envs, self.nstack, channels_order == "first")
                        for leaf in nested.leaf_spaces(space)
                        if isinstance(leaf, gym.spaces.Box)]  # all are: checked above
        stacked = nested.replace_leaves(space, [s.space for s in self._stacks])
        super().__init__(venv, observation_space=stacked)

    @property
    def stackedobs(self) -> Any:
        """The current stacks (nested for Dict/Tuple spaces), not a copy."""
        return nested.pack(self.space, [s.obs for s in self._stacks])

    def _current(self) -> Any:
        return nested.pack(self.space, [s.obs.copy() for s in self._stacks])

    def reset(self) -> Any:
        obs = self.venv.reset()
        for stack, leaf in zip(self._stacks, nested.flatten(self.space, obs)):
            stack.obs[...] = 0
            stack.newest(stack.obs)[...] = leaf
        return self._current()

    def step_wait(self) -> VecStepResult:
        obs, rewards, terminated, truncated, infos = self.venv.step_wait()
        for stack in self._stacks:
            stack.age()
        for i in np.flatnonzero(np.logical_or(terminated, truncated)).tolist():
            final_obs = infos[i].get("final_observation")
            if final_obs is not None:
                leaves = nested.flatten(self.space, final_obs)
                infos[i]["final_observation"] = nested.pack(
                    self.space, [s.final(i, leaf) for s, leaf in zip(self._stacks, leaves)])
            for stack in self._stacks:
                stack.obs[i] = 0
        for stack, leaf in zip(self._stacks, nested.flatten(self.space, obs)):
            stack.newest(stack.obs)[...] = leaf
        return self._current(), rewards, terminated, truncated, infos


def _detect_channels_order(space: gym.Space) -> str:
    """SB3's rule for ``channels_order=None``: a 3-D Box whose first axis is its smallest is
    channels first."""
    shape = getattr(space, "shape", None) or ()
    return "first" if len(shape) == 3 and int(np.argmin(shape)) == 0 else "last"
