"""The trust-region steps (rlbase/common/families/trust_region/steps.py) on numbers worked out
by hand: the conjugate gradient after a given number of iterations (the minimizer of the
quadratic over the Krylov space, computed by numpy) and where its residual tolerance stops it,
the natural step's scale and its guard against a curvature that is not positive, and the line
search's acceptance at the boundaries (a gain equal to the old one, a KL of exactly 1.5
max_kl), its backtracking and its defaults. Compiled as TRPO compiles them (a second or two)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from rlbase.common.families.trust_region import steps as tr


def _graph(fn):
    return tf.function(fn, autograph=False)


def _cg(a: np.ndarray, b: np.ndarray, iters: int, **kw) -> np.ndarray:
    at = tf.constant(a)
    return _graph(lambda: tr.conjugate_gradient(lambda p: tf.linalg.matvec(at, p),
                                                tf.constant(b), iters, **kw))().numpy()


# -- conjugate gradient ----------------------------------------------------------------------
def test_conjugate_gradient_minimizes_over_the_krylov_space_of_its_iterations():
    """After k iterations from 0, CG holds the minimizer of 0.5 x.Ax - b.x over span(b, Ab,
    ..., A^(k-1) b): with K those columns, x = K (K^T A K)^-1 K^T b; after n (here 4) the
    solution of Ax = b."""
    m = np.array([[2.0, 1.0, 0.0, 0.5], [0.0, 1.0, 1.0, 0.0], [1.0, 0.0, 3.0, 1.0],
                  [0.5, 0.5, 0.0, 1.0]])
    a = m @ m.T + np.eye(4)
    b = np.array([1.0, -2.0, 0.5, 3.0])
    for k in (1, 2, 3):
        krylov = np.stack([np.linalg.matrix_power(a, j) @ b for j in range(k)], axis=1)
        want = krylov @ np.linalg.solve(krylov.T @ a @ krylov, krylov.T @ b)
        np.testing.assert_allclose(_cg(a, b, k), want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_cg(a, b, 4), np.linalg.solve(a, b), rtol=1e-9)
    assert not np.any(_cg(a, b, 0))  # no iteration: x stays 0


def test_conjugate_gradient_stops_once_the_squared_residual_is_below_the_tolerance():
    """A = diag(1, 2), b = (1, 1): r.r = 2 at the start; one iteration (alpha = 2/3) gives
    x = (2/3, 2/3) and r = (1/3, -1/3), r.r = 2/9; the second the solution (1, 1/2). The loop
    runs while r.r >= tol: a tol of exactly 2 still takes the first iteration, one just above
    2 takes none."""
    a, b = np.diag([1.0, 2.0]), np.array([1.0, 1.0])
    np.testing.assert_allclose(_cg(a, b, 10, residual_tol=0.25), [2 / 3, 2 / 3], rtol=1e-12)
    np.testing.assert_allclose(_cg(a, b, 10, residual_tol=0.2), [1.0, 0.5], rtol=1e-12)
    np.testing.assert_allclose(_cg(a, b, 10, residual_tol=2.0), [2 / 3, 2 / 3], rtol=1e-12)
    assert not np.any(_cg(a, b, 10, residual_tol=2.0000001))
    # the default tolerance stops at the exact solution instead of dividing 0 by 0
    np.testing.assert_allclose(_cg(a, b, 10), [1.0, 0.5], rtol=1e-12)


# -- natural step ----------------------------------------------------------------------------
def test_natural_step_is_scaled_to_the_kl_bound():
    """F = diag(1, 2), g = (1, 1): x = F^-1 g = (1, 1/2), x.Fx = 1.5, so for max_kl 0.03 the
    multiplier is sqrt(0.5 * 1.5 / 0.03) = 5, the step (0.2, 0.1) (its 0.5 s.Fs = 0.03) and
    the expected improvement g.s = 0.3."""
    f = tf.constant(np.diag([1.0, 2.0]))
    step, gain = _graph(lambda: tr.natural_step(
        tf.constant([1.0, 1.0], tf.float64), lambda p: tf.linalg.matvec(f, p), 0.03, 10))()
    np.testing.assert_allclose(step.numpy(), [0.2, 0.1], rtol=1e-12)
    assert float(gain) == pytest.approx(0.3, rel=1e-12)


def test_natural_step_is_zero_where_the_curvature_is_not_positive():
    """F = -I (not positive definite): CG gives x = -g, so x.Fx = -g.g < 0; the quadratic KL
    estimate is floored at 0, giving a zero step (not a nan from a square root)."""
    step, gain = _graph(lambda: tr.natural_step(
        tf.constant([1.0, 2.0], tf.float64), lambda p: -p, 0.01, 1))()
    assert step.numpy().tolist() == [0.0, 0.0] and float(gain) == 0.0


# -- line search -----------------------------------------------------------------------------
def _search(evaluate_of, full_step, max_kl, gain_before=0.0, **kw):
    """line_search over one variable theta (from 0); evaluate_of(t) -> (gain, KL) at theta t."""
    theta = tf.Variable([0.0])

    def evaluate() -> tf.Tensor:
        return tf.stack(evaluate_of(theta[0]))

    frac, tries, result = _graph(lambda: tr.line_search(
        [theta], tf.constant([full_step]), evaluate, tf.constant(gain_before), max_kl, **kw))()
    return float(frac), int(tries), result.numpy().tolist(), float(theta.numpy()[0])


def test_line_search_accepts_a_kl_of_exactly_one_and_a_half_max_kl():
    """gain t, KL t, max_kl 2: the full step t = 3 has KL 3 = 1.5 * 2, accepted at once."""
    assert _search(lambda t: (t, t), 3.0, 2.0, max_iters=5) == (1.0, 1, [3.0, 3.0], 3.0)
    # 3.5 is above the bound: halved once, to 1.75
    assert _search(lambda t: (t, t), 3.5, 2.0, max_iters=5) == (0.5, 2, [1.75, 1.75], 1.75)


def test_line_search_accepts_a_gain_equal_to_the_old_one():
    """A flat objective (gain 0 = gain_before) within the KL bound is accepted: gain >= old."""
    assert _search(lambda t: (0.0 * t, t), 1.0, 1.0, max_iters=5) == (1.0, 1, [0.0, 1.0], 1.0)


def test_line_search_rejects_an_infinite_gain():
    """gain +inf above t = 1 (not finite: rejected though >= the old gain), else t; KL 0."""
    def evaluate(t):
        return tf.where(t > 1.0, float("inf"), t), 0.0 * t

    assert _search(evaluate, 4.0, 1.0, max_iters=5) == (0.25, 3, [1.0, 0.0], 1.0)


def test_line_search_defaults_halve_ten_times_then_revert():
    """The defaults: at most 10 tries, each half the last. Accepted where t <= 1/8 of a full
    step 1 (4 tries); never accepted (the gain always below the old one): 10 tries, then the
    variable back at 0 and [gain_before, 0]."""
    def small_only(t):
        return tf.where(t <= 0.125, 1.0, -1.0), 0.0 * t

    assert _search(small_only, 1.0, 1.0) == (0.125, 4, [1.0, 0.0], 0.125)
    assert _search(lambda t: (0.0 * t - 1.0, 0.0 * t), 1.0, 1.0) == (0.0, 10, [0.0, 0.0], 0.0)


def test_line_search_moves_every_variable_by_the_same_fraction_of_its_part():
    """Two variables ([2, 2] and [3]) in flat order: the accepted half step moves each by half
    its slice of the full step; gain = -sum of all entries, KL 0."""
    w, b = tf.Variable(np.ones((2, 2), np.float32)), tf.Variable([1.0, 2.0, 3.0])
    full = tf.constant([-4.0, 2.0, 0.0, 6.0, 10.0, -2.0, 2.0])

    def evaluate():
        total = tf.reduce_sum(w) + tf.reduce_sum(b)
        # gain: the full step's end (sum 24) is refused (kl 1 > 0.15), half of it is not
        return tf.stack([-total, tf.where(total > 20.0, 1.0, 0.0)])

    frac, tries, result = _graph(lambda: tr.line_search(
        [w, b], full, evaluate, tf.constant(-100.0), 0.1))()
    assert (float(frac), int(tries)) == (0.5, 2)
    np.testing.assert_array_equal(w.numpy(), [[-1.0, 2.0], [1.0, 4.0]])
    np.testing.assert_array_equal(b.numpy(), [6.0, 1.0, 4.0])
    np.testing.assert_array_equal(result.numpy(), [-17.0, 0.0])
