"""ACER's replay buffer: a ring of whole rollouts (one ``nsteps`` sequence per env), each with
the behaviour policy's probabilities and its start state.

Behind a VecFrameStack each observation is stored as its newest frame only, plus the older
frames of each sequence's first observation: a sequence of ``nsteps + 1`` stacked observations
costs ``nsteps + nstack`` frames instead of ``(nsteps + 1) * nstack``. VecFrameStack zeroes a
stack when an episode ends, so the older frames of an observation never reach back past an
episode start; :meth:`Buffer.get` rebuilds exactly that. Frames keep their dtype (uint8 stays
uint8).
"""

from __future__ import annotations

import numpy as np

from rlbase.acer.runner import Sequences
from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env import VecEnv, find_wrapper
from rlbase.common.vec_env.vec_frame_stack import VecFrameStack


class Buffer:
    """Keeps the last ``size // nsteps`` rollouts of all envs (the reference's sizing: ``size``
    counts env steps per env).

    env: the VecEnv the sequences come from (its spaces, and its VecFrameStack if any).
    nsteps: steps per sequence.
    size: env steps kept per env.
    state_size: width of the policy's recurrent state (0 for feed-forward policies).
    """

    def __init__(self, env: VecEnv, nsteps: int, size: int, state_size: int = 0):
        if size < nsteps:
            raise RLBaseError(f"buffer_size={size} holds no sequence of nsteps={nsteps}: use "
                              f"buffer_size >= nsteps")
        ob_space, ac_space = env.observation_space, env.action_space
        self.nenv, self.nsteps, self.slots = env.num_envs, nsteps, size // nsteps
        self.nact = int(ac_space.n)
        stack = find_wrapper(env, VecFrameStack)
        self.nstack = stack.nstack if stack is not None and stack.nstack > 1 else 1
        # The stack axis of one observation: channels last or first.
        self.axis = (len(ob_space.shape) - 1 if stack.channels_order == "last" else 0) \
            if self.nstack > 1 else 0
        shape = list(ob_space.shape)
        if self.nstack > 1:
            shape[self.axis] //= self.nstack
        self.ob_shape = tuple(ob_space.shape)
        lead = (self.slots, self.nenv)
        self.frames = np.zeros((*lead, nsteps + 1, *shape), dtype=ob_space.dtype)
        self.older = np.zeros((*lead, self.nstack - 1, *shape), dtype=ob_space.dtype)
        self.actions = np.zeros((*lead, nsteps), dtype=ac_space.dtype)
        self.rewards = np.zeros((*lead, nsteps), dtype=np.float32)
        self.dones = np.zeros((*lead, nsteps), dtype=np.float32)
        self.mus = np.zeros((*lead, nsteps, self.nact), dtype=np.float32)
        self.starts = np.zeros((*lead, nsteps + 1), dtype=np.float32)
        self.states = np.zeros((*lead, state_size), dtype=np.float32)
        self.next_idx = 0
        self.num_in_buffer = 0

    def _split(self, obs: np.ndarray) -> list[np.ndarray]:
        """Stacked observations (any leading axes) -> their frames, oldest first."""
        if self.nstack == 1:
            return [obs]
        axis = self.axis + obs.ndim - len(self.ob_shape)
        return np.split(obs, self.nstack, axis=axis)

    def put(self, seq: Sequences) -> None:
        """Store one rollout, overwriting the oldest when full."""
        i = self.next_idx
        frames = self._split(seq.obs)
        self.frames[i] = frames[-1]
        if self.nstack > 1:
            self.older[i] = np.stack([f[:, 0] for f in frames[:-1]], axis=1)
        self.actions[i], self.rewards[i], self.dones[i] = seq.actions, seq.rewards, seq.dones
        self.mus[i], self.starts[i], self.states[i] = seq.mus, seq.starts, seq.state
        self.next_idx = (i + 1) % self.slots
        self.num_in_buffer = min(self.slots, self.num_in_buffer + 1)

    def has_atleast(self, frames: int) -> bool:
        """Whether the buffer holds at least ``frames`` env steps per env."""
        return self.num_in_buffer >= frames // self.nsteps

    def decode(self, frames: np.ndarray, older: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """Rebuild ``[n, nsteps + 1, *obs_shape]`` stacked observations from newest frames
        ``[n, nsteps + 1, ...]``, the first observation's older frames ``[n, nstack - 1, ...]``
        and the episode starts ``[n, nsteps + 1]``."""
        k = self.nstack
        if k == 1:
            return frames
        ext = np.concatenate([older, frames], axis=1)  # frame of obs j at column j + k - 1
        # starts_before[:, j]: episode starts among observations 1..j. A frame of observation
        # i < j belongs to obs j's stack only if no episode started in (i, j].
        s = starts.copy()
        s[:, 0] = 0  # obs 0's own history is stored as it was
        starts_before = np.cumsum(s, axis=1)
        t = np.arange(self.nsteps + 1)
        parts = []
        for back in range(k - 1, -1, -1):  # oldest frame first
            part = ext[:, t + k - 1 - back]
            same = starts_before[:, t] == starts_before[:, np.maximum(t - back, 0)]
            parts.append(part * same.reshape(*same.shape, *[1] * (part.ndim - 2)).astype(
                part.dtype))
        return np.concatenate(parts, axis=self.axis + 2)

    def get(self, rng: np.random.Generator) -> Sequences:
        """One stored sequence for each env index, each from a random rollout (the batch has
        the shape of a fresh rollout, so training runs the same compiled call)."""
        if self.num_in_buffer == 0:
            raise RLBaseError("cannot sample from an empty ACER replay buffer")
        idx = rng.integers(0, self.num_in_buffer, size=self.nenv)
        env = np.arange(self.nenv)
        starts = self.starts[idx, env]
        obs = self.decode(self.frames[idx, env], self.older[idx, env], starts)
        return Sequences(obs, self.actions[idx, env], self.rewards[idx, env],
                         self.dones[idx, env], self.mus[idx, env], starts,
                         self.states[idx, env])
