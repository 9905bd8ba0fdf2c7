"""A shared table of Gaussian noise: workers exchange offsets into it, never vectors.

Every worker builds the same table from the same seed (numpy's PCG64 stream is identical
across processes and machines for one numpy version), so a perturbation is named by one
integer: the offset of its ``dim`` consecutive entries. A generation then costs a few bytes
per perturbation on the wire, whatever the size of the policy.
"""

from __future__ import annotations

import numpy as np

from rlbase.common.errors import RLBaseError

DEFAULT_SIZE = 2**20  # 4 MiB of float32, made in ~40 ms


def default_size(dim: int) -> int:
    """Entries for a ``dim``-parameter policy: at least 32 * dim. Windows at different
    offsets are nearly uncorrelated even where they overlap (a shifted stretch of i.i.d.
    noise is uncorrelated with the original), so the table need not dwarf the policy; a
    small one is built quickly by every worker, which matters for short runs on many ranks."""
    return max(DEFAULT_SIZE, 32 * int(dim))


class NoiseTable:
    """``size`` standard normal float32 values drawn from ``seed`` (equal seeds, equal tables
    in every process)."""

    def __init__(self, seed: int, size: int = DEFAULT_SIZE):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise RLBaseError(f"noise table size must be a positive integer, got {size!r}")
        self.seed, self.size = int(seed), int(size)
        self.noise = np.random.default_rng(self.seed).standard_normal(self.size,
                                                                       dtype=np.float32)

    def get(self, index: int, dim: int) -> np.ndarray:
        """The perturbation at offset ``index`` (a read-only view, no copy)."""
        return self.noise[index:index + dim]

    def sample_index(self, rng: np.random.Generator, dim: int, n: int = 1) -> np.ndarray:
        """``n`` random offsets at which a ``dim``-long slice fits in the table."""
        if dim > self.size:
            raise RLBaseError(f"a policy of {dim} parameters does not fit a noise table of "
                              f"{self.size} entries; use noise_table_size >= {dim}")
        return rng.integers(0, self.size - dim + 1, size=n, dtype=np.int64)

    def weighted_sum(self, indices: np.ndarray, weights: np.ndarray, dim: int) -> np.ndarray:
        """sum_i weights[i] * get(indices[i], dim), in float64, in the order given (so every
        worker that sums the same lists gets bit-identical results)."""
        total = np.zeros(dim, dtype=np.float64)
        # Blocks of rows (~4M entries each): one matrix-vector product per block, bounded
        # memory.
        block = max(1, 2**22 // max(dim, 1))
        for start in range(0, len(indices), block):
            idx = np.asarray(indices[start:start + block], np.int64)
            rows = self.noise[idx[:, None] + np.arange(dim)]
            total += np.asarray(weights[start:start + block], np.float64) @ rows
        return total
