"""Trust-region policy steps (TRPO, Schulman et al. 2015) as pure TensorFlow functions.

Everything here runs inside one compiled call: the conjugate gradient and the backtracking line
search are ``tf.while_loop``s, not Python loops. Vectors are flat float32 tensors over a list
of variables (:func:`flat_concat` order). Shared by TRPO and the algorithms built on its
update (GAIL).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import tensorflow as tf


def flat_concat(tensors: Sequence[tf.Tensor]) -> tf.Tensor:
    """The tensors flattened and concatenated into one vector."""
    return tf.concat([tf.reshape(t, [-1]) for t in tensors], axis=0)


def unflatten(flat: tf.Tensor, variables: Sequence[tf.Variable]) -> list[tf.Tensor]:
    """A vector cut back into tensors shaped like ``variables``."""
    sizes = [int(np.prod(v.shape)) for v in variables]
    return [tf.reshape(part, v.shape) for part, v in zip(tf.split(flat, sizes), variables)]


def flat_set(variables: Sequence[tf.Variable], flat: tf.Tensor) -> list[tf.Operation]:
    """Assign a vector to the variables; returns the assignments (to depend on)."""
    return [v.assign(part) for v, part in zip(variables, unflatten(flat, variables))]


def conjugate_gradient(fvp_fn: Callable[[tf.Tensor], tf.Tensor], b: tf.Tensor, iters: int,
                       residual_tol: float = 1e-10) -> tf.Tensor:
    """Approximately solve ``F x = b`` for a symmetric positive-definite ``F`` known only
    through products ``fvp_fn(p) = F p``: at most ``iters`` conjugate-gradient iterations from
    ``x = 0``, stopping early once the squared residual ``r.r`` is below ``residual_tol``.

    Each iteration: ``alpha = r.r / p.Fp``, ``x += alpha p``, ``r -= alpha Fp``,
    ``p = r + (r_new.r_new / r.r) p``.
    """
    def cond(i: tf.Tensor, x: tf.Tensor, r: tf.Tensor, p: tf.Tensor,
             rdotr: tf.Tensor) -> tf.Tensor:
        return tf.logical_and(i < iters, rdotr >= residual_tol)

    def body(i: tf.Tensor, x: tf.Tensor, r: tf.Tensor, p: tf.Tensor,
             rdotr: tf.Tensor) -> tuple[tf.Tensor, ...]:
        z = fvp_fn(p)
        alpha = rdotr / tf.tensordot(p, z, 1)
        x = x + alpha * p
        r = r - alpha * z
        new_rdotr = tf.tensordot(r, r, 1)
        p = r + (new_rdotr / rdotr) * p
        return i + 1, x, r, p, new_rdotr

    b = tf.convert_to_tensor(b)
    _, x, _, _, _ = tf.while_loop(
        cond, body, (tf.constant(0), tf.zeros_like(b), b, b, tf.tensordot(b, b, 1)))
    return x


def fisher_vector_product(kl_fn: Callable[[], tf.Tensor], variables: Sequence[tf.Variable],
                          vector: tf.Tensor, damping: float | tf.Tensor) -> tf.Tensor:
    """``(H + damping I) v`` with ``H`` the Hessian of the mean KL ``kl_fn()`` (a function of
    ``variables``, the old policy held constant) at the current variables: at the old policy
    that Hessian is the Fisher information. Double backprop: ``H v = d(dKL/dtheta . v)/dtheta``.
    """
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            kl = kl_fn()
        grads = inner.gradient(kl, variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        gvp = tf.tensordot(flat_concat(grads), tf.stop_gradient(vector), 1)
    hvp = outer.gradient(gvp, variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    return flat_concat(hvp) + damping * vector


def natural_step(grad: tf.Tensor, fvp_fn: Callable[[tf.Tensor], tf.Tensor], max_kl: float,
                 cg_iters: int, residual_tol: float = 1e-10) -> tuple[tf.Tensor, tf.Tensor]:
    """The full step ``x / lm`` along the natural gradient ``x ~ F^-1 g`` (conjugate
    gradient), scaled so that its quadratic KL estimate ``0.5 s.F s`` equals ``max_kl``:
    ``lm = sqrt(0.5 x.F x / max_kl)``. Also returns the expected improvement ``g.s`` of the
    linearized objective. A zero gradient gives a zero step."""
    x = conjugate_gradient(fvp_fn, grad, cg_iters, residual_tol)
    shs = 0.5 * tf.tensordot(x, fvp_fn(x), 1)
    lm = tf.sqrt(tf.maximum(shs, 0.0) / max_kl)
    step = tf.math.divide_no_nan(x, lm)
    return step, tf.tensordot(grad, step, 1)


def line_search(variables: Sequence[tf.Variable], full_step: tf.Tensor,
                evaluate: Callable[[], tf.Tensor], gain_before: tf.Tensor, max_kl: float,
                max_iters: int = 10, shrink: float = 0.5
                ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Backtracking line search on the trust-region step, in place on ``variables``.

    Tries ``theta0 + f^k full_step`` for k = 0, 1, ... (f = ``shrink``) at most ``max_iters``
    times; ``evaluate()`` returns ``[gain, mean KL]`` at the variables' current values. A step
    is accepted when both are finite, the gain did not decrease (``gain >= gain_before``) and
    ``KL <= 1.5 max_kl``; if none is, the variables go back to ``theta0``.

    Returns (accepted step fraction f^k or 0, steps tried, [gain, KL] at the final variables:
    ``[gain_before, 0]`` after a revert).
    """
    before = flat_concat([tf.convert_to_tensor(v) for v in variables])

    def cond(i: tf.Tensor, frac: tf.Tensor, accepted: tf.Tensor,
             result: tf.Tensor) -> tf.Tensor:
        return tf.logical_and(i < max_iters, tf.logical_not(accepted))

    def body(i: tf.Tensor, frac: tf.Tensor, accepted: tf.Tensor,
             result: tf.Tensor) -> tuple[tf.Tensor, ...]:
        with tf.control_dependencies(flat_set(variables, before + frac * full_step)):
            result = tf.convert_to_tensor(evaluate())
        gain, kl = result[0], result[1]
        ok = tf.reduce_all(tf.math.is_finite(result))
        ok = tf.logical_and(ok, tf.logical_and(gain >= gain_before, kl <= 1.5 * max_kl))
        return i + 1, tf.where(ok, frac, frac * shrink), ok, result

    tries, frac, accepted, result = tf.while_loop(
        cond, body, (tf.constant(0), tf.constant(1.0), tf.constant(False),
                     tf.fill([2], float("nan"))))

    def revert() -> tf.Tensor:
        with tf.control_dependencies(flat_set(variables, before)):
            return tf.stack([tf.cast(gain_before, tf.float32), 0.0])  # back at theta0

    result = tf.cond(accepted, lambda: tf.identity(result), revert)
    return tf.where(accepted, frac, 0.0), tries, result
