"""TensorFlow helpers shared by the algorithms: optimizers, returns in-graph, compiled calls."""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

# (TF_CPP_MIN_LOG_LEVEL, KERAS_BACKEND and the start-up notices: rlbase/__init__.py, which runs
# before this module.)
import keras
import numpy as np
import tensorflow as tf

from rlbase.common import nested
from rlbase.common.io.serialization import numbered_arrays
from rlbase.common.mpi_util import allreduce_mean_f32


class RMSprop(keras.optimizers.RMSprop):
    """RMSProp with the two choices that differ between frameworks made explicit.

    initial_accumulator: the mean square's starting value. TF1 (and so Baselines' A2C/ACER)
        started at 1.0, which keeps the first few hundred updates tiny; Keras and PyTorch start
        at 0.0, whose first updates are about ``1/sqrt(1-rho)`` times larger.
    epsilon_inside_sqrt: TF1 and Keras divide by ``sqrt(ms + eps)``; PyTorch by
        ``sqrt(ms) + eps``.

    Without momentum or centering each variable's step is one fused TF kernel instead of
    Keras' ~10 elementwise passes (on a CPU without XLA, where convnets train, a step over a
    Nature CNN's weights took 2.4 ms as passes and 1.7 ms as kernels, on one thread): TF's
    ApplyRMSProp for sqrt(ms + eps), TF's ApplyAdam with beta1 = 0 and no bias correction for
    sqrt(ms) + eps. Both need a slot the formula does not (the momentum buffer, Adam's first
    moment): an unsaved scratch variable, overwritten at every step.
    """

    def __init__(self, learning_rate: float = 7e-4, rho: float = 0.99, epsilon: float = 1e-5,
                 initial_accumulator: float = 0.0, epsilon_inside_sqrt: bool = True,
                 **kwargs: Any):
        super().__init__(learning_rate=learning_rate, rho=rho, epsilon=epsilon, **kwargs)
        self.initial_accumulator = initial_accumulator
        self.epsilon_inside_sqrt = epsilon_inside_sqrt
        self._scratch: list[tf.Variable] = []

    def build(self, var_list: Sequence[tf.Variable]) -> None:
        if self.built:
            return
        super().build(var_list)
        if self.initial_accumulator:
            for velocity in self._velocities:
                velocity.assign(tf.fill(velocity.shape, self.initial_accumulator))
        if not (self.momentum or self.centered):
            # Plain tf.Variables: Keras tracks only its own, so the saved state is unchanged.
            self._scratch = [tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False)
                             for v in var_list]

    def update_step(self, gradient: tf.Tensor, variable: tf.Variable, learning_rate: Any) -> None:
        if self.momentum or self.centered:
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        index = self._get_variable_index(variable)
        ms, scratch = self._velocities[index], self._scratch[index]
        lr, rho, epsilon = (tf.cast(x, dtype) for x in (learning_rate, self.rho, self.epsilon))
        gradient = tf.cast(gradient, dtype)
        if self.epsilon_inside_sqrt:  # mom = 0 * mom + lr * g / sqrt(ms + eps); var -= mom
            tf.raw_ops.ResourceApplyRMSProp(
                var=variable.handle, ms=ms.handle, mom=scratch.handle, lr=lr, rho=rho,
                momentum=tf.zeros([], dtype), epsilon=epsilon, grad=gradient, use_locking=False)
            return
        # Adam's m becomes m + (g - m) * (1 - beta1): exactly g only from m = 0.
        scratch.assign(tf.zeros_like(scratch))
        zero = tf.zeros([], dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle, m=scratch.handle, v=ms.handle, beta1_power=zero,
            beta2_power=zero, lr=lr, beta1=zero, beta2=rho, epsilon=epsilon, grad=gradient,
            use_locking=False)


