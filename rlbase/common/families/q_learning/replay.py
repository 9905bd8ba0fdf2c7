"""The replay buffer of the Q-learning family (DQN, QR-DQN): which storage fits the env, and
the checks that make it safe."""

from __future__ import annotations

from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from rlbase.common import nested
from rlbase.common.buffers.her_replay_buffer import her_buffer
from rlbase.common.buffers.replay_buffer import (
    FrameStackReplayBuffer,
    NestedReplayBuffer,
    PrioritizedReplayBuffer,
    ReplayBuffer,
)
from rlbase.common.vec_env import VecEnv, VecFrameStack, find_wrapper

Buffer = ReplayBuffer | FrameStackReplayBuffer | PrioritizedReplayBuffer


class FrameLayout(NamedTuple):
    """How a VecFrameStack stacks observations: frames per observation and the stack axis."""

    nstack: int
    axis: int


def frame_layout(env: VecEnv) -> FrameLayout | None:
    """The layout of the env's VecFrameStack (None: no frame stacking, or Dict/Tuple
    observations, whose stacks are stored whole).

    The buffer keeps raw frames: a VecNormalize above the VecFrameStack normalizes the
    rebuilt stacks when they are sampled (rlbase.common.buffers.raw_replay.RawReplay, which refuses
    one below it).
    """
    if nested.is_nested(env.observation_space):
        return None
    venv = find_wrapper(env, VecFrameStack)
    if not isinstance(venv, VecFrameStack):
        return None
    return FrameLayout(venv.nstack, -1 if venv.channels_order == "last" else 0)


def make_replay_buffer(observation_space: gym.Space, num_envs: int, size: int,
                       prioritized: bool, alpha: float, layout: FrameLayout | None,
                       her: dict[str, Any] | None = None) -> Buffer:
    """A buffer storing each frame once behind a VecFrameStack (``layout``), both
    observations of each transition otherwise (leaf by leaf for Dict/Tuple spaces);
    prioritized on top when asked. ``her``: a HER buffer with these arguments
    (replay_buffer_kwargs) instead."""
    actions = np.dtype(np.int32)  # action indices 0..n-1
    if her is not None:
        return her_buffer(her, size, observation_space, num_envs, (), actions)
    storage: ReplayBuffer | FrameStackReplayBuffer
    shape, dtype = tuple(observation_space.shape or ()), np.dtype(observation_space.dtype)
    if nested.is_nested(observation_space):
        storage = NestedReplayBuffer(size, observation_space, ac_dtype=actions)
    elif layout is not None:
        storage = FrameStackReplayBuffer(size, num_envs, shape, dtype, layout.nstack,
                                         layout.axis, ac_dtype=actions)
    else:
        storage = ReplayBuffer(size, shape, dtype, ac_dtype=actions)
    return PrioritizedReplayBuffer(storage, alpha) if prioritized else storage
