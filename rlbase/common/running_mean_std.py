"""Running mean and variance of a stream of batches, optionally pooled over MPI workers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rlbase.common.errors import RLBaseError


class RunningMeanStd:
    """Mean and variance of everything passed to :meth:`update`, merged batch by batch.

    Batches are merged with the parallel-variance formula of Chan et al., which stays accurate
    over millions of samples where summing squares would not.

    :param epsilon: initial pseudo-count; keeps the first normalization from dividing by ~0.
    :param shape: shape of one sample (batches add a leading axis).
    :param comm: optional mpi4py communicator; :meth:`update` then pools every rank's batch, so
        all workers hold the same statistics. mpi4py itself is never imported here.
    """

    def __init__(self, epsilon: float = 1e-4, shape: Sequence[int] = (), comm: Any = None):
        self.mean = np.zeros(tuple(shape), dtype=np.float64)
        self.var = np.ones(tuple(shape), dtype=np.float64)
        self.count = float(epsilon)
        self.comm = comm

    @property
    def shape(self) -> tuple[int, ...]:
        return self.mean.shape

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.var)

    def update(self, x: np.ndarray) -> None:
        """Add a batch ``x`` of shape ``(n, *shape)`` (pooled over all ranks with ``comm``)."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape[1:] != self.shape:
            raise RLBaseError(f"batch of shape {x.shape} does not fit RunningMeanStd of sample "
                              f"shape {self.shape}: expected (n, *{self.shape})")
        if self.comm is not None and self.comm.Get_size() > 1:
            self._update_pooled(x)
        elif x.shape[0] > 0:
            self.update_from_moments(x.mean(axis=0), x.var(axis=0), x.shape[0])

    def _update_pooled(self, x: np.ndarray) -> None:
        # Sums are taken around the current mean, identical on every rank, so one Allreduce
        # suffices and the squares stay small (no catastrophic cancellation).
        centered = x - self.mean
        local = np.concatenate([centered.sum(axis=0).ravel(),
                                np.square(centered).sum(axis=0).ravel(), [x.shape[0]]])
        total = np.zeros_like(local)
        self.comm.Allreduce(local, total)  # mpi4py's default op is SUM
        n = total[-1]
        if n <= 0:
            return
        size = self.mean.size
        shift = total[:size].reshape(self.shape) / n
        var = np.maximum(total[size:2 * size].reshape(self.shape) / n - np.square(shift), 0.0)
        self.update_from_moments(self.mean + shift, var, n)

    def update_from_moments(self, batch_mean: np.ndarray, batch_var: np.ndarray,
                            batch_count: float) -> None:
        """Merge a batch known only by its mean, (population) variance and size."""
        delta = batch_mean - self.mean
        total = self.count + batch_count
        m2 = (self.var * self.count + batch_var * batch_count
              + np.square(delta) * self.count * batch_count / total)
        self.mean = self.mean + delta * batch_count / total
        self.var = m2 / total
        self.count = float(total)

    def state_dict(self) -> dict[str, np.ndarray]:
        """The statistics as numpy arrays (what serialization.save_file stores)."""
        return {"mean": self.mean.copy(), "var": self.var.copy(),
                "count": np.asarray(self.count, dtype=np.float64)}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Restore statistics from :meth:`state_dict`; shapes must match."""
        missing = {"mean", "var", "count"} - set(state)
        if missing:
            raise RLBaseError(f"RunningMeanStd state lacks {sorted(missing)}: "
                              "expected keys mean, var, count")
        mean = np.asarray(state["mean"], dtype=np.float64)
        var = np.asarray(state["var"], dtype=np.float64)
        count = np.asarray(state["count"], dtype=np.float64)
        if mean.shape != self.shape or var.shape != self.shape or count.shape != ():
            raise RLBaseError(f"RunningMeanStd state has mean shape {mean.shape}, var shape "
                              f"{var.shape}, count shape {count.shape}: expected {self.shape}, "
                              f"{self.shape}, ()")
        self.mean, self.var, self.count = mean.copy(), var.copy(), float(count)
