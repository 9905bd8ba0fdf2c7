"""Replay buffers: what goes in comes out, frames are stored once, priorities steer sampling."""

import numpy as np
import pytest

from rlbase.common.buffers.replay_buffer import (
    FrameStackReplayBuffer,
    PrioritizedReplayBuffer,
    ReplayBuffer,
)
from rlbase.common.errors import RLBaseError


def stacked_stream(num_envs, steps, nstack, axis, pad, seed):
    """Vector steps of frame-stacked observations with random terminations and truncations.

    Each frame is a 2x3 array holding a unique counter, so every rebuilt stack can be checked.
    ``pad``: what fills a new episode's stack, 'zeros' (VecFrameStack) or 'repeat'
    (gymnasium's FrameStackObservation). Yields (obs, actions, rewards, next_obs,
    terminated, truncated) with next_obs the true next (or final) observation.
    """
    rng = np.random.default_rng(seed)
    counter = iter(range(1, 10**9))
    frame = lambda: np.full((2, 3), next(counter), np.int32)  # noqa: E731

    def first():
        f = frame()
        return [np.zeros_like(f) if pad == "zeros" else f] * (nstack - 1) + [f]

    join = lambda frames: np.concatenate([f[..., None] if axis == -1 else f[None]  # noqa: E731
                                          for f in frames], axis=axis)
    stacks = [first() for _ in range(num_envs)]
    for _ in range(steps):
        obs = np.stack([join(s) for s in stacks])
        nxt = [s[1:] + [frame()] for s in stacks]
        next_obs = np.stack([join(s) for s in nxt])
        terminated = rng.random(num_envs) < 0.08
        truncated = ~terminated & (rng.random(num_envs) < 0.08)
        yield (obs, rng.integers(0, 4, num_envs), rng.normal(size=num_envs).astype(np.float32),
               next_obs, terminated, truncated)
        stacks = [first() if terminated[i] or truncated[i] else nxt[i]
                  for i in range(num_envs)]


def fill(buffer, stream, num_envs):
    """Add the stream; remember each flat slot's transition the way FrameStack lays it out."""
    truth = {}
    for obs, actions, rewards, next_obs, terminated, truncated in stream:
        buffer.add(obs, actions, rewards, next_obs, terminated, truncated)
        row = (buffer.pos - 1) % buffer.rows
        for e in range(num_envs):
            truth[row * num_envs + e] = (obs[e], actions[e], rewards[e], next_obs[e],
                                         terminated[e])
    return truth


@pytest.mark.parametrize("num_envs,size,steps,nstack,axis,pad", [
    (1, 1000, 300, 4, -1, "zeros"),    # not yet full
    (3, 60, 400, 4, -1, "zeros"),      # wrapped many times
    (2, 40, 300, 3, 0, "repeat"),      # channels first, FrameStackObservation-style padding
    (2, 30, 100, 1, -1, "zeros"),      # no stacking: each observation stored once
])
def test_frame_stack_buffer_rebuilds_every_transition(num_envs, size, steps, nstack, axis, pad):
    shape = (2, 3, nstack) if axis == -1 else (nstack, 2, 3)
    buffer = FrameStackReplayBuffer(size, num_envs, shape, np.int32, nstack, axis)
    truth = fill(buffer, stacked_stream(num_envs, steps, nstack, axis, pad, seed=size), num_envs)
    idx = np.unique(buffer.sample_indices(20000, np.random.default_rng(0)))
    assert len(idx) == len(buffer) > 0  # every sampleable slot is drawn at some point
    batch = buffer.get(idx)
    for k, i in enumerate(idx):
        obs, action, reward, next_obs, terminated = truth[int(i)]
        np.testing.assert_array_equal(batch.obs[k], obs)
        assert batch.actions[k] == action and batch.rewards[k] == reward
        assert batch.dones[k] == float(terminated)
        if not terminated:  # a terminated transition's next observation is never used
            np.testing.assert_array_equal(batch.next_obs[k], next_obs)


def test_frame_stack_buffer_keeps_dtype_and_stores_frames_once():
    shape = (84, 84, 4)
    buffer = FrameStackReplayBuffer(1000, 1, shape, np.uint8, 4)
    plain = ReplayBuffer(1000, shape, np.uint8)
    assert buffer.frames.dtype == np.uint8 and plain.obs.dtype == np.uint8
    per_transition = sum(a.nbytes for a in (buffer.frames, buffer.actions, buffer.rewards,
                                            buffer.terminated, buffer.ended, buffer.starts))
    per_transition /= buffer.capacity
    assert per_transition < 84 * 84 + 32
    assert per_transition * 1e6 < 8 * 2**30  # a 1e6-transition Atari buffer fits in 8 GiB
    assert (plain.obs.nbytes + plain.next_obs.nbytes) / plain.capacity == 8 * 84 * 84


