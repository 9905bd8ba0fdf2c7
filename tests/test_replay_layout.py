"""The replay buffers' bookkeeping with exact values: how many rows a frame buffer keeps and
which slots each step makes sampleable, a reset in mid-episode, start observations whose older
frames all differ, the nested (Dict/Tuple) buffer, and the bytes the memory check is asked for.

tests/test_replay_buffer.py checks what comes out against random streams; these pin the
numbers a wrong index or bound would change (found by mutation testing,
tests/mutation/targets.toml)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.buffers import replay_buffer as rb
from rlbase.common.buffers.replay_buffer import (
    FrameStackReplayBuffer,
    NestedReplayBuffer,
    PrioritizedReplayBuffer,
    ReplayBuffer,
    make_replay_buffer,
)
from rlbase.common.errors import RLBaseError


class Stream:
    """Frame-stacked observations of ``num_envs`` envs, each frame a 2x3 array of a unique
    counter. A new episode's older frames are distinct counters too (a wrapper may pad with
    anything), so a stack rebuilt from the wrong padding frame is seen."""

    def __init__(self, num_envs: int, nstack: int, seed: int = 0):
        self.nstack, self.rng = nstack, np.random.default_rng(seed)
        self.counter = iter(range(1, 10**9))
        self.stacks = [self._first() for _ in range(num_envs)]

    def _frame(self) -> np.ndarray:
        return np.full((2, 3), next(self.counter), np.int32)

    def _first(self) -> list[np.ndarray]:
        return [self._frame() for _ in range(self.nstack)]

    @staticmethod
    def join(frames: list[np.ndarray]) -> np.ndarray:
        return np.stack(frames, axis=-1)

    def reset_all(self) -> None:
        self.stacks = [self._first() for _ in self.stacks]

    def step(self, p_end: float = 0.15) -> tuple[np.ndarray, ...]:
        n = len(self.stacks)
        obs = np.stack([self.join(s) for s in self.stacks])
        nxt = [s[1:] + [self._frame()] for s in self.stacks]
        next_obs = np.stack([self.join(s) for s in nxt])
        terminated = self.rng.random(n) < p_end
        truncated = ~terminated & (self.rng.random(n) < p_end)
        self.stacks = [self._first() if terminated[i] or truncated[i] else nxt[i]
                       for i in range(n)]
        return (obs, self.rng.integers(0, 4, n), self.rng.normal(size=n).astype(np.float32),
                next_obs, terminated, truncated)


def check_all(buffer: FrameStackReplayBuffer, truth: dict) -> None:
    """Every sampleable slot rebuilds the transition that was stored there."""
    ages = range(1, buffer._limit(buffer.filled) + 1)
    if not len(ages):
        return
    n = buffer.num_envs
    idx = np.concatenate([((buffer.pos - 1 - a) % buffer.rows) * n + np.arange(n) for a in ages])
    batch = buffer.get(idx)
    for k, i in enumerate(idx):
        obs, action, reward, next_obs, terminated, truncated = truth[int(i)]
        np.testing.assert_array_equal(batch.obs[k], obs, err_msg=f"obs of slot {i}")
        assert batch.actions[k] == action and batch.rewards[k] == reward
        assert batch.dones[k] == float(terminated)
        if not terminated:
            np.testing.assert_array_equal(batch.next_obs[k], next_obs,
                                          err_msg=f"next_obs of slot {i}")


def add(buffer: FrameStackReplayBuffer, truth: dict, step: tuple[np.ndarray, ...]
        ) -> tuple[np.ndarray, np.ndarray]:
    valid, invalid = buffer.add(*step)
    row = (buffer.pos - 1) % buffer.rows
    for e in range(buffer.num_envs):
        truth[row * buffer.num_envs + e] = tuple(x[e] for x in step)
    return valid, invalid


@pytest.mark.parametrize("size, num_envs, nstack, rows", [
    (10, 3, 4, 5),     # ceil(10 / 3) = 4 rows are fewer than nstack + 1
    (31, 3, 4, 11),    # ceil(31 / 3) = 11
    (12, 2, 2, 6),
    (4, 2, 3, 4),      # odd nstack: nstack + 1 = 4 rows
])
def test_rows_and_capacity(size, num_envs, nstack, rows) -> None:
    buffer = FrameStackReplayBuffer(size, num_envs, (2, 3, nstack), np.int32, nstack)
    assert (buffer.rows, buffer.capacity) == (rows, rows * num_envs)
    assert buffer.filled == 0 and len(buffer) == 0


@pytest.mark.parametrize("nstack, shape, axis", [(0, (2, 3, 4), -1), (3, (2, 3, 4), -1),
                                                 (2, (), -1), (5, (4, 2, 3), 0)])
def test_observations_that_do_not_split_into_nstack_frames_are_refused(nstack, shape, axis
                                                                        ) -> None:
    with pytest.raises(RLBaseError, match="cannot split observations"):
        FrameStackReplayBuffer(10, 1, shape, np.int32, nstack, axis)


def test_channels_first_and_scalar_frames_split_on_their_axis() -> None:
    buffer = FrameStackReplayBuffer(10, 1, (4, 2, 3), np.int32, 2, stack_axis=0)
    assert buffer.axis == 0 and buffer.per_frame == 2 and buffer.frames.shape == (10, 1, 2, 2, 3)
    buffer = FrameStackReplayBuffer(10, 1, (2, 3, 4), np.int32, 4, stack_axis=-1)
    assert buffer.axis == 2 and buffer.frames.shape == (10, 1, 2, 3, 1)
    buffer = FrameStackReplayBuffer(10, 1, (6,), np.int32, 3, stack_axis=0)
    assert buffer.axis == 0 and buffer.frames.shape == (10, 1, 2)


@pytest.mark.parametrize("ob_shape, axis", [((2, 4, 3), 1), ((6,), 0)])
def test_stacks_along_a_middle_axis_and_of_vectors(ob_shape, axis) -> None:
    """Frames stacked along axis 1 of (2, 4, 3) (two frames of (2, 2, 3)), or vectors of 6 as
    three frames of 2: every stored observation comes back whole."""
    nstack = 2 if axis == 1 else 3
    buffer = FrameStackReplayBuffer(30, 3, ob_shape, np.int32, nstack, stack_axis=axis)
    rng, truth = np.random.default_rng(0), {}
    frame_shape = list(ob_shape)
    frame_shape[axis] //= nstack
    stacks = [[rng.integers(0, 1000, frame_shape) for _ in range(nstack)] for _ in range(3)]
    for _ in range(25):
        obs = np.stack([np.concatenate(s, axis=axis) for s in stacks])
        new = [rng.integers(0, 1000, frame_shape) for _ in range(3)]
        next_obs = np.stack([np.concatenate(s[1:] + [f], axis=axis)
                             for s, f in zip(stacks, new)])
        done = np.zeros(3, bool)
        valid, _ = add(buffer, truth, (obs, np.arange(3), np.ones(3, np.float32), next_obs, done,
                                       done))
        if buffer.filled > 1:  # the row before the newest: flat indices row * 3 + env
            row = (buffer.pos - 2) % buffer.rows
            assert valid.tolist() == [3 * row, 3 * row + 1, 3 * row + 2]
        stacks = [s[1:] + [f] for s, f in zip(stacks, new)]
        check_all(buffer, truth)


def test_each_step_makes_one_row_sampleable_and_ages_one_out() -> None:
    """rows 5, nstack 2: the oldest sampleable age is min(filled - 1, rows - nstack) = 3."""
    buffer = FrameStackReplayBuffer(10, 2, (2, 3, 2), np.int32, 2)
    stream, truth = Stream(2, 2), {}
    expected = [([], []), ([0, 1], []), ([2, 3], []), ([4, 5], []), ([6, 7], [0, 1]),
                ([8, 9], [2, 3]), ([0, 1], [4, 5])]
    lengths = [0, 2, 4, 6, 6, 6, 6]
    for (valid, invalid), length in zip(expected, lengths):
        got = add(buffer, truth, stream.step(p_end=0.0))
        assert [got[0].tolist(), got[1].tolist()] == [valid, invalid]
        assert got[0].dtype == got[1].dtype == np.int64
        assert len(buffer) == length
    check_all(buffer, truth)


@pytest.mark.parametrize("size, nstack, steps", [(3, 2, 6), (300, 2, 305)])
def test_a_full_ring_ages_a_row_out_every_step(size, nstack, steps) -> None:
    """Once full, each step's row pushes the oldest sampleable one out, also for the smallest
    ring (nstack + 1 rows: one sampleable row) and a long one (limits above 256)."""
    buffer = FrameStackReplayBuffer(size, 1, (2, 3, nstack), np.int32, nstack)
    stream, truth = Stream(1, nstack), {}
    limit = buffer.rows - nstack
    for t in range(1, steps + 1):
        valid, invalid = add(buffer, truth, stream.step(p_end=0.0))
        assert valid.tolist() == ([] if t == 1 else [(t - 2) % buffer.rows])
        aged = t - 1 > limit
        assert invalid.tolist() == ([(t - 2 - limit) % buffer.rows] if aged else [])
    check_all(buffer, truth)


@pytest.mark.parametrize("nstack", [1, 3, 4])
def test_start_observations_keep_their_own_older_frames(nstack) -> None:
    buffer = FrameStackReplayBuffer(60, 3, (2, 3, nstack), np.int32, nstack)
    stream, truth = Stream(3, nstack, seed=nstack), {}
    for _ in range(80):
        add(buffer, truth, stream.step(p_end=0.3))
        check_all(buffer, truth)
    assert buffer.start_frames  # nstack 1: nothing older than the one frame, an empty array
    for older in buffer.start_frames.values():
        assert older.shape == (nstack - 1, 2, 3, 1) and older.dtype == np.int32


def test_a_reset_in_mid_episode_cuts_the_stored_episodes() -> None:
    """A second learn() (or a resume) resets the envs with episodes unfinished: the newest
    transitions end there, keeping their true next observations, and no stack reaches back
    into the cut episode."""
    buffer = FrameStackReplayBuffer(40, 3, (2, 3, 3), np.int32, 3)
    buffer.start_episodes()          # nothing stored yet: nothing to cut
    assert buffer.filled == 0 and not buffer.final_frames
    stream, truth = Stream(3, 3), {}
    for t in range(30):
        if t in (7, 8, 19):
            buffer.start_episodes()
            stream.reset_all()
        add(buffer, truth, stream.step(p_end=0.1))
        check_all(buffer, truth)
    row = (buffer.pos - 1) % buffer.rows
    buffer.start_episodes()
    assert buffer.ended[row].all()
    for e in range(3):
        if not truth[row * 3 + e][4]:  # a terminated step's next observation is never used
            np.testing.assert_array_equal(buffer.final_frames[row * 3 + e],
                                          truth[row * 3 + e][3][..., -1:])


def test_overwritten_slots_forget_their_episode_frames() -> None:
    buffer = FrameStackReplayBuffer(8, 1, (2, 3, 2), np.int32, 2)
    stream, truth = Stream(1, 2), {}
    for _ in range(40):
        add(buffer, truth, stream.step(p_end=0.5))
        starts = {i for i in range(buffer.capacity) if buffer.starts[i, 0]}
        assert set(buffer.start_frames) == starts
        check_all(buffer, truth)


# -- the nested buffer ---------------------------------------------------------------------------

SPACE = gym.spaces.Dict({"image": gym.spaces.Box(0, 255, (2, 2), np.uint8),
                         "x": gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
                         "k": gym.spaces.Discrete(5)})


def test_nested_buffer_round_trip_keeps_each_leaf_and_dtype() -> None:
    buffer = make_replay_buffer(6, SPACE, ac_shape=(2,), ac_dtype=np.float32)
    assert isinstance(buffer, NestedReplayBuffer)
    assert [leaf.dtype for leaf in buffer.obs_leaves] == [np.uint8, np.int64, np.float32]
    assert [leaf.shape for leaf in buffer.obs_leaves] == [(6, 2, 2), (6,), (6, 3)]

    def obs(t: int) -> dict:  # two envs: t and t + 100
        return {"image": np.array([np.full((2, 2), t), np.full((2, 2), t + 100)], np.uint8),
                "x": np.array([[t / 10] * 3, [t / 10 + 1] * 3], np.float32),
                "k": np.array([t % 5, (t + 1) % 5])}

    for t in range(4):
        valid, invalid = buffer.add(obs(t), np.full((2, 2), t, np.float32), [t, -t], obs(t + 50),
                                    [t == 3, False], [False, False])
        assert valid.tolist() == [(2 * t) % 6, (2 * t + 1) % 6] and invalid.tolist() == []
    batch = buffer.get(np.array([1, 0, 4]))   # slots 0/1 hold t = 3, slots 4/5 t = 2
    np.testing.assert_array_equal(batch.obs["image"][:, 0, 0], [103, 3, 2])
    np.testing.assert_array_equal(batch.obs["k"], [4, 3, 2])
    np.testing.assert_allclose(batch.next_obs["x"][:, 0], [6.3, 5.3, 5.2], rtol=1e-6)
    np.testing.assert_array_equal(batch.next_obs["image"][:, 0, 0], [153, 53, 52])
    np.testing.assert_array_equal(batch.actions[:, 0], [3, 3, 2])
    np.testing.assert_array_equal(batch.rewards, [-3, 3, 2])
    np.testing.assert_array_equal(batch.dones, [0.0, 1.0, 0.0])


def test_the_right_buffer_for_each_space() -> None:
    with pytest.raises(RLBaseError, match="use ReplayBuffer"):
        NestedReplayBuffer(4, gym.spaces.Box(0, 1, (2,)))
    plain = make_replay_buffer(4, gym.spaces.Box(0, 255, (2,), np.uint8))
    assert type(plain) is ReplayBuffer and plain.obs.dtype == np.uint8
    assert plain.obs.shape == (4, 2)
    as_float = make_replay_buffer(4, gym.spaces.Box(0, 255, (2,), np.uint8), np.float32)
    assert as_float.obs.dtype == np.float32
    scalar = make_replay_buffer(4, gym.spaces.Discrete(3))
    assert scalar.obs.shape == (4,)


# -- the memory check is asked for the bytes each buffer allocates -----------------------------

def asked_bytes(monkeypatch: pytest.MonkeyPatch, make) -> tuple[int, int]:
    asked = []
    monkeypatch.setattr(rb, "check_fits", lambda what, count, row, *a: asked.append((count, row)))
    buffer = make()
    (count, row), = asked
    return count, row, buffer


def test_memory_check_counts_every_array(monkeypatch) -> None:
    # plain: obs and next_obs (2 x 6 float32) + action (2 int64) + reward + done (float32)
    count, row, _ = asked_bytes(monkeypatch, lambda: ReplayBuffer(7, (6,), np.float32, (2,)))
    assert (count, row) == (7, 2 * 24 + 16 + 4 + 4)
    # nested: each leaf twice (uint8 2x2, int64, float32 x3) + action (int64) + reward + done
    count, row, nested = asked_bytes(monkeypatch, lambda: NestedReplayBuffer(5, SPACE))
    assert (count, row) == (5, 2 * (4 + 8 + 12) + 8 + 4 + 4)
    assert sum(a.nbytes for a in nested.obs_leaves + nested.next_obs_leaves) == 5 * 2 * 24
    # frames: one frame (2x3 uint8) + action (int64) + reward (float32) + three bool flags
    count, row, frames = asked_bytes(
        monkeypatch, lambda: FrameStackReplayBuffer(9, 2, (2, 3, 4), np.uint8, 4))
    assert (count, row) == (10, 6 + 8 + 4 + 3)
    per_slot = sum(a.nbytes for a in (frames.frames, frames.actions, frames.rewards,
                                       frames.terminated, frames.ended, frames.starts))
    assert per_slot == 10 * row


def test_prioritized_buffer_over_frames_zeroes_the_slots_that_age_out() -> None:
    storage = FrameStackReplayBuffer(10, 2, (2, 3, 2), np.int32, 2)
    buffer = PrioritizedReplayBuffer(storage, alpha=1.0)
    assert buffer.capacity == storage.capacity == 10
    with pytest.raises(RLBaseError, match="empty"):
        buffer.sample_indices(1, np.random.default_rng(0))
    stream = Stream(2, 2)
    for _ in range(5):
        buffer.add(*stream.step(p_end=0.0))
    # slots 0 and 1 aged out at the fifth step: no priority, never drawn
    assert buffer.sum_tree[0] == buffer.sum_tree[1] == 0.0
    assert buffer.min_tree[0] == float("inf")
    assert buffer.sum_tree.sum() == pytest.approx(6.0)
