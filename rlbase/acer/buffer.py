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

Behind a VecNormalize the buffer holds raw rollouts (``Sequences.raw``, in the space below the
normalization: images stay uint8), normalized with the current statistics when replayed
(rlbase.common.buffers.raw_replay.RawReplay, SB3's rule): a VecNormalize of observations must sit
above the frame stack, whose raw stacks the buffer rebuilds.

Dict/Tuple observations (:class:`NestedBuffer`) are stored whole, leaf by leaf: no frame
deduplication.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.acer.runner import Sequences
from rlbase.common import nested
from rlbase.common.buffers.raw_replay import RawReplay
from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env import VecEnv, find_wrapper
from rlbase.common.vec_env.vec_frame_stack import VecFrameStack


def frame_layout(env: VecEnv, space: gym.Space) -> tuple[int, int]:
    """``(nstack, stack axis of one observation)`` of the frames the buffer may store once each,
    for observations of ``space`` (the stored, raw ones) from ``env``; ``(1, 0)``: store whole
    observations (always for Dict/Tuple observations)."""
    if nested.is_nested(space):
        return 1, 0
    stack = find_wrapper(env, VecFrameStack)
    if not isinstance(stack, VecFrameStack) or stack.nstack == 1:
        return 1, 0
    if stack.observation_space != space:
        return 1, 0  # a wrapper above the stack changes observations: keep them whole
    ndim = len(space.shape or ())
    return stack.nstack, (ndim - 1 if stack.channels_order == "last" else 0)


def normalized(seq: Sequences, raw: RawReplay) -> Sequences:
    """Stored (raw) sequences as the learner sees them now: observations, final ones too, and
    rewards normalized with the current statistics (the behaviour probabilities stay: they
    are those of the actions taken)."""
    return replace(seq, obs=raw.normalize_obs(seq.obs), rewards=raw.normalize_rewards(
        seq.rewards), final_obs=raw.normalize_obs(seq.final_obs))


class Buffer:
    """Keeps the last ``size // nsteps`` rollouts of all envs (the reference's sizing: ``size``
    counts env steps per env); ``state_size``: the policy's recurrent state's width."""

    def __init__(self, ob_space: gym.Space, ac_space: gym.spaces.Discrete, num_envs: int,
                 nsteps: int, size: int, state_size: int = 0):
        if size < nsteps:
            raise RLBaseError(f"buffer_size={size} holds no sequence of nsteps={nsteps}: use "
                              f"buffer_size >= nsteps")
        self.num_envs, self.nsteps, self.slots = num_envs, nsteps, size // nsteps
        self.nact = int(ac_space.n)
        self._set_space(ob_space)
        self.ac_dtype = np.dtype(ac_space.dtype)
        self.state_size = state_size
        self._allocate(1, 0, rollouts=0)  # no storage until configure()

    def _set_space(self, space: gym.Space) -> None:
        """Store observations of ``space``."""
        self.space = space
        self.ob_shape = tuple(space.shape or ())
        self.ob_dtype = np.dtype(space.dtype)

    def _allocate(self, nstack: int, axis: int, rollouts: int) -> None:
        self.nstack, self.axis = nstack, axis
        lead, nsteps = (rollouts, self.num_envs), self.nsteps
        self._allocate_observations(lead)
        self.actions = np.zeros((*lead, nsteps), dtype=self.ac_dtype)
        self.rewards = np.zeros((*lead, nsteps), dtype=np.float32)
        self.dones = np.zeros((*lead, nsteps), dtype=np.float32)
        self.truncated = np.zeros((*lead, nsteps), dtype=np.float32)
        self.mus = np.zeros((*lead, nsteps, self.nact), dtype=np.float32)
        self.starts = np.zeros((*lead, nsteps + 1), dtype=np.float32)
        self.states = np.zeros((*lead, self.state_size), dtype=np.float32)
        # Keyed by (rollout * num_envs + env) * nsteps + t: the recurrent state after a truncated
        # step (its final observation is kept alike, see _put_final).
        self.final_states: dict[int, np.ndarray] = {}
        self.next_idx = 0
        self.num_in_buffer = 0

    def _allocate_observations(self, lead: tuple[int, int]) -> None:
        frame = list(self.ob_shape)
        if self.nstack > 1:
            frame[self.axis] //= self.nstack
        self.frames = np.zeros((*lead, self.nsteps + 1, *frame), dtype=self.ob_dtype)
        self.older = np.zeros((*lead, self.nstack - 1, *frame), dtype=self.ob_dtype)
        # The newest frame of the final observation of a truncated step.
        self.final_frames: dict[int, np.ndarray] = {}

    @property
    def allocated(self) -> bool:
        return self.actions.shape[0] == self.slots

    def configure(self, env: VecEnv) -> None:
        """Allocate the storage for ``env`` (the training env): its raw observations (below a
        VecNormalize, see rlbase.common.buffers.raw_replay.RawReplay) in its frame layout; kept when
        it is the one already allocated."""
        space = RawReplay(env).stored_space(env.observation_space)
        nstack, axis = frame_layout(env, space)
        if self.allocated and (nstack, axis, space) == (self.nstack, self.axis, self.space):
            return
        if self.num_in_buffer:
            raise RLBaseError(f"the env gives observations of {space} stacking {nstack} "
                              f"frames, the replay buffer holds rollouts of {self.space} "
                              f"stacking {self.nstack}: train on envs wrapped alike")
        self._set_space(space)
        self._allocate(nstack, axis, self.slots)

    def _split(self, obs: np.ndarray) -> list[np.ndarray]:
        """Stacked observations (any leading axes) -> their frames, oldest first."""
        if self.nstack == 1:
            return [obs]
        axis = self.axis + obs.ndim - len(self.ob_shape)
        return np.split(obs, self.nstack, axis=axis)

    def put(self, seq: Sequences) -> None:
        """Store one rollout, overwriting the oldest when full."""
        if not self.allocated:
            raise RLBaseError("the replay buffer has no storage yet: configure(env) first")
        i = self.next_idx
        self._put_observations(i, seq.obs)
        self.actions[i], self.rewards[i], self.dones[i] = seq.actions, seq.rewards, seq.dones
        self.mus[i], self.starts[i], self.states[i] = seq.mus, seq.starts, seq.state
        self.truncated[i] = seq.truncated
        base, span = i * self.num_envs * self.nsteps, self.num_envs * self.nsteps
        for key in [k for k in self.final_states if base <= k < base + span]:
            del self.final_states[key]
            self._drop_final(key)
        for j, flat in enumerate(np.flatnonzero(seq.truncated).tolist()):
            self._put_final(base + flat, seq.final_obs, j)
            self.final_states[base + flat] = seq.final_state[j].copy()
        self.next_idx = (i + 1) % self.slots
        self.num_in_buffer = min(self.slots, self.num_in_buffer + 1)

    def _put_observations(self, i: int, obs: np.ndarray) -> None:
        frames = self._split(obs)
        self.frames[i] = frames[-1]
        if self.nstack > 1:
            self.older[i] = np.stack([f[:, 0] for f in frames[:-1]], axis=1)

    def _put_final(self, key: int, final_obs: np.ndarray, j: int) -> None:
        # np.array, not .copy(): a Discrete observation's row is a numpy scalar, and
        # checkpoints keep arrays only.
        self.final_frames[key] = np.array(self._split(final_obs[j])[-1])

    def _drop_final(self, key: int) -> None:
        del self.final_frames[key]

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
        idx = rng.integers(0, self.num_in_buffer, size=self.num_envs)
        env = np.arange(self.num_envs)
        starts = self.starts[idx, env]
        obs = self._observations(idx, env, starts)
        truncated = self.truncated[idx, env]
        # (key, env, step) of each truncated step, env-major as np.flatnonzero.
        cut = [((int(idx[e]) * self.num_envs + int(e)) * self.nsteps + int(t), int(e), int(t))
               for e, t in zip(*np.nonzero(truncated))]
        final_obs = self._final_observations(obs, cut)
        final_state = np.array([self.final_states[key] for key, _, _ in cut],
                               np.float32).reshape(len(cut), self.state_size)
        return Sequences(obs, self.actions[idx, env], self.rewards[idx, env],
                         self.dones[idx, env], self.mus[idx, env], starts,
                         self.states[idx, env], truncated, final_obs, final_state)

    def _observations(self, idx: np.ndarray, env: np.ndarray, starts: np.ndarray) -> Any:
        return self.decode(self.frames[idx, env], self.older[idx, env], starts)

    def _final_observations(self, obs: np.ndarray, cut: list[tuple[int, int, int]]) -> Any:
        final_obs = np.zeros((len(cut), *self.ob_shape), dtype=self.ob_dtype)
        for j, (key, e, t) in enumerate(cut):
            final_obs[j] = self._final_observation(obs[e, t], self.final_frames[key])
        return final_obs


class NestedBuffer(Buffer):
    """A :class:`Buffer` of Dict/Tuple observations (nested, rlbase.common.nested): each leaf
    stored whole in its own arrays (``obs_leaves``), each truncated step's final observation
    leaf by leaf (``final_leaves``); lists, which checkpoints save array by array."""

    def _set_space(self, space: gym.Space) -> None:
        self.space = space  # no shape or dtype of its own

    def _allocate_observations(self, lead: tuple[int, int]) -> None:
        leaves = nested.leaf_spaces(self.space)
        self.obs_leaves = [np.zeros((*lead, self.nsteps + 1, *(leaf.shape or ())), leaf.dtype)
                           for leaf in leaves]
        self.final_leaves: list[dict[int, np.ndarray]] = [{} for _ in leaves]

    def _put_observations(self, i: int, obs: Any) -> None:
        for dst, src in zip(self.obs_leaves, nested.flatten(self.space, obs)):
            dst[i] = src

    def _put_final(self, key: int, final_obs: Any, j: int) -> None:
        for store, leaf in zip(self.final_leaves, nested.flatten(self.space, final_obs)):
            store[key] = np.array(leaf[j])  # an array even for a Discrete entry's scalar

    def _drop_final(self, key: int) -> None:
        for store in self.final_leaves:
            del store[key]

    def _observations(self, idx: np.ndarray, env: np.ndarray, starts: np.ndarray) -> Any:
        return nested.pack(self.space, [leaf[idx, env] for leaf in self.obs_leaves])

    def _final_observations(self, obs: Any, cut: list[tuple[int, int, int]]) -> Any:
        leaves = [np.zeros((len(cut), *(leaf.shape or ())), leaf.dtype)
                  for leaf in nested.leaf_spaces(self.space)]
        for j, (key, _, _) in enumerate(cut):
            for dst, store in zip(leaves, self.final_leaves):
                dst[j] = store[key]
        return nested.pack(self.space, leaves)