def test_plain_buffer_round_trip_and_ring():
    buffer = ReplayBuffer(5, (2,), np.float32)
    for t in range(7):
        obs = np.full((1, 2), t, np.float32)
        buffer.add(obs, [t % 3], [t], obs + 1, [t == 6], [False])
    assert len(buffer) == 5
    batch = buffer.get(np.arange(5))
    assert sorted(batch.rewards.tolist()) == [2, 3, 4, 5, 6]  # the two oldest were replaced
    np.testing.assert_array_equal(batch.next_obs, batch.obs + 1)
    assert batch.dones[batch.rewards == 6] == 1.0
    with pytest.raises(RLBaseError, match="empty"):
        ReplayBuffer(3, (2,), np.float32).sample_indices(1, np.random.default_rng(0))


def test_prioritized_sampling_follows_priorities():
    storage = ReplayBuffer(8, (1,), np.float32)
    buffer = PrioritizedReplayBuffer(storage, alpha=0.5)
    for _ in range(6):
        buffer.add(np.zeros((1, 1)), [0], [0.0], np.zeros((1, 1)), [False], [False])
    priorities = np.array([1.0, 4.0, 9.0, 16.0, 0.25, 2.25])
    buffer.update_priorities(np.arange(6), priorities)
    expected = priorities ** 0.5 / (priorities ** 0.5).sum()
    draws = buffer.sample_indices(200_000, np.random.default_rng(0))
    assert draws.max() < 6  # slots never written are never drawn
    freq = np.bincount(draws, minlength=6) / len(draws)
    np.testing.assert_allclose(freq, expected, atol=0.004)
    # importance weights: (N * P(i))^-beta over the largest, from the smallest priority
    weights = buffer.weights(np.arange(6), beta=0.4)
    np.testing.assert_allclose(weights, (expected * 6) ** -0.4 / (expected.min() * 6) ** -0.4,
                               rtol=1e-6)
    assert weights.max() == pytest.approx(1.0)
    # a new transition gets the largest priority seen so far
    buffer.add(np.zeros((1, 1)), [0], [0.0], np.zeros((1, 1)), [False], [False])
    assert buffer.sum_tree[6] == pytest.approx(16.0 ** 0.5)
    with pytest.raises(RLBaseError, match="positive"):
        buffer.update_priorities(np.arange(2), [1.0, 0.0])


def test_prioritized_frame_buffer_never_draws_unusable_slots():
    # Over a frame buffer the tree must follow which rows can be rebuilt as the ring wraps.
    num_envs, nstack = 2, 4
    storage = FrameStackReplayBuffer(40, num_envs, (2, 3, nstack), np.int32, nstack)
    buffer = PrioritizedReplayBuffer(storage, alpha=1.0)
    rng = np.random.default_rng(0)
    truth = {}
    for step in stacked_stream(num_envs, 300, nstack, -1, "zeros", seed=3):
        buffer.add(*step)
        row = (storage.pos - 1) % storage.rows
        truth.update({row * num_envs + e: step[0][e] for e in range(num_envs)})
        if not len(buffer):
            continue
        draws = buffer.sample_indices(64, rng)
        assert np.isin(draws, storage.sample_indices(5000, rng)).all()
        buffer.update_priorities(draws, rng.uniform(0.1, 3.0, len(draws)))
    positive = np.flatnonzero(buffer.sum_tree[np.arange(storage.capacity)] > 0)
    assert len(positive) == len(storage)
    batch = buffer.get(positive)
    for k, i in enumerate(positive):
        np.testing.assert_array_equal(batch.obs[k], truth[int(i)])


@pytest.mark.parametrize("gamma", [0.99, 1.0])
def test_buffers_store_the_done_flags_the_target_cuts_on(gamma):
    # DQN stores target_dones(terminated, truncated, gamma) as the done flag: a truncation
    # counts as terminal exactly when gamma == 1; its true final observation is kept either
    # way (frame buffer: the final frame, only where it is still bootstrapped).
    from rlbase.common.buffers.transitions import target_dones

    terminated, truncated = np.array([True, False, False]), np.array([False, True, False])
    dones = target_dones(terminated, truncated, gamma)
    obs = np.arange(3 * 2 * 3 * 2, dtype=np.int32).reshape(3, 2, 3, 2)
    next_obs = obs + 1000
    plain = ReplayBuffer(10, (2, 3, 2), np.int32)
    frames = FrameStackReplayBuffer(30, 3, (2, 3, 2), np.int32, 2)
    for buffer in (plain, frames):
        buffer.add(obs, np.zeros(3), np.zeros(3), next_obs, dones, truncated)
        buffer.add(obs, np.zeros(3), np.zeros(3), next_obs, dones, truncated)
    expected = [1.0, 1.0 if gamma == 1.0 else 0.0, 0.0]
    np.testing.assert_array_equal(plain.get(np.arange(3)).dones, expected)
    batch = frames.get(np.arange(3))  # the first row: sampleable once the second is written
    np.testing.assert_array_equal(batch.dones, expected)
    if gamma < 1.0:  # the truncated env's next observation ends with its true final frame
        np.testing.assert_array_equal(batch.next_obs[1][..., -1], next_obs[1][..., -1])
