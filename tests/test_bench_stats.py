"""rlbase.bench.stats against rliable 1.2.0: the expected values below are what rliable's
``metrics`` and ``library.get_interval_estimates`` / ``create_performance_profile`` printed for
the same inputs, with ``np.random.seed(seed)`` right before each call (rliable draws its
resamples from numpy's global random state), and scipy.stats.trim_mean for the trimmed
means."""

from __future__ import annotations

import numpy as np
import pytest

from rlbase.bench import stats
from rlbase.common.errors import RLBaseError

# rliable's own test matrices (tests/rliable/metrics_test.py): runs x tasks.
X = np.array([[1, 2], [2, 2], [1, 1], [2, 1]], dtype=float)
Y = np.array([[1, 1], [2, 2], [3, 3]], dtype=float)
# Five seeds on two tasks, and one task with an outlier seed.
B = np.array([[3.0, 9.0], [5.0, 2.0], [8.0, 4.0], [1.0, 7.0], [6.0, 6.0]])
A = np.array([[10.0], [3.0], [7.0], [1.0], [100.0]])
# np.round(np.random.RandomState(7).normal(size=(5, 3)) * 100, 1), and seed 8 with 6 runs.
C = np.array([[169.1, -46.6, 3.3], [40.8, -78.9, 0.2], [-0.1, -175.5, 101.8],
              [60.0, -62.5, -17.2], [50.5, -26.1, -24.3]])
D = np.array([[9.1, 109.1, -194.7], [-138.6, -229.6, 241.0], [172.8, 220.5, 79.5],
              [97.6, -118.3, 191.6], [-112.3, -66.4, -37.8], [-79.2, 86.0, -23.1]])


def iqm_and_mean(scores: np.ndarray) -> np.ndarray:
    return np.stack([stats.iqm(scores), stats.mean(scores)], axis=-1)


def test_point_estimates_match_rliable_tests() -> None:
    assert stats.iqm(X) == 1.5 and stats.mean(X) == 1.5 and stats.median(X) == 1.5
    assert stats.iqm(Y) == 2.0 and stats.mean(Y) == 2.0 and stats.median(Y) == 2.0
    assert stats.probability_of_improvement(X, Y) == pytest.approx(1 / 3, abs=1e-15)


def test_iqm_cuts_whole_values_like_scipy_trim_mean() -> None:
    # 5 runs: int(0.25 * 5) = 1 value cut at each end, the middle 3 kept: (3 + 7 + 10) / 3.
    assert stats.iqm(A) == pytest.approx(20 / 3, abs=1e-12)
    # 10 values (5 runs x 2 tasks) flattened: 2 cut at each end, mean of 3,4,5,6,6,7.
    assert stats.iqm(B) == pytest.approx(31 / 6, abs=1e-12)
    # 6 values 0,1,4,9,16,25: 1 cut at each end (scipy: 7.5).
    assert stats.iqm(stats.as_scores(np.arange(6.0) ** 2)) == 7.5
    # 4 values: exactly the middle two.
    assert stats.iqm(stats.as_scores([4.0, 1.0, 3.0, 2.0])) == 2.5
    assert stats.trim_mean(stats.as_scores([1.0, 2.0, 9.0]), 0.0) == 4.0
    # A batch of matrices reduces each one.
    np.testing.assert_array_equal(stats.iqm(np.stack([A, A + 1])), [20 / 3, 23 / 3])


