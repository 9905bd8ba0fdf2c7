"""Segment trees against brute force: range sums and minimums, prefix-sum search, updates."""

import numpy as np
import pytest

from rlbase.common.buffers.segment_tree import MinSegmentTree, SumSegmentTree
from rlbase.common.errors import RLBaseError


@pytest.mark.parametrize("capacity", [1, 2, 8, 64])
def test_sum_and_min_of_every_range(capacity):
    rng = np.random.default_rng(capacity)
    values = rng.uniform(0, 10, capacity)
    total, smallest = SumSegmentTree(capacity), MinSegmentTree(capacity)
    total[np.arange(capacity)] = values
    smallest[np.arange(capacity)] = values
    for start in range(capacity + 1):
        for end in range(start, capacity + 1):
            assert total.sum(start, end) == pytest.approx(values[start:end].sum())
            expected = values[start:end].min() if end > start else float("inf")
            assert smallest.min(start, end) == expected
    assert total.sum() == pytest.approx(values.sum())
    assert smallest.min() == values.min()
    np.testing.assert_array_equal(total[np.arange(capacity)], values)


def test_updates_keep_every_node_consistent():
    rng = np.random.default_rng(0)
    tree, values = SumSegmentTree(32), np.zeros(32)
    for _ in range(50):
        idx = rng.integers(0, 32, size=rng.integers(1, 10))
        new = rng.uniform(0, 5, len(idx))
        tree[idx] = new
        for i, v in zip(idx, new):  # repeated indices: the last write wins, as in a loop
            values[i] = v
        assert tree.sum() == pytest.approx(values.sum())
        for node in range(1, 32):
            assert tree.tree[node] == pytest.approx(tree.tree[2 * node] + tree.tree[2 * node + 1])
    tree[5] = 2.5
    assert tree[5] == 2.5


def test_prefix_sum_search_matches_brute_force():
    rng = np.random.default_rng(1)
    values = rng.uniform(0, 3, 16)
    values[[2, 3, 9]] = 0.0  # empty slots are never found
    tree = SumSegmentTree(16)
    tree[np.arange(16)] = values
    cumulative = np.cumsum(values)
    # (not exactly on a boundary: the tree adds in another order than cumsum)
    queries = np.concatenate([rng.uniform(0, values.sum(), 2000), [0.0]])
    expected = np.searchsorted(cumulative, queries, side="right")
    expected = np.minimum(expected, 15)
    found = tree.find_prefixsum_idx(queries)
    np.testing.assert_array_equal(found, expected)
    assert not np.isin(found, [2, 3, 9]).any()
    # rounding that pushes a query to the total still lands on a slot that holds mass
    values[15] = 0.0
    tree[15] = 0.0
    assert tree.find_prefixsum_idx(np.array([tree.sum()]))[0] == 14


def test_bad_capacity_and_indices_are_errors():
    for capacity in (0, 3, 12, -4, 2.0):
        with pytest.raises(RLBaseError, match="power of two"):
            SumSegmentTree(capacity)
    tree = MinSegmentTree(4)
    with pytest.raises(RLBaseError, match="outside"):
        tree[4] = 1.0
    with pytest.raises(RLBaseError, match="outside"):
        tree.min(2, 6)


@pytest.mark.parametrize("idx, named", [(-1, "-1"), ([3, 9], "9"), ([0, 9], "9"),
                                        ([9, 10], "9"), ([-2, 2], "-2")])
def test_an_index_error_names_the_first_bad_index_and_the_range(idx, named):
    tree = SumSegmentTree(8)
    for access in (lambda: tree.__setitem__(idx, 1.0), lambda: tree[idx]):
        with pytest.raises(RLBaseError, match=rf"index {named} is outside 0\.\.7$"):
            access()


def test_one_slot_reads_back_as_a_float_and_many_as_an_array():
    tree = MinSegmentTree(4)
    tree[2] = 0.5
    assert type(tree[2]) is float and tree[2] == 0.5
    np.testing.assert_array_equal(tree[np.array([2, 3])], [0.5, np.inf])


@pytest.mark.parametrize("capacity", [5, 6, 10, 12])
def test_capacities_with_adjacent_or_separate_bits_are_refused(capacity):
    with pytest.raises(RLBaseError, match="power of two"):
        SumSegmentTree(capacity)


@pytest.mark.parametrize("capacity", [2, 8, 32, 1024])  # depths 1, 3, 5, 10: odd and even
def test_whole_and_open_ended_ranges_and_the_search_at_every_depth(capacity):
    rng = np.random.default_rng(capacity)
    values = rng.uniform(0.1, 1.0, capacity)
    sums, mins = SumSegmentTree(capacity), MinSegmentTree(capacity)
    sums[np.arange(capacity)] = values
    mins[np.arange(capacity)] = values
    start = capacity // 2
    assert sums.reduce() == pytest.approx(values.sum())
    assert sums.sum(start) == pytest.approx(values[start:].sum())
    assert mins.min(start) == values[start:].min() and mins.reduce() == values.min()
    assert sums.sum(start, capacity - 1) == pytest.approx(values[start:-1].sum())
    for bad in (-1, capacity + 1):
        with pytest.raises(RLBaseError, match="range"):
            sums.sum(bad)
    cumulative = np.cumsum(values)
    probes = np.concatenate([[0.0], cumulative[:-1] - 1e-9, cumulative[:-1] + 1e-9])
    expected = np.searchsorted(cumulative, probes, side="right")
    np.testing.assert_array_equal(sums.find_prefixsum_idx(probes), expected)
    assert sums.find_prefixsum_idx(float(probes[-1])) == expected[-1]


def test_ranges_whose_ends_meet_high_in_a_large_tree():
    # lo and hi meet at node numbers above 256 here (ints Python does not share), and an
    # empty range starts with lo == hi: the climb must compare values, not identities.
    values = np.arange(1.0, 1025.0)
    sums, mins = SumSegmentTree(1024), MinSegmentTree(1024)
    sums[np.arange(1024)] = values
    mins[np.arange(1024)] = values
    assert sums.sum(700, 702) == values[700:702].sum()
    assert sums.sum(701, 701) == 0.0 and mins.min(701, 701) == float("inf")
    assert mins.min(700, 702) == values[700]
    with pytest.raises(RLBaseError, match="range"):
        mins.min(-1)
