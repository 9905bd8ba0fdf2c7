"""ACER's replay buffer: a ring of whole rollouts (one ``nsteps`` sequence per env), each with
the behaviour policy's probabilities, its start state and its truncated steps' final
observations.

Behind a VecFrameStack each observation is stored as its newest frame only, plus the older
frames of each sequence's first observation: a sequence of ``nsteps + 1`` stacked observations
costs ``nsteps + nstack`` frames instead of ``(nsteps + 1) * nstack``. VecFrameStack zeroes a
stack when an episode ends, so the older frames of an observation never reach back past an
episode start; :meth:`Buffer.get` rebuilds exactly that. A truncated step's final observation
is the step's stack aged by one frame plus its newest frame, so only that frame is kept (in a
side store: truncations are rare). Frames keep their dtype (uint8 stays uint8).

The storage is allocated by :meth:`Buffer.configure`, once the training env (and so the frame
layout) is known: a model built or loaded without an env holds no frames.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from rlbase.acer.runner import Sequences
from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env import VecEnv, find_wrapper
from rlbase.common.vec_env.vec_frame_stack import VecFrameStack
from rlbase.common.vec_env.vec_normalize import VecNormalize


def frame_layout(env: VecEnv) -> tuple[int, int]:
    """``(nstack, stack axis of one observation)`` of the frames the buffer may store once each;
    ``(1, 0)``: store whole observations."""
    stack = find_wrapper(env, VecFrameStack)
    if not isinstance(stack, VecFrameStack) or stack.nstack == 1:
        return 1, 0
    normalizer = find_wrapper(env, VecNormalize)
    if isinstance(normalizer, VecNormalize) and normalizer.stats.ob_rms is not None and \
            find_wrapper(normalizer.venv, VecFrameStack) is stack:
        # Each slot of a stack is normalized with its own statistics (which keep moving): a
        # stack rebuilt from stored newest frames would differ from the one the agent saw.
        raise RLBaseError("ACER's replay buffer stores each frame once and rebuilds the "
                          "stacks, which a VecNormalize above the VecFrameStack would change: "
                          "wrap VecNormalize inside the VecFrameStack (normalize each frame) "
                          "or use replay_ratio=0")
    if stack.observation_space != env.observation_space:
        return 1, 0  # a wrapper above the stack changes observations: keep them whole
    ndim = len(env.observation_space.shape or ())
    return stack.nstack, (ndim - 1 if stack.channels_order == "last" else 0)


class Buffer:
    """Keeps the last ``size // nsteps`` rollouts of all envs (the reference's sizing: ``size``
    counts env steps per env).

    ob_space / ac_space: the env's observation space and (Discrete) action space.
    nenv: the number of envs (one sequence each per rollout).
    nsteps: steps per sequence.
    size: env steps kept per env.
    state_size: width of the policy's recurrent state (0 for feed-forward policies).
    """

    def __init__(self, ob_space: gym.Space, ac_space: gym.spaces.Discrete, nenv: int,
                 nsteps: int, size: int, state_size: int = 0):
        if size < nsteps:
            raise RLBaseError(f"buffer_size={size} holds no sequence of nsteps={nsteps}: use "
                              f"buffer_size >= nsteps")
        self.nenv, self.nsteps, self.slots = nenv, nsteps, size // nsteps
        self.nact = int(ac_space.n)
        self.ob_shape = tuple(ob_space.shape or ())
        self.ob_dtype = np.dtype(ob_space.dtype)
        self.ac_dtype = np.dtype(ac_space.dtype)
        self.state_size = state_size
        self._allocate(1, 0, rollouts=0)  # no storage until configure()

    def _allocate(self, nstack: int, axis: int, rollouts: int) -> None:
        self.nstack, self.axis = nstack, axis
        frame = list(self.ob_shape)
        if nstack > 1:
            frame[axis] //= nstack
        lead, nsteps = (rollouts, self.nenv), self.nsteps
        self.frames = np.zeros((*lead, nsteps + 1, *frame), dtype=self.ob_dtype)
        self.older = np.zeros((*lead, nstack - 1, *frame), dtype=self.ob_dtype)
        self.actions = np.zeros((*lead, nsteps), dtype=self.ac_dtype)
        self.rewards = np.zeros((*lead, nsteps), dtype=np.float32)
        self.dones = np.zeros((*lead, nsteps), dtype=np.float32)
        self.truncated = np.zeros((*lead, nsteps), dtype=np.float32)
        self.mus = np.zeros((*lead, nsteps, self.nact), dtype=np.float32)
        self.starts = np.zeros((*lead, nsteps + 1), dtype=np.float32)
        self.states = np.zeros((*lead, self.state_size), dtype=np.float32)
        # Keyed by (rollout * nenv + env) * nsteps + t: the newest frame of the final
        # observation of a truncated step, and the recurrent state after that step.
        self.final_frames: dict[int, np.ndarray] = {}
        self.final_states: dict[int, np.ndarray] = {}
        self.next_idx = 0
        self.num_in_buffer = 0

    def configure(self, env: VecEnv) -> None:
        """Allocate the storage for the frame layout of ``env`` (the training env); kept when
        the layout is the one already allocated."""
        nstack, axis = frame_layout(env)
        if self.frames.shape[0] == self.slots and (nstack, axis) == (self.nstack, self.axis):
            return
        if self.num_in_buffer:
            raise RLBaseError(f"the env stacks {nstack} frames, the replay buffer holds "
                              f"rollouts of {self.nstack}: train on envs wrapped alike")
        self._allocate(nstack, axis, self.slots)

    def _split(self, obs: np.ndarray) -> list[np.ndarray]:
        """Stacked observations (any leading axes) -> their frames, oldest first."""
        if self.nstack == 1:
            return [obs]
        axis = self.axis + obs.ndim - len(self.ob_shape)
        return np.split(obs, self.nstack, axis=axis)

    def put(self, seq: Sequences) -> None:
        """Store one rollout, overwriting the oldest when full."""
        if self.frames.shape[0] != self.slots:
            raise RLBaseError("the replay buffer has no storage yet: configure(env) first")
        i = self.next_idx
        frames = self._split(seq.obs)
        self.frames[i] = frames[-1]
        if self.nstack > 1:
            self.older[i] = np.stack([f[:, 0] for f in frames[:-1]], axis=1)
        self.actions[i], self.rewards[i], self.dones[i] = seq.actions, seq.rewards, seq.dones
        self.mus[i], self.starts[i], self.states[i] = seq.mus, seq.starts, seq.state
        self.truncated[i] = seq.truncated
        base, span = i * self.nenv * self.nsteps, self.nenv * self.nsteps
        for key in [k for k in self.final_frames if base <= k < base + span]:
            del self.final_frames[key], self.final_states[key]
        for j, flat in enumerate(np.flatnonzero(seq.truncated).tolist()):
            self.final_frames[base + flat] = self._split(seq.final_obs[j])[-1].copy()
            self.final_states[base + flat] = seq.final_state[j].copy()
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

    def _final_observation(self, stack: np.ndarray, frame: np.ndarray) -> np.ndarray:
        """The stack after a step from ``stack``: aged by one frame, ``frame`` the newest."""
        if self.nstack == 1:
            return frame
        return np.concatenate([*self._split(stack)[1:], frame], axis=self.axis)

    def get(self, rng: np.random.Generator) -> Sequences:
        """One stored sequence for each env index, each from a random rollout (the batch has
        the shape of a fresh rollout, so training runs the same compiled call)."""
        if self.num_in_buffer == 0:
            raise RLBaseError("cannot sample from an empty ACER replay buffer")
        idx = rng.integers(0, self.num_in_buffer, size=self.nenv)
        env = np.arange(self.nenv)
        starts = self.starts[idx, env]
        obs = self.decode(self.frames[idx, env], self.older[idx, env], starts)
        truncated = self.truncated[idx, env]
        cut = list(zip(*np.nonzero(truncated)))  # env-major, as np.flatnonzero
        final_obs = np.zeros((len(cut), *self.ob_shape), dtype=self.ob_dtype)
        final_state = np.zeros((len(cut), self.state_size), dtype=np.float32)
        for j, (e, t) in enumerate(cut):
            key = (int(idx[e]) * self.nenv + int(e)) * self.nsteps + int(t)
            final_obs[j] = self._final_observation(obs[e, t], self.final_frames[key])
            final_state[j] = self.final_states[key]
        return Sequences(obs, self.actions[idx, env], self.rewards[idx, env],
                         self.dones[idx, env], self.mus[idx, env], starts,
                         self.states[idx, env], truncated, final_obs, final_state)
