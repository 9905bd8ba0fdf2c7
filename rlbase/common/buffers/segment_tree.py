"""Segment trees over a fixed number of slots: sums and minimums of any range in O(log n).

Prioritized replay keeps one priority per transition in a :class:`SumSegmentTree` (to draw
index i with probability p_i / sum p) and a :class:`MinSegmentTree` (the smallest p, which
bounds the importance weights). Updates and prefix-sum searches take whole arrays of indices
and walk the tree one level at a time for all of them, so drawing a batch of thousands costs
a few dozen numpy calls instead of thousands of Python loops.

Layout: node 1 is the root, node k has children 2k and 2k+1, and the leaves (the slots)
are nodes ``capacity .. 2 * capacity - 1``; ``capacity`` is a power of two.
"""

from __future__ import annotations

from typing import Callable, overload

import numpy as np

from rlbase.common.errors import RLBaseError


class SegmentTree:
    """A complete binary tree whose every node holds ``operation`` of its two children.

    capacity: number of slots (a power of two).
    operation: an associative numpy ufunc (np.add, np.minimum).
    neutral: the value that leaves ``operation`` unchanged (0 for sums, +inf for minimums).
    """

    def __init__(self, capacity: int, operation: Callable, neutral: float):
        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) \
                or capacity < 1 or capacity & (capacity - 1):
            raise RLBaseError(f"segment tree capacity must be a positive power of two, got "
                              f"{capacity!r}")
        self.capacity = int(capacity)
        self.operation = operation
        self.neutral = float(neutral)
        self.depth = self.capacity.bit_length() - 1
        # float64 so that sums of a million priorities do not drift.
        self.tree = np.full(2 * self.capacity, self.neutral, dtype=np.float64)

    def _check(self, idx: np.ndarray) -> None:
        if idx.size and (idx.min() < 0 or idx.max() >= self.capacity):
            bad = idx[(idx < 0) | (idx >= self.capacity)][0]
            raise RLBaseError(f"segment tree index {bad} is outside 0..{self.capacity - 1}")

    def __setitem__(self, idx: int | np.ndarray, value: float | np.ndarray) -> None:
        idx = np.atleast_1d(np.asarray(idx, dtype=np.int64))
        value = np.broadcast_to(np.asarray(value, dtype=np.float64), idx.shape)
        self._check(idx)
        # With repeated indices numpy keeps the last value, as a sequence of writes would.
        nodes = idx + self.capacity
        self.tree[nodes] = value
        for _ in range(self.depth):
            # Repeated parents compute the same value from the same children: no need to
            # deduplicate (a sort per level would cost more than the repeats).
            nodes = nodes >> 1
            self.tree[nodes] = self.operation(self.tree[2 * nodes], self.tree[2 * nodes + 1])

    def __getitem__(self, idx: int | np.ndarray) -> float | np.ndarray:
        arr = np.asarray(idx, dtype=np.int64)
        self._check(np.atleast_1d(arr))
        out = self.tree[arr + self.capacity]
        return float(out) if out.ndim == 0 else out

    def reduce(self, start: int = 0, end: int | None = None) -> float:
        """``operation`` over slots ``start .. end - 1`` (end None: to the last slot)."""
        end = self.capacity if end is None else end
        if end < 0:
            end += self.capacity
        if not 0 <= start <= end <= self.capacity:
            raise RLBaseError(f"segment tree range [{start}, {end}) is outside "
                              f"[0, {self.capacity}]")
        result = self.neutral
        lo, hi = start + self.capacity, end + self.capacity
        # Climb from both ends; a node is taken whole when its sibling lies outside the range.
        while lo < hi:
            if lo & 1:
                result = float(self.operation(result, self.tree[lo]))
                lo += 1
            if hi & 1:
                hi -= 1
                result = float(self.operation(result, self.tree[hi]))
            lo >>= 1
            hi >>= 1
        return result


class SumSegmentTree(SegmentTree):
    """Sums of ranges, and the slot where a running sum crosses a given value."""

    def __init__(self, capacity: int):
        super().__init__(capacity, np.add, 0.0)

    def sum(self, start: int = 0, end: int | None = None) -> float:
        """Sum of slots ``start .. end - 1`` (the whole tree by default)."""
        if start == 0 and end is None:
            return float(self.tree[1])
        return self.reduce(start, end)

    @overload
    def find_prefixsum_idx(self, prefixsum: float) -> int: ...

    @overload
    def find_prefixsum_idx(self, prefixsum: np.ndarray) -> np.ndarray: ...

    def find_prefixsum_idx(self, prefixsum: float | np.ndarray) -> int | np.ndarray:
        """For each value v, the smallest slot i with ``sum(0, i + 1) > v`` (an int for a
        single number, as in Baselines; an array of slots for an array).

        Values are expected in ``[0, sum())``. The search never enters a subtree whose sum is
        zero, so a slot of priority zero is never returned, even when rounding pushes v to
        the total.
        """
        if np.ndim(prefixsum) == 0:
            return int(self.find_prefixsum_idx(np.array([prefixsum]))[0])
        value = np.array(prefixsum, dtype=np.float64, ndmin=1)
        nodes = np.ones(value.shape, dtype=np.int64)
        for _ in range(self.depth):
            left = 2 * nodes
            left_sum = self.tree[left]
            go_left = (value < left_sum) | (self.tree[left + 1] <= 0.0)
            value = np.where(go_left, value, value - left_sum)
            nodes = np.where(go_left, left, left + 1)
        return nodes - self.capacity


class MinSegmentTree(SegmentTree):
    """Minimums of ranges (empty slots hold +inf)."""

    def __init__(self, capacity: int):
        super().__init__(capacity, np.minimum, float("inf"))

    def min(self, start: int = 0, end: int | None = None) -> float:
        """Minimum of slots ``start .. end - 1`` (the whole tree by default)."""
        if start == 0 and end is None:
            return float(self.tree[1])
        return self.reduce(start, end)