class Adam(keras.optimizers.Adam):
    """Keras' Adam with each variable's step one fused kernel (TF's ApplyAdam), same formula.

    Keras writes the step as ~10 elementwise ops per variable, each a pass over it; XLA fuses
    them, but convnets on a CPU run without XLA (``policies.xla_is_faster``), where those
    passes over a Nature CNN's 1.7M weights cost as much as a third of a PPO minibatch step.
    """

    def update_step(self, gradient: tf.Tensor, variable: tf.Variable, learning_rate: Any) -> None:
        if self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        index = self._get_variable_index(variable)
        step = tf.cast(self.iterations + 1, dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle, m=self._momentums[index].handle,
            v=self._velocities[index].handle,
            beta1_power=tf.pow(tf.cast(self.beta_1, dtype), step),
            beta2_power=tf.pow(tf.cast(self.beta_2, dtype), step),
            lr=tf.cast(learning_rate, dtype), beta1=tf.cast(self.beta_1, dtype),
            beta2=tf.cast(self.beta_2, dtype), epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(gradient, dtype), use_locking=False)


def clip_by_global_norm(grads: list[tf.Tensor], max_norm: float | None
                        ) -> tuple[list[tf.Tensor], tf.Tensor]:
    """Clip the gradient list to ``max_norm`` (None: no clipping); also return the raw norm."""
    norm = tf.linalg.global_norm(grads)
    if max_norm is not None:
        grads, _ = tf.clip_by_global_norm(grads, max_norm, use_norm=norm)
    return grads, norm


def average_over_workers(grads: list[tf.Tensor], comm: Any | None) -> list[tf.Tensor]:
    """Inside a compiled call: each tensor averaged over the MPI workers in ``comm`` (one
    Allreduce of all of them flattened together); unchanged without MPI."""
    if comm is None:
        return grads
    flat = tf.concat([tf.reshape(g, [-1]) for g in grads], axis=0)
    mean = tf.numpy_function(lambda x: allreduce_mean_f32(x, comm), [flat], tf.float32,
                             stateful=True)
    sizes = [int(np.prod(g.shape)) for g in grads]
    return [tf.reshape(part, g.shape) for part, g in zip(tf.split(mean, sizes), grads)]


def discounted_returns(rewards: tf.Tensor, dones: tf.Tensor, last_values: tf.Tensor,
                       gamma: float) -> tf.Tensor:
    """n-step returns of ``[num_envs, nsteps]`` rewards, bootstrapped from ``last_values``.

    ``dones[:, t]`` is 1 where the episode ended at step t (terminated, or truncated with the
    final observation's value already folded into the reward): the return does not look past it.
    """
    keep_t = 1.0 - tf.transpose(dones)
    return tf.transpose(_backward_sum(tf.transpose(rewards), keep_t, gamma, last_values))


def gae_advantages(rewards: tf.Tensor, values: tf.Tensor, dones: tf.Tensor,
                   last_values: tf.Tensor, gamma: float, lam: float) -> tf.Tensor:
    """Generalized advantage estimates of ``[num_envs, nsteps]`` rollouts (Schulman et al. 2016).

    ``dones[:, t]`` is 1 where the episode ended at step t; a truncated step's reward already
    holds ``gamma * V(final observation)``, so both kinds of end stop the recursion there.
    ``lam=1`` gives the n-step returns minus the values.
    """
    values_t = tf.transpose(values)
    next_values_t = tf.concat([values_t[1:], last_values[None]], axis=0)
    keep_t = 1.0 - tf.transpose(dones)
    deltas_t = tf.transpose(rewards) + gamma * keep_t * next_values_t - values_t
    return tf.transpose(_backward_sum(deltas_t, keep_t, gamma * lam, tf.zeros_like(last_values)))


def _backward_sum(x_t: tf.Tensor, keep_t: tf.Tensor, discount: float, last: tf.Tensor
                  ) -> tf.Tensor:
    """Time-major ``out[t] = x[t] + discount * keep[t] * out[t + 1]``, ``out[T] = last``."""
    return tf.scan(lambda following, elems: elems[0] + discount * elems[1] * following,
                   (x_t, keep_t), initializer=last, reverse=True)


