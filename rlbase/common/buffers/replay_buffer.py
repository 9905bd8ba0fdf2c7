"""Replay buffers for off-policy learners: uniform, frame-deduplicating, and prioritized.

Every buffer takes one vectorized env step at a time (``num_envs`` transitions) and hands out
transitions by flat index. Observations keep their own dtype (uint8 frames stay uint8).
``terminated`` is what the learner's target cuts on; a truncated transition is stored with the
true final observation as ``next_obs`` so its value is bootstrapped.

* :class:`ReplayBuffer`: stores ``obs`` and ``next_obs`` for every transition. Simple; fine for
  small observations.
* :class:`NestedReplayBuffer`: the same for Dict/Tuple observations (nested batches, see
  rlbase.common.nested), each leaf in arrays of its own shape and dtype.
* :class:`FrameStackReplayBuffer`: for stacked frames (Atari, ``VecFrameStack``) it stores each
  env's newest frame once per step and rebuilds both stacks when sampled, so a buffer of 1e6
  84x84 transitions takes about 7 GB instead of 56 GB. Box observations only.
* :class:`PrioritizedReplayBuffer`: proportional prioritized replay (Schaul et al., 2016) on
  segment trees, over either storage.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from rlbase.common import nested
from rlbase.common.buffers.segment_tree import MinSegmentTree, SumSegmentTree
from rlbase.common.errors import RLBaseError
from rlbase.common.io.memory import check_fits


class Batch(NamedTuple):
    obs: Any                 # an array; nested for Dict/Tuple spaces
    actions: np.ndarray
    rewards: np.ndarray      # float32
    next_obs: Any
    dones: np.ndarray        # float32: 1 where the episode terminated (no bootstrap)


def _check_size(size: int) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise RLBaseError(f"replay buffer size must be a positive integer, got {size!r}")
    return int(size)


def _check_memory(size: int, row_arrays: list[tuple[tuple, npt.DTypeLike]]) -> None:
    """Refuse a buffer of ``size`` rows that cannot fit in memory, before it is allocated
    (numpy's lazy pages would let it grow until the kernel kills the run)."""
    row = sum(int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
              for shape, dtype in row_arrays)
    check_fits("replay buffer", size, row, "transitions", "lower buffer_size")


def _transition_arrays(ac_shape: tuple, ac_dtype: npt.DTypeLike) -> list[tuple[tuple, Any]]:
    """A transition's action, reward and done (what every buffer stores beside observations)."""
    return [(ac_shape, ac_dtype), ((), np.float32), ((), np.float32)]


class ReplayBuffer:
    """A ring of ``size`` transitions (the oldest are overwritten) holding both observations
    of each."""

    # checkpoint.RingStorage: rows 0 .. size - 1 hold data (pos wraps only once it is full)
    ring_fields: tuple[str, ...] = ("obs", "next_obs", "actions", "rewards", "dones")

    def filled_rows(self) -> int:
        return self.size

    def __init__(self, size: int, ob_shape: tuple, ob_dtype: npt.DTypeLike, ac_shape: tuple = (),
                 ac_dtype: npt.DTypeLike = np.int64):
        self.capacity = _check_size(size)
        _check_memory(self.capacity, [(ob_shape, ob_dtype)] * 2 +
                      _transition_arrays(ac_shape, ac_dtype))
        self.obs = np.zeros((self.capacity, *ob_shape), dtype=ob_dtype)
        # np.zeros, not zeros_like: untouched pages stay unallocated (a 50000-frame Atari
        # buffer would otherwise be written through, ~5 GB, before the first step).
        self.next_obs = np.zeros(self.obs.shape, self.obs.dtype)
        self._allocate_transitions(ac_shape, ac_dtype)

    def _allocate_transitions(self, ac_shape: tuple, ac_dtype: npt.DTypeLike) -> None:
        self.actions = np.zeros((self.capacity, *ac_shape), dtype=ac_dtype)
        self.rewards = np.zeros(self.capacity, dtype=np.float32)
        self.dones = np.zeros(self.capacity, dtype=np.float32)
        self.pos = 0
        self.size = 0

    def __len__(self) -> int:
        """The number of transitions that can be sampled."""
        return self.size

    def add(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
            next_obs: np.ndarray, terminated: np.ndarray, truncated: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
        """Store one vectorized step (``num_envs`` transitions; ``next_obs`` holds the final
        observation where an episode ended). Returns the flat indices that became sampleable
        and those that stopped being sampleable (always none here: a slot is rewritten)."""
        idx = self._store(actions, rewards, terminated)
        self.obs[idx] = obs
        self.next_obs[idx] = next_obs
        return idx, idx[:0]

    def _store(self, actions: np.ndarray, rewards: np.ndarray, terminated: np.ndarray
               ) -> np.ndarray:
        """Write all but the observations into the next slots; returns their indices."""
        n = len(rewards)
        idx = (self.pos + np.arange(n)) % self.capacity
        self.actions[idx] = actions
        self.rewards[idx] = rewards
        self.dones[idx] = terminated
        self.pos = int((self.pos + n) % self.capacity)
        self.size = min(self.size + n, self.capacity)
        return idx

    def start_episodes(self) -> None:
        """The env was reset: every env starts a new episode (nothing to do here: each
        transition holds both of its observations)."""

    def sample_indices(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` indices drawn uniformly (with replacement) from the sampleable ones."""
        if self.size == 0:
            raise RLBaseError("cannot sample from an empty replay buffer")
        return rng.integers(0, self.size, size=n)

    def get(self, idx: np.ndarray) -> Batch:
        return Batch(self.obs[idx], self.actions[idx], self.rewards[idx], self.next_obs[idx],
                     self.dones[idx])


class NestedReplayBuffer(ReplayBuffer):
    """A :class:`ReplayBuffer` of Dict/Tuple observations: ``add`` takes and ``get`` returns
    nested batches (rlbase.common.nested); each leaf of ``obs`` and ``next_obs`` is stored in
    its own array (``obs_leaves``, ``next_obs_leaves``: lists, which checkpoints save array by
    array), keeping the leaf's dtype (uint8 images stay uint8)."""

    ring_fields: tuple[str, ...] = ("obs_leaves", "next_obs_leaves", "actions", "rewards", "dones")

    def __init__(self, size: int, ob_space: gym.Space, ac_shape: tuple = (),
                 ac_dtype: npt.DTypeLike = np.int64):
        if not nested.is_nested(ob_space):
            raise RLBaseError(f"NestedReplayBuffer stores Dict/Tuple observations, got "
                              f"{ob_space}: use ReplayBuffer")
        # No super().__init__(): it would allocate the arrays of a single observation.
        self.capacity = _check_size(size)
        leaves = [(leaf.shape or (), leaf.dtype) for leaf in nested.leaf_spaces(ob_space)]
        _check_memory(self.capacity, leaves * 2 + _transition_arrays(ac_shape, ac_dtype))
        self.space = ob_space
        self.obs_leaves = [np.zeros((self.capacity, *(leaf.shape or ())), dtype=leaf.dtype)
                           for leaf in nested.leaf_spaces(ob_space)]
        self.next_obs_leaves = [np.zeros(leaf.shape, leaf.dtype) for leaf in self.obs_leaves]
        self._allocate_transitions(ac_shape, ac_dtype)

    def add(self, obs: Any, actions: np.ndarray, rewards: np.ndarray, next_obs: Any,
            terminated: np.ndarray, truncated: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        idx = self._store(actions, rewards, terminated)
        for dst, src in zip(self.obs_leaves + self.next_obs_leaves,
                            nested.flatten(self.space, obs) + nested.flatten(self.space, next_obs)):
            dst[idx] = src
        return idx, idx[:0]

    def get(self, idx: np.ndarray) -> Batch:
        return Batch(nested.pack(self.space, [leaf[idx] for leaf in self.obs_leaves]),
                     self.actions[idx], self.rewards[idx],
                     nested.pack(self.space, [leaf[idx] for leaf in self.next_obs_leaves]),
                     self.dones[idx])


def make_replay_buffer(size: int, ob_space: gym.Space, ob_dtype: Any = None,
                       ac_shape: tuple = (), ac_dtype: npt.DTypeLike = np.int64) -> ReplayBuffer:
    """A :class:`NestedReplayBuffer` for Dict/Tuple spaces, else a :class:`ReplayBuffer` of
    observations of ``ob_dtype`` (None: the space's)."""
    if nested.is_nested(ob_space):
        return NestedReplayBuffer(size, ob_space, ac_shape, ac_dtype)
    dtype = np.dtype(ob_space.dtype if ob_dtype is None else ob_dtype)
    return ReplayBuffer(size, tuple(ob_space.shape or ()), dtype, ac_shape, ac_dtype)


class FrameStackReplayBuffer:
    """A ring of transitions of stacked-frame observations that stores every frame once.

    Rows are vector steps, columns envs: ``flat index = row * num_envs + env``. A row holds
    each env's newest frame, action, reward and flags. An observation's stack is rebuilt from
    the newest frames of the rows before it; where an episode started inside that window the
    start observation's older frames (zeros with VecFrameStack, copies with gymnasium's
    FrameStackObservation) come from a small per-episode store, and a truncated episode's true
    final frame is kept aside too. The newest row and the ``nstack - 1`` oldest rows (whose
    stacks reach into rows already overwritten) are not sampled.

    size: transitions kept (rounded up to a multiple of num_envs).
    ob_shape / ob_dtype: the stacked observation's shape and dtype.
    nstack: frames per observation.
    stack_axis: the axis of one observation the frames are stacked along (-1: channels last).
    """

    # checkpoint.RingStorage: rows 0 .. filled - 1 hold data (pos wraps only once it is full)
    ring_fields = ("frames", "actions", "rewards", "terminated", "ended", "starts")

    def filled_rows(self) -> int:
        return self.filled

    def __init__(self, size: int, num_envs: int, ob_shape: tuple, ob_dtype: npt.DTypeLike,
                 nstack: int, stack_axis: int = -1, ac_shape: tuple = (),
                 ac_dtype: npt.DTypeLike = np.int64):
        size = _check_size(size)
        ndim = len(ob_shape)
        axis = stack_axis % ndim if ndim else 0
        if nstack < 1 or not ndim or ob_shape[axis] % nstack:
            raise RLBaseError(f"cannot split observations of shape {tuple(ob_shape)} into "
                              f"nstack={nstack} frames along axis {stack_axis}")
        self.num_envs, self.nstack, self.axis = int(num_envs), int(nstack), axis
        self.rows = max(-(-size // self.num_envs), self.nstack + 1)
        self.capacity = self.rows * self.num_envs
        self.ob_shape = tuple(ob_shape)
        self.per_frame = ob_shape[axis] // nstack
        frame_shape = list(ob_shape)
        frame_shape[axis] = self.per_frame
        _check_memory(self.capacity, [(tuple(frame_shape), ob_dtype), (ac_shape, ac_dtype),
                                      ((), np.float32)] + [((), bool)] * 3)
        shape = (self.rows, self.num_envs)
        self.frames = np.zeros((*shape, *frame_shape), dtype=ob_dtype)
        self.actions = np.zeros((*shape, *ac_shape), dtype=ac_dtype)
        self.rewards = np.zeros(shape, dtype=np.float32)
        self.terminated = np.zeros(shape, dtype=bool)
        self.ended = np.zeros(shape, dtype=bool)
        self.starts = np.zeros(shape, dtype=bool)
        self.start_frames: dict[int, np.ndarray] = {}  # flat idx -> older frames of a first obs
        self.final_frames: dict[int, np.ndarray] = {}  # flat idx -> newest frame of final obs
        self._next_is_start = np.ones(self.num_envs, dtype=bool)
        # The newest frame of the newest row's next observations (see start_episodes).
        self._last_next = np.zeros((self.num_envs, *frame_shape), dtype=ob_dtype)
        self.pos = 0
        self.filled = 0

    # -- frames <-> stacks ---------------------------------------------------------------
    def _split(self, stack: np.ndarray) -> list[np.ndarray]:
        """One observation (or a batch, leading axis) -> its frames, oldest first."""
        axis = self.axis + (stack.ndim - len(self.ob_shape))
        return np.split(stack, self.nstack, axis=axis)

    def _join(self, frames: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(frames, axis=self.axis + 1)

    # -- writing -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._valid_ages()) * self.num_envs

    def _limit(self, filled: int) -> int:
        # The oldest sampleable age: a stack reaches nstack - 1 rows further back, which must
        # not have been overwritten (taken conservatively before the ring wraps too).
        return max(min(filled - 1, self.rows - self.nstack), 0)

    def _valid_ages(self) -> range:
        # age 0 is the newest row: its successor (next_obs) is not written yet.
        return range(1, self._limit(self.filled) + 1)

    def _flat(self, row: int) -> np.ndarray:
        return row * self.num_envs + np.arange(self.num_envs)

    def start_episodes(self) -> None:
        """The env was reset: the next stored observation of every env starts an episode.
        A second learn() or a resume resets the env mid-episode: the newest stored
        transitions are cut there like truncations, keeping their true next frames, so no
        stack joins two episodes and no transition gets the new episode's first observation
        as its next one."""
        if self.filled:
            row = (self.pos - 1) % self.rows
            for env in np.flatnonzero(~self.ended[row]):
                self.final_frames[row * self.num_envs + int(env)] = self._last_next[env].copy()
            self.ended[row] = True
        self._next_is_start[:] = True

    def add(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
            next_obs: np.ndarray, terminated: np.ndarray, truncated: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
        """Store one vectorized step; returns the flat indices that became sampleable and
        those that stopped being sampleable."""
        if not isinstance(obs, np.ndarray):  # one cheap check, for a clear error
            raise RLBaseError(f"the frame-stacking replay buffer stores Box observations only, "
                              f"got {type(obs).__name__} observations (Dict/Tuple spaces): "
                              "use NestedReplayBuffer")
        row = self.pos
        limit_before = self._limit(self.filled)
        for key in self._flat(row):
            self.start_frames.pop(int(key), None)
            self.final_frames.pop(int(key), None)
        frames = self._split(np.asarray(obs))
        self.frames[row] = frames[-1]
        self.actions[row] = actions
        self.rewards[row] = rewards
        self.terminated[row] = terminated
        ended = np.logical_or(terminated, truncated)
        self.ended[row] = ended
        self.starts[row] = self._next_is_start
        for env in np.flatnonzero(self._next_is_start):
            # nstack 1: no older frames, an empty array (checkpoints keep arrays only).
            self.start_frames[row * self.num_envs + int(env)] = \
                np.stack([f[env] for f in frames[:-1]]) if self.nstack > 1 else \
                np.zeros((0, *frames[-1].shape[1:]), frames[-1].dtype)
        final = self._split(np.asarray(next_obs))[-1]
        for env in np.flatnonzero(np.logical_and(truncated, np.logical_not(terminated))):
            self.final_frames[row * self.num_envs + int(env)] = final[env].copy()
        self._next_is_start = ended.copy()
        self._last_next[...] = final
        self.pos = (row + 1) % self.rows
        self.filled = min(self.filled + 1, self.rows)
        limit = self._limit(self.filled)
        empty = np.zeros(0, np.int64)
        valid = self._flat((row - 1) % self.rows) if limit >= 1 else empty
        # Once the ring is full every step ages one row past the limit.
        invalid = self._flat((row - 1 - limit_before) % self.rows) \
            if limit_before >= 1 and limit == limit_before else empty
        return valid, invalid

    # -- reading -------------------------------------------------------------------------
    def sample_indices(self, n: int, rng: np.random.Generator) -> np.ndarray:
        ages = self._valid_ages()
        if not len(ages):
            raise RLBaseError("cannot sample from an empty replay buffer")
        age = rng.integers(ages.start, ages.stop, size=n)
        rows = (self.pos - 1 - age) % self.rows
        return rows * self.num_envs + rng.integers(0, self.num_envs, size=n)

    def _stack(self, rows: np.ndarray, envs: np.ndarray) -> np.ndarray:
        """The observations at (rows, envs), rebuilt from stored frames."""
        k = self.nstack
        frames: list[np.ndarray] = [self.frames[rows, envs]]  # newest first for now
        cut = self.starts[rows, envs].copy()  # already walked past the episode's first obs
        cut_row = rows.copy()
        cut_at = np.zeros(len(rows), dtype=np.int64)
        for back in range(1, k):
            r = (rows - back) % self.rows
            frame = self.frames[r, envs]
            for i in np.flatnonzero(cut):
                older = self.start_frames[int(cut_row[i]) * self.num_envs + int(envs[i])]
                # older[-1] is the frame just before the start obs's own newest frame
                frame[i] = older[k - 1 - (back - cut_at[i])]
            frames.append(frame)
            newly = ~cut & self.starts[r, envs]
            cut_row = np.where(newly, r, cut_row)
            cut_at = np.where(newly, back, cut_at)
            cut |= newly
        return self._join(frames[::-1])

    def get(self, idx: np.ndarray) -> Batch:
        idx = np.asarray(idx, dtype=np.int64)
        rows, envs = idx // self.num_envs, idx % self.num_envs
        obs = self._stack(rows, envs)
        ended = self.ended[rows, envs]
        next_rows = np.where(ended, rows, (rows + 1) % self.rows)
        next_obs = self._stack(next_rows, envs)
        for i in np.flatnonzero(ended):
            # The episode ended: the next stack is this one shifted by the final frame (kept
            # for truncations; a terminated transition's next_obs is never used).
            older = self._split(obs[i])[1:]
            newest = self.final_frames.get(int(idx[i]), older[-1] if older else obs[i])
            next_obs[i] = np.concatenate([*older, newest], axis=self.axis)
        return Batch(obs, self.actions[rows, envs], self.rewards[rows, envs], next_obs,
                     self.terminated[rows, envs].astype(np.float32))


Storage = ReplayBuffer | FrameStackReplayBuffer  # NestedReplayBuffer is a ReplayBuffer


class PrioritizedReplayBuffer:
    """Proportional prioritized replay over a storage: P(i) = p_i^alpha / sum_k p_k^alpha.

    New transitions get the largest priority seen so far, so each is replayed at least once
    soon. Importance weights ``(N * P(i))^-beta`` are divided by their largest possible value
    (from the smallest priority), as in the paper, so they only ever scale updates down.

    storage: a :class:`ReplayBuffer` (or :class:`NestedReplayBuffer`) or
        :class:`FrameStackReplayBuffer`.
    alpha: how much prioritization is used (0: uniform, 1: fully proportional).
    """

    def __init__(self, storage: Storage, alpha: float):
        if not alpha >= 0:
            raise RLBaseError(f"prioritized_replay_alpha must be >= 0, got {alpha!r}")
        self.storage = storage
        self.alpha = float(alpha)
        capacity = 1 << max(storage.capacity - 1, 1).bit_length()
        self.sum_tree = SumSegmentTree(capacity)
        self.min_tree = MinSegmentTree(capacity)
        self.max_priority = 1.0

    @property
    def capacity(self) -> int:
        return self.storage.capacity

    def __len__(self) -> int:
        return len(self.storage)

    def add(self, *transition: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        valid, invalid = self.storage.add(*transition)
        if len(invalid):
            self.sum_tree[invalid] = 0.0
            self.min_tree[invalid] = float("inf")
        if len(valid):
            self.sum_tree[valid] = self.max_priority ** self.alpha
            self.min_tree[valid] = self.max_priority ** self.alpha
        return valid, invalid

    def start_episodes(self) -> None:
        self.storage.start_episodes()

    def sample_indices(self, n: int, rng: np.random.Generator) -> np.ndarray:
        total = self.sum_tree.sum()
        if len(self.storage) == 0 or total <= 0:
            raise RLBaseError("cannot sample from an empty replay buffer")
        return self.sum_tree.find_prefixsum_idx(rng.random(n) * total)

    def weights(self, idx: np.ndarray, beta: float) -> np.ndarray:
        """Importance weights of the drawn indices, at most 1."""
        total = self.sum_tree.sum()
        count = len(self.storage)
        max_weight = (self.min_tree.min() / total * count) ** (-beta)
        probs = self.sum_tree[idx] / total
        return ((probs * count) ** (-beta) / max_weight).astype(np.float32)

    def get(self, idx: np.ndarray) -> Batch:
        return self.storage.get(idx)

    def update_priorities(self, idx: np.ndarray, priorities: np.ndarray) -> None:
        """Set the priorities of sampled transitions (e.g. |TD error| + eps; all > 0)."""
        priorities = np.asarray(priorities, dtype=np.float64).ravel()
        if not np.all(priorities > 0):
            raise RLBaseError(f"priorities must be positive, got {priorities.min()}")
        scaled = priorities ** self.alpha
        self.sum_tree[idx] = scaled
        self.min_tree[idx] = scaled
        self.max_priority = max(self.max_priority, float(priorities.max()))


AnyBuffer = ReplayBuffer | FrameStackReplayBuffer | PrioritizedReplayBuffer
