"""The plain and the prioritized replay buffers with exact values on tiny inputs: the memory
guard's row size, the ring's positions, uniform draws over every stored row, new
transitions at the largest priority, and the checks on sizes, alpha and priorities."""

from __future__ import annotations

import numpy as np
import pytest

from rlbase.common.buffers import replay_buffer
from rlbase.common.buffers.replay_buffer import PrioritizedReplayBuffer, ReplayBuffer
from rlbase.common.errors import RLBaseError


def add(buffer, n, reward=0.0, start=0):
    obs = np.arange(start, start + n, dtype=np.float32)[:, None]
    return buffer.add(obs, np.zeros(n, np.int64), np.full(n, reward, np.float32), obs + 100,
                      np.zeros(n, bool), np.zeros(n, bool))


def test_the_memory_guard_is_asked_about_whole_transitions(monkeypatch):
    asked = []
    monkeypatch.setattr(replay_buffer, "check_fits", lambda *args: asked.append(args[1:3]))
    ReplayBuffer(10, (4,), np.float32, (2,), np.float64)
    # two float32 observations of 4, a float64 action of 2, a float32 reward and done
    assert asked == [(10, 2 * 16 + 16 + 4 + 4)]


@pytest.mark.parametrize("size", [0, -3, True, 2.0, "8"])
def test_bad_sizes_are_refused_and_one_is_allowed(size):
    with pytest.raises(RLBaseError, match="positive integer"):
        ReplayBuffer(size, (1,), np.float32)
    assert ReplayBuffer(np.int64(1), (1,), np.float32).capacity == 1


def test_the_ring_writes_at_pos_and_wraps():
    buffer = ReplayBuffer(4, (1,), np.float32)
    valid, gone = add(buffer, 1)
    assert valid.tolist() == [0] and gone.size == 0 and buffer.pos == 1
    valid, gone = add(buffer, 2, start=1)
    assert valid.tolist() == [1, 2] and gone.size == 0 and buffer.pos == 3
    valid, _ = add(buffer, 3, start=3)
    assert valid.tolist() == [3, 0, 1] and buffer.pos == 2 and len(buffer) == 4
    np.testing.assert_array_equal(buffer.obs[:, 0], [4, 5, 2, 3])
    np.testing.assert_array_equal(buffer.next_obs[:, 0], [104, 105, 102, 103])


def test_uniform_draws_cover_every_stored_row_and_nothing_else():
    buffer = ReplayBuffer(8, (1,), np.float32)
    with pytest.raises(RLBaseError, match="empty"):
        buffer.sample_indices(1, np.random.default_rng(0))
    add(buffer, 3)
    drawn = buffer.sample_indices(300, np.random.default_rng(0))
    assert set(drawn.tolist()) == {0, 1, 2}


def test_prioritized_new_transitions_get_the_largest_priority_seen():
    buffer = PrioritizedReplayBuffer(ReplayBuffer(4, (1,), np.float32), alpha=0.5)
    assert buffer.sum_tree.capacity == 4 and buffer.min_tree.capacity == 4
    add(buffer, 2)
    assert buffer.sum_tree[0] == 1.0 and buffer.min_tree.min() == 1.0  # 1.0 ** alpha
    buffer.update_priorities(np.array([0]), np.array([4.0]))
    assert buffer.sum_tree[0] == 2.0 and buffer.max_priority == 4.0
    add(buffer, 1, start=2)
    assert buffer.sum_tree[2] == 2.0 and buffer.min_tree[2] == 2.0  # 4.0 ** 0.5
    assert buffer.sum_tree.sum() == 2.0 + 1.0 + 2.0 and buffer.min_tree.min() == 1.0
    weights = buffer.weights(np.array([0, 1]), beta=1.0)
    # P = (2/5, 1/5); weights (3P)^-1 over the largest (3 * 1/5)^-1
    np.testing.assert_allclose(weights, [0.5, 1.0], rtol=1e-6)


@pytest.mark.parametrize("capacity, tree", [(1, 2), (2, 2), (3, 4), (4, 4), (5, 8), (8, 8)])
def test_prioritized_trees_round_the_capacity_up_to_a_power_of_two(capacity, tree):
    buffer = PrioritizedReplayBuffer(ReplayBuffer(capacity, (1,), np.float32), alpha=1.0)
    assert buffer.sum_tree.capacity == tree


def test_prioritized_checks_alpha_priorities_and_emptiness():
    for alpha in (-0.1, float("nan")):
        with pytest.raises(RLBaseError, match="alpha"):
            PrioritizedReplayBuffer(ReplayBuffer(2, (1,), np.float32), alpha=alpha)
    buffer = PrioritizedReplayBuffer(ReplayBuffer(2, (1,), np.float32), alpha=0.0)
    with pytest.raises(RLBaseError, match="empty"):
        buffer.sample_indices(1, np.random.default_rng(0))
    add(buffer, 1)
    assert buffer.sample_indices(5, np.random.default_rng(0)).tolist() == [0] * 5
    for bad in (0.0, -1.0):
        with pytest.raises(RLBaseError, match="positive"):
            buffer.update_priorities(np.array([0]), np.array([bad]))