def test_stratified_bootstrap_matches_rliable_exactly() -> None:
    low, high = stats.stratified_bootstrap_ci(A, iqm_and_mean, reps=1000, seed=0)
    np.testing.assert_allclose(low, [5 / 3, 3.0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(high, [70.0, 62.6], rtol=0, atol=1e-12)
    low, high = stats.stratified_bootstrap_ci(B, iqm_and_mean, reps=1000, seed=0)
    np.testing.assert_allclose(low, [19 / 6, 3.5], rtol=0, atol=1e-12)
    np.testing.assert_allclose(high, [41 / 6, 6.5], rtol=0, atol=1e-12)
    low, high = stats.stratified_bootstrap_ci(B, iqm_and_mean, reps=50_000, seed=3)
    np.testing.assert_allclose(low, [19 / 6, 3.6], rtol=0, atol=1e-12)
    np.testing.assert_allclose(high, [41 / 6, 6.6], rtol=0, atol=1e-12)
    low, high = stats.stratified_bootstrap_ci(C, iqm_and_mean, reps=2000, seed=11)
    np.testing.assert_allclose(low, [-18.62638888888888, -26.229333333333326], rtol=1e-12)
    np.testing.assert_allclose(high, [23.99527777777774, 26.96816666666662], rtol=1e-12)


def test_bootstrap_is_seeded_and_stratified() -> None:
    first = stats.stratified_bootstrap_ci(C, stats.iqm, reps=300, seed=5)
    assert first == stats.stratified_bootstrap_ci(C, stats.iqm, reps=300, seed=5)
    assert first != stats.stratified_bootstrap_ci(C, stats.iqm, reps=300, seed=6)
    # Each task resamples its own runs: a task whose runs all agree keeps its value in every
    # resample (a pooled bootstrap would mix the two columns).
    same = np.array([[1.0, 10.0], [1.0, 20.0], [1.0, 30.0]])
    low, high = stats.stratified_bootstrap_ci(
        same, lambda s: s[..., 0].mean(axis=-1), reps=200, seed=0)
    assert low == high == 1.0
    # One run: every resample is the run itself.
    assert stats.stratified_bootstrap_ci(np.array([[4.0]]), stats.iqm, reps=10) == (4.0, 4.0)


def test_performance_profile_points_and_bands_match_rliable() -> None:
    taus = [0.0, 2.5, 5.0, 7.5]
    # Fraction of the 10 runs x tasks strictly above each threshold.
    np.testing.assert_array_equal(stats.performance_profile(B, taus), [1.0, 0.8, 0.5, 0.2])
    assert stats.performance_profile(B, [6.0]).tolist() == [0.3]  # 6.0 itself is not above
    low, high = stats.stratified_bootstrap_ci(
        B, lambda s: stats.performance_profile(s, taus), reps=200, seed=0)
    np.testing.assert_allclose(low, [1.0, 0.5, 0.2, 0.0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(high, [1.0, 1.0, 0.8, 0.4025], rtol=0, atol=1e-12)


def test_probability_of_improvement_counts_ties_half() -> None:
    # Task 0: X's runs 1,2,1,2 against Y's 1,2,3: wins 2, ties 4 of 12 pairs -> 4/12.
    # Task 1: 2,2,1,1 against 1,2,3: the same -> 4/12.
    assert stats.probability_of_improvement(X, Y) == pytest.approx(1 / 3, abs=1e-15)
    assert stats.probability_of_improvement(Y, X) == pytest.approx(2 / 3, abs=1e-15)
    assert stats.probability_of_improvement(B, B) == 0.5
    assert stats.probability_of_improvement(np.array([[2.0]]), np.array([[1.0]])) == 1.0
    assert stats.probability_of_improvement(B, B[::-1] * 0.9 + 1) == pytest.approx(0.4)
    assert stats.probability_of_improvement(C, D) == pytest.approx(0.5222222222222223,
                                                                    abs=1e-15)


def test_improvement_interval_matches_rliable_exactly() -> None:
    assert stats.improvement_ci(X, Y, reps=500, seed=0) == pytest.approx(
        (0.10416666666666667, 2 / 3), abs=1e-12)
    assert stats.improvement_ci(B, B[:4] * 0.9 + 1, reps=2000, seed=1) == pytest.approx(
        (0.15, 0.725), abs=1e-12)
    assert stats.improvement_ci(C, D, reps=2000, seed=12) == pytest.approx(
        (0.3222222222222222, 0.7222222222222223), abs=1e-12)


def test_bad_input_is_one_clear_error() -> None:
    with pytest.raises(RLBaseError, match=r"scores must be finite numbers, got \[\[1.0\], "
                                          r"\[nan\]\]"):
        stats.as_scores([1.0, float("nan")])
    with pytest.raises(RLBaseError, match=r"must be a \(runs, tasks\) matrix.*shape \(0, 1\)"):
        stats.as_scores([])
    with pytest.raises(RLBaseError, match="reps must be at least 1, got 0"):
        stats.stratified_bootstrap_ci(A, stats.iqm, reps=0)
    with pytest.raises(RLBaseError, match=r"size must be in \(0, 1\), got 95"):
        stats.improvement_ci(X, Y, size=95)
    with pytest.raises(RLBaseError, match="same tasks, got 2 and 1 columns"):
        stats.probability_of_improvement(X, A)
