"""Interval estimates over seeds, as in Agarwal et al. 2021, "Deep RL at the Edge of the
Statistical Precipice" (the ``rliable`` library): interquartile mean, mean, stratified
bootstrap confidence intervals, performance profiles and the probability of improvement.

Written in numpy alone: ``rliable`` installs, but brings scipy, arch, statsmodels and seaborn
into every environment that runs the benchmark report, and its bootstrap draws from numpy's
global random state (its ``random_state`` argument is not used for the draws). The numbers
here are rliable's: ``tests/test_bench_stats.py`` checks them against values rliable 1.2.0
printed for the same inputs (with ``np.random.seed(seed)`` before each of its calls).

Scores are a matrix ``(runs, tasks)``: one row per seed, one column per env. A 1-D array is
one task. Every statistic also takes a batch ``(..., runs, tasks)`` and reduces the last two
axes, so the bootstrap evaluates all its resamples in one call.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from rlbase.common.errors import RLBaseError

Statistic = Callable[[np.ndarray], np.ndarray]
# Resamples evaluated at once: bounds the memory of a profile's (reps, runs, tasks, taus).
_CHUNK = 2000


def as_scores(values: Sequence[float] | Sequence[Sequence[float]] | np.ndarray,
              what: str = "scores") -> np.ndarray:
    """``values`` as a float ``(runs, tasks)`` matrix (a 1-D list is one task's runs)."""
    scores = np.asarray(values, dtype=np.float64)
    if scores.ndim == 1:
        scores = scores[:, None]
    if scores.ndim != 2 or scores.shape[0] < 1 or scores.shape[1] < 1:
        raise RLBaseError(f"{what} must be a (runs, tasks) matrix with at least one run, got "
                          f"shape {scores.shape}")
    if not np.isfinite(scores).all():
        raise RLBaseError(f"{what} must be finite numbers, got {scores.tolist()}")
    return scores


def trim_mean(scores: np.ndarray, proportion: float = 0.25) -> np.ndarray:
    """Mean of the runs x tasks values of each batch entry after cutting
    ``int(proportion * n)`` values from each end of the sorted ``n`` (scipy's ``trim_mean``
    over the flattened matrix: it cuts less, never a fraction of a value, when
    ``proportion * n`` is not whole: 5 runs keep the middle 3)."""
    if not 0.0 <= proportion < 0.5:
        raise RLBaseError(f"proportion must be in [0, 0.5), got {proportion}")
    flat = np.sort(scores.reshape(*scores.shape[:-2], -1), axis=-1)
    cut = int(proportion * flat.shape[-1])
    return np.asarray(flat[..., cut:flat.shape[-1] - cut].mean(axis=-1))


def iqm(scores: np.ndarray) -> np.ndarray:
    """Interquartile mean: the 25% trimmed mean over all runs and tasks together."""
    return trim_mean(scores, 0.25)


def mean(scores: np.ndarray) -> np.ndarray:
    """Mean over tasks of each task's mean over runs."""
    return np.asarray(scores.mean(axis=-2).mean(axis=-1))


def median(scores: np.ndarray) -> np.ndarray:
    """Median over tasks of each task's mean over runs."""
    return np.asarray(np.median(scores.mean(axis=-2), axis=-1))


def performance_profile(scores: np.ndarray, taus: Sequence[float] | np.ndarray) -> np.ndarray:
    """The score distribution: for each threshold tau, the fraction of all runs (every task)
    whose score is above tau. Shape ``(..., len(taus))``."""
    flat = scores.reshape(*scores.shape[:-2], -1)
    return np.asarray((flat[..., None] > np.asarray(taus, dtype=np.float64)).mean(axis=-2))


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y): on each task the chance that a run of X scores above a run of Y, a tie
    counting one half (the Mann-Whitney U statistic over ``runs_x * runs_y``), averaged over
    tasks. ``x`` is ``(..., runs_x, tasks)``, ``y`` ``(..., runs_y, tasks)``."""
    if x.shape[-1] != y.shape[-1]:
        raise RLBaseError(f"both algorithms need the same tasks, got {x.shape[-1]} and "
                          f"{y.shape[-1]} columns")
    pairs_x, pairs_y = x[..., :, None, :], y[..., None, :, :]
    wins = (pairs_x > pairs_y).mean(axis=(-3, -2)) + 0.5 * (pairs_x == pairs_y).mean(
        axis=(-3, -2))
    return np.asarray(wins.mean(axis=-1))


def _percentile_interval(values: np.ndarray, size: float) -> tuple[np.ndarray, np.ndarray]:
    """The percentile bootstrap interval: the ``(1 - size) / 2`` and ``(1 + size) / 2``
    quantiles of the resampled statistics (numpy's linear interpolation)."""
    alpha = 100 * (1.0 - size) / 2
    low, high = np.percentile(values, [alpha, 100 - alpha], axis=0)
    return np.asarray(low), np.asarray(high)


def _check(reps: int, size: float) -> None:
    if reps < 1:
        raise RLBaseError(f"reps must be at least 1, got {reps}")
    if not 0.0 < size < 1.0:
        raise RLBaseError(f"size must be in (0, 1), got {size}")


def stratified_bootstrap_ci(scores: np.ndarray, statistic: Statistic, reps: int = 50_000,
                            size: float = 0.95, seed: int = 0
                            ) -> tuple[np.ndarray, np.ndarray]:
    """The ``size`` percentile confidence interval of ``statistic(scores)``.

    Each resample draws, for every task separately, ``runs`` runs with replacement from that
    task's runs (tasks are strata: every resample has every task). The draws are
    ``RandomState(seed).randint(0, runs, (runs, tasks))`` once per resample, in order.
    :return: (lower, upper), each shaped as the statistic's value.
    """
    _check(reps, size)
    runs, tasks = scores.shape
    rng = np.random.RandomState(seed)
    columns = np.arange(tasks)
    values = []
    for start in range(0, reps, _CHUNK):
        n = min(_CHUNK, reps - start)
        rows = rng.randint(0, runs, size=(n, runs, tasks))
        values.append(np.asarray(statistic(scores[rows, columns])).reshape(n, -1))
    low, high = _percentile_interval(np.concatenate(values), size)
    shape = np.shape(statistic(scores))
    return low.reshape(shape), high.reshape(shape)


def improvement_ci(x: np.ndarray, y: np.ndarray, reps: int = 2000, size: float = 0.95,
                   seed: int = 0) -> tuple[float, float]:
    """The ``size`` confidence interval of :func:`probability_of_improvement`: X's and Y's
    runs are resampled independently, each within each task (per resample: X's draws, then
    Y's, from ``RandomState(seed)``)."""
    _check(reps, size)
    (nx, tasks), ny = x.shape, y.shape[0]
    if y.shape[1] != tasks:
        raise RLBaseError(f"both algorithms need the same tasks, got {tasks} and "
                          f"{y.shape[1]} columns")
    rng = np.random.RandomState(seed)
    columns = np.arange(tasks)
    values = []
    for start in range(0, reps, _CHUNK):
        n = min(_CHUNK, reps - start)
        rows_x = np.empty((n, nx, tasks), dtype=np.int64)
        rows_y = np.empty((n, ny, tasks), dtype=np.int64)
        for i in range(n):  # X's then Y's draws per resample, as the stream has them
            rows_x[i] = rng.randint(0, nx, size=(nx, tasks))
            rows_y[i] = rng.randint(0, ny, size=(ny, tasks))
        values.append(probability_of_improvement(x[rows_x, columns], y[rows_y, columns]))
    low, high = _percentile_interval(np.concatenate(values), size)
    return float(low), float(high)
