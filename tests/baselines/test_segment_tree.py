"""Port of baselines/common/tests/test_segment_tree.py: rlbase.common.buffers.segment_tree's sums,
minimums and prefix-sum search on the same small trees (negative ``end``: counted from the
end, as in Baselines)."""

import numpy as np

from rlbase.common.buffers.segment_tree import MinSegmentTree, SumSegmentTree


def _sum_tree(values: dict) -> SumSegmentTree:
    tree = SumSegmentTree(4)
    for index, value in values.items():
        tree[index] = value
    return tree


def test_tree_set():
    tree = _sum_tree({2: 1.0, 3: 3.0})
    assert np.isclose(tree.sum(), 4.0)
    for (start, end), total in {(0, 2): 0.0, (0, 3): 1.0, (2, 3): 1.0, (2, -1): 1.0,
                                (2, 4): 4.0}.items():
        assert np.isclose(tree.sum(start, end), total), (start, end)


def test_tree_set_overlap():
    tree = SumSegmentTree(4)
    tree[2] = 1.0
    tree[2] = 3.0  # overwrites
    assert np.isclose(tree.sum(), 3.0)
    for (start, end), total in {(2, 3): 3.0, (2, -1): 3.0, (2, 4): 3.0, (1, 2): 0.0}.items():
        assert np.isclose(tree.sum(start, end), total), (start, end)


def test_prefixsum_idx():
    tree = _sum_tree({2: 1.0, 3: 3.0})
    for prefix, index in {0.0: 2, 0.5: 2, 0.99: 2, 1.01: 3, 3.0: 3, 4.0: 3}.items():
        assert tree.find_prefixsum_idx(prefix) == index, prefix


def test_prefixsum_idx2():
    tree = _sum_tree({0: 0.5, 1: 1.0, 2: 1.0, 3: 3.0})
    for prefix, index in {0.0: 0, 0.55: 1, 0.99: 1, 1.51: 2, 3.0: 3, 5.5: 3}.items():
        assert tree.find_prefixsum_idx(prefix) == index, prefix


def test_prefixsum_idx_of_a_number_is_an_int():
    """Baselines' callers index their storage with the slot found for one number."""
    tree = _sum_tree({2: 1.0, 3: 3.0})
    index = tree.find_prefixsum_idx(1.5)
    assert isinstance(index, int) and index == 3
    assert tree.find_prefixsum_idx(np.array([0.5, 1.5])).tolist() == [2, 3]


def _check_min(tree: MinSegmentTree, expected: dict) -> None:
    for (start, end), low in expected.items():
        got = tree.min() if start is None else tree.min(start, end)
        assert np.isclose(got, low), (start, end, got, low)


def test_max_interval_tree():
    tree = MinSegmentTree(4)
    tree[0] = 1.0
    tree[2] = 0.5
    tree[3] = 3.0
    _check_min(tree, {(None, None): 0.5, (0, 2): 1.0, (0, 3): 0.5, (0, -1): 0.5, (2, 4): 0.5,
                      (3, 4): 3.0})
    tree[2] = 0.7
    _check_min(tree, {(None, None): 0.7, (0, 2): 1.0, (0, 3): 0.7, (0, -1): 0.7, (2, 4): 0.7,
                      (3, 4): 3.0})
    tree[2] = 4.0
    _check_min(tree, {(None, None): 1.0, (0, 2): 1.0, (0, 3): 1.0, (0, -1): 1.0, (2, 4): 3.0,
                      (2, 3): 4.0, (2, -1): 4.0, (3, 4): 3.0})