def explained_variance(ypred: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
    """1 - Var[y - ypred] / Var[y] in-graph (nan when y is constant)."""
    var_y = tf.math.reduce_variance(y)
    ev = 1.0 - tf.math.reduce_variance(y - ypred) / var_y
    # 1 - x/0 is -inf (not nan) when ypred differs from a constant y
    return tf.where(var_y > 0, ev, tf.constant(float("nan"), ev.dtype))


class CompiledFunction:
    """``fn`` traced once for a fixed signature, called with the least Python overhead.

    Measured here on a 64x64 MLP act: a tf.function call costs ~450 us, its concrete function
    ~370 us, the same with XLA (``jit_compile``) ~110 us, and XLA fed ready-made tensors
    through the flat call path ~75 us. So arguments become tensors directly (numpy buffers
    wrapped without copies through TF's checks) and outputs come back as a flat tuple. Never
    retraces: an argument of another shape or dtype raises. Arguments may be nested (the
    dicts and tuples of Dict/Tuple observations): the signature then nests the same way.
    """

    def __init__(self, fn: Callable[..., Any], signature: Sequence[Any],
                 jit_compile: bool = False):
        # No AutoGraph: our graph code uses TF ops for control flow (tf.scan, tf.where), and
        # converting the Python source was ~80% of the tracing time.
        self.function = tf.function(fn, input_signature=list(signature),
                                    jit_compile=jit_compile, autograph=False)
        self.concrete = self.function.get_concrete_function()
        self.signature = tf.nest.flatten(list(signature))
        self._nested = any(tf.nest.is_nested(spec) for spec in signature)
        self._dtypes = [spec.dtype for spec in self.signature]
        self._np_dtypes = [spec.dtype.as_numpy_dtype for spec in self.signature]
        self._enums = [spec.dtype.as_datatype_enum for spec in self.signature]
        self._device = tf.constant(0).device
        # The flat call skips argument binding; fall back to the public call if a TF release
        # renames it.
        self._call_flat = getattr(self.concrete, "_call_flat", None)
        self._captured = self.concrete.captured_inputs

    def _tensor(self, value: Any, i: int) -> tf.Tensor:
        if isinstance(value, tf.Tensor):
            return value
        array = np.asarray(value, dtype=self._np_dtypes[i])
        try:
            return _EagerTensor(array, self._device, self._enums[i])
        except (TypeError, ValueError):
            return tf.convert_to_tensor(array, self._dtypes[i])

    def __call__(self, *args: Any) -> Any:
        flat = tf.nest.flatten(list(args)) if self._nested else args
        tensors = [self._tensor(a, i) for i, a in enumerate(flat)]
        if self._call_flat is not None:
            for tensor, spec in zip(tensors, self.signature):
                if not spec.shape.is_compatible_with(tensor.shape):
                    raise ValueError(f"argument of shape {tensor.shape} does not match "
                                     f"{spec.shape}")
            return self._call_flat(tensors, self._captured)
        return self.concrete(*tf.nest.pack_sequence_as(list(args), tensors))


try:
    from tensorflow.python.framework.ops import EagerTensor as _EagerTensor
except ImportError:  # pragma: no cover - a TF without the class falls back to convert
    _EagerTensor = tf.convert_to_tensor


def compile_fn(fn: Callable[..., Any], signature: Sequence[tf.TensorSpec],
               jit_compile: bool = False) -> CompiledFunction:
    """Shorthand for :class:`CompiledFunction`."""
    return CompiledFunction(fn, signature, jit_compile)


def spec_like(shape: Sequence[int | None], dtype: Any) -> tf.TensorSpec:
    return tf.TensorSpec(list(shape), tf.as_dtype(np.dtype(dtype)) if dtype is not None else None)


def observation_spec(space: Any, lead: Sequence[int | None]) -> Any:
    """The TensorSpec of a batch of observations with leading axes ``lead``: nested like the
    observations of a Dict/Tuple space."""
    return nested.pack(space, [spec_like([*lead, *(leaf.shape or ())], leaf.dtype)
                               for leaf in nested.leaf_spaces(space)])


THREAD_PLANS = ("small", "convnet", "large")


def configure_threads(plan: str) -> None:
    """Size TF's thread pools before its first op (later calls change nothing).

    'small' (MLPs acting and training on small batches): one thread. Measured here, an MLP act
        costs ~100 us on one thread and ~380 us when TF hands its ops to a pool (waking
        threads costs more than the work).
    'convnet' (on a CPU): one thread per op and one op per core, while :func:`split_rows`
        runs the network on one block of the batch per core. On 2 cores, Nature-CNN
        gradients on 40 Atari frames took 6.3 ms this way against 7.8 ms with TF's pools
        splitting each op, and acting on 8 frames 0.74 ms against 1.14 ms. With a GPU the
        pools stay TF's.
    'large' (whole 256-row minibatches through 256x256 or 400x300 MLPs): TF's own pools.

    ``RLBASE_TF_THREADS=N`` overrides every plan with N threads per op and N ops at once.
    """
    if plan not in THREAD_PLANS:
        raise ValueError(f"unknown thread plan {plan!r}; use one of {THREAD_PLANS}")
    override = os.environ.get("RLBASE_TF_THREADS")
    if override:
        intra = inter = int(override)
    elif plan == "small":
        intra = inter = 1
    elif plan == "convnet" and not tf.config.list_physical_devices("GPU"):
        intra, inter = 1, available_cores()
    else:
        return
    try:
        tf.config.threading.set_intra_op_parallelism_threads(intra)
        tf.config.threading.set_inter_op_parallelism_threads(inter)
    except RuntimeError:
        pass  # TF already started its pools; keep them


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - platforms without affinity (macOS)
        return os.cpu_count() or 1


def batch_blocks() -> int:
    """How many row blocks :func:`split_rows` computes side by side: the ops TF runs at once
    when each op runs on one thread (the 'convnet' plan of :func:`configure_threads`), else 1."""
    intra = tf.config.threading.get_intra_op_parallelism_threads()
    inter = tf.config.threading.get_inter_op_parallelism_threads()
    return inter if intra == 1 and inter > 1 else 1


def split_rows(fn: Callable[[tf.Tensor], tf.Tensor], x: tf.Tensor, blocks: int) -> tf.Tensor:
    """``fn(x)`` for an ``fn`` that treats rows independently, computed as ``blocks`` calls on
    consecutive row blocks that TF runs side by side (their gradients too). A batch with
    fewer rows than blocks goes whole: an empty block is never computed."""
    if blocks <= 1:
        return fn(x)
    n = tf.shape(x)[0]

    def in_blocks() -> tf.Tensor:
        bounds = [0, *((i * n) // blocks for i in range(1, blocks)), n]
        return tf.concat([fn(x[bounds[i]:bounds[i + 1]]) for i in range(blocks)], axis=0)

    return tf.cond(n >= blocks, in_blocks, lambda: fn(x))


def variables_to_arrays(variables: Sequence[tf.Variable], prefix: str) -> dict[str, np.ndarray]:
    """Numbered arrays (``prefix/0007``) so that loading does not depend on variable names."""
    return {f"{prefix}/{i:04d}": v.numpy() for i, v in enumerate(variables)}


def assign_from_arrays(variables: Sequence[tf.Variable], arrays: dict[str, np.ndarray],
                       prefix: str, path: str = "") -> None:
    """Inverse of :func:`variables_to_arrays`; a count or shape mismatch is a clear error."""
    saved = numbered_arrays(arrays, prefix, [v.shape for v in variables], path)
    # Assign only once every array has been checked: a bad file leaves the model untouched.
    for var, value in zip(variables, saved):
        var.assign(value)
