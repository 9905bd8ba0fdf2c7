"""K-FAC (Kronecker-factored approximate curvature) for Keras Dense and Conv2D layers.

For a layer with pre-activations ``s = W^T a + b``, the Fisher block of its weights
``[W; b]`` (bias as the last input row) is approximated by ``A (x) G``, with
``A = E[a_ a_^T]`` (``a_ = [a, 1]``, the homogeneous input) and ``G = E[g g^T]`` (``g`` the
per-sample gradient of the log-likelihood w.r.t. ``s``). Layers are treated independently:
the Fisher is block-diagonal over layers, each block Kronecker-factored. For Conv2D the
input is every receptive-field patch (Grosse & Martens' KFC): the weight gradient of one
sample sums over the ``T`` output positions, so its Fisher block is ``T * E_t[a a^T] (x)
E_t[g g^T]`` when positions' derivatives are uncorrelated. ``A`` is the mean over samples and
positions and ``G`` carries the factor ``T``; Baselines' acktr has the same product (its ``A``
is divided by ``T`` and its ``G`` multiplied by ``T^2``), which its damping and kfac_clip
were tuned with.

The step (ACKTR, Wu et al. 2017): the factors are running averages; every
``inverse_interval`` updates they are eigendecomposed, ``A = Qa diag(da) Qa^T`` and
``G = Qg diag(dg) Qg^T``; the preconditioned gradient is the exact
``(A (x) G + damping I)^-1 vec(grad)`` = ``Qa [(Qa^T grad Qg) / (da dg^T + damping)] Qg^T``;
it is scaled so the step's squared Fisher norm ``lr^2 u^T grad`` is at most ``kfac_clip``
(variables outside the factored layers, e.g. a Gaussian's log std, take their plain gradient
in both the step and that norm) and applied by momentum SGD with step ``lr * (1 - momentum)``.
The first ``cold_iter`` updates are plain momentum SGD at ``lr`` on gradients clipped to
``max_grad_norm`` while the factors are averaged (equal weights); after that the factors are
running averages with ``stats_decay`` (Baselines' schedule; its asynchronous queue is not
built: every decomposition is synchronous).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeAlias

import keras
import tensorflow as tf

from rlbase.common.errors import RLBaseError

# A factor this wide (~400 MB in float32) and its eigendecomposition are beyond reach.
MAX_FACTOR_DIM = 10000
# keras.layers.Dense or keras.layers.Conv2D (keras ships no type information).
FactoredLayer: TypeAlias = Any


def check_layers(layers: Sequence[keras.layers.Layer]) -> list[FactoredLayer]:
    """The layers K-FAC factors; one line naming a layer it cannot handle (LSTM, ...)."""
    out = []
    for layer in layers:
        if isinstance(layer, keras.layers.Conv2D):
            if layer.data_format != "channels_last" or tuple(layer.dilation_rate) != (1, 1) \
                    or layer.groups != 1:
                raise RLBaseError(f"K-FAC handles channels_last, undilated, ungrouped Conv2D "
                                  f"only, not layer '{layer.name}'")
        elif not isinstance(layer, keras.layers.Dense):
            raise RLBaseError(f"K-FAC handles Dense and Conv2D layers only, not "
                              f"{type(layer).__name__} '{layer.name}'; use an mlp or cnn network")
        out.append(layer)
    return out


def layer_inputs(layer: FactoredLayer, inputs: tf.Tensor) -> tf.Tensor:
    """The homogeneous inputs ``a_`` of a layer, one row per sample (Dense) or per sample and
    output position (Conv2D), with a trailing 1 for the bias."""
    if isinstance(layer, keras.layers.Conv2D):
        kh, kw = layer.kernel_size
        sh, sw = layer.strides
        inputs = tf.image.extract_patches(inputs, [1, kh, kw, 1], [1, sh, sw, 1], [1, 1, 1, 1],
                                          layer.padding.upper())
    rows = tf.reshape(inputs, [-1, inputs.shape[-1]])
    if layer.use_bias:
        rows = tf.concat([rows, tf.ones_like(rows[:, :1])], axis=1)
    return rows


def batch_factors(layer: FactoredLayer, inputs: tf.Tensor, out_grads: tf.Tensor
                  ) -> tuple[tf.Tensor, tf.Tensor]:
    """``(A, G)`` of one batch. ``out_grads`` is the gradient of the batch's *mean* loss
    w.r.t. the layer's pre-activations, so the per-sample gradient is batch size times it.
    For a convolution ``G`` is multiplied by the number of output positions (module
    docstring)."""
    batch = tf.cast(tf.shape(inputs)[0], inputs.dtype)
    a = layer_inputs(layer, inputs)
    g = tf.reshape(out_grads, [-1, out_grads.shape[-1]]) * batch
    rows = tf.cast(tf.shape(a)[0], a.dtype)
    positions = rows / batch
    return (tf.matmul(a, a, transpose_a=True) / rows,
            tf.matmul(g, g, transpose_a=True) / rows * positions)


def weight_matrix(layer: FactoredLayer, grads: Sequence[tf.Tensor]) -> tf.Tensor:
    """A layer's kernel (and bias) gradients as one ``(inputs + 1, outputs)`` matrix."""
    kernel = tf.reshape(grads[0], [-1, grads[0].shape[-1]])
    return tf.concat([kernel, grads[1][None]], axis=0) if layer.use_bias else kernel


def split_matrix(layer: FactoredLayer, matrix: tf.Tensor) -> list[tf.Tensor]:
    """Inverse of :func:`weight_matrix`."""
    shape = layer.kernel.shape
    if layer.use_bias:
        return [tf.reshape(matrix[:-1], shape), matrix[-1]]
    return [tf.reshape(matrix, shape)]


def precondition(grad: tf.Tensor, qa: tf.Tensor, da: tf.Tensor, qg: tf.Tensor, dg: tf.Tensor,
                 damping: float | tf.Tensor) -> tf.Tensor:
    """``(A (x) G + damping I)^-1 vec(grad)`` from the factors' eigendecompositions (``grad``
    of shape ``(dim A, dim G)``, vec stacking it row by row)."""
    rotated = tf.matmul(tf.matmul(qa, grad, transpose_a=True), qg)
    rotated = rotated / (da[:, None] * dg[None, :] + damping)
    return tf.matmul(tf.matmul(qa, rotated), qg, transpose_b=True)


def clip_scale(updates: Sequence[tf.Tensor], grads: Sequence[tf.Tensor], lr: tf.Tensor,
               kfac_clip: float) -> tf.Tensor:
    """``min(1, sqrt(kfac_clip / (lr^2 sum(u * g))))``: the trust region on the step's
    squared Fisher norm (the approximate KL change)."""
    vfv = tf.add_n([tf.reduce_sum(u * g) for u, g in zip(updates, grads)]) * lr * lr
    return tf.minimum(1.0, tf.sqrt(kfac_clip / tf.maximum(vfv, 1e-20)))


class Recorder:
    """Records each factored layer's inputs and a zero tensor added to its pre-activations,
    watched by ``tape``: the gradient w.r.t. that zero is the pre-activation gradient."""

    def __init__(self, tape: tf.GradientTape):
        self.tape = tape
        self.inputs: dict[int, tf.Tensor] = {}
        self.probes: dict[int, tf.Tensor] = {}

    def call(self, layer: FactoredLayer, inputs: tf.Tensor) -> tf.Tensor:
        if isinstance(layer, keras.layers.Conv2D):
            pre = layer.convolution_op(inputs, layer.kernel)
        else:
            pre = tf.matmul(inputs, layer.kernel)
        if layer.use_bias:
            pre = pre + layer.bias
        probe = tf.zeros_like(pre)
        self.tape.watch(probe)
        self.inputs[id(layer)], self.probes[id(layer)] = inputs, probe
        pre = pre + probe
        return layer.activation(pre) if layer.activation is not None else pre


@contextmanager
def recording(layers: Sequence[FactoredLayer], tape: tf.GradientTape) -> Iterator[Recorder]:
    """Within this block, calling the layers (through any model that holds them) records
    their inputs and pre-activation probes in the yielded :class:`Recorder`."""
    recorder = Recorder(tape)
    for layer in layers:
        layer.call = lambda inputs, *args, _l=layer, **kwargs: recorder.call(_l, inputs)
    try:
        yield recorder
    finally:
        for layer in layers:
            del layer.call


class KFAC:
    """The K-FAC optimizer of ``variables``, preconditioning the weights of ``layers`` (each a
    Dense or Conv2D layer whose kernel and bias are among ``variables``).

    momentum: momentum of both the cold SGD and the K-FAC steps.
    kfac_clip: bound on the squared Fisher norm of a step (the trust region).
    damping: added to the Kronecker product's eigenvalues.
    stats_decay: running-average decay of the factors after the first ``cold_iter`` updates.
    cold_iter: updates of plain momentum SGD (factors averaged) before K-FAC steps start.
    inverse_interval: eigendecompose the factors every this many K-FAC updates.
    max_grad_norm: clip the cold SGD steps' gradient global norm (None: no clipping).
    """

    def __init__(self, layers: Sequence[keras.layers.Layer], variables: Sequence[tf.Variable],
                 *, momentum: float = 0.9, kfac_clip: float = 0.001, damping: float = 0.01,
                 stats_decay: float = 0.95, cold_iter: int = 10, inverse_interval: int = 1,
                 max_grad_norm: float | None = 0.5):
        self.layers = check_layers(layers)
        self.trained = list(variables)
        self.momentum, self.kfac_clip = momentum, kfac_clip
        self.damping, self.stats_decay = damping, stats_decay
        self.cold_iter, self.inverse_interval = cold_iter, inverse_interval
        self.max_grad_norm = max_grad_norm
        index = {id(v): i for i, v in enumerate(self.trained)}
        missing = [v.name for layer in self.layers for v in self._layer_vars(layer)
                   if id(v) not in index]
        if missing:
            raise RLBaseError(f"K-FAC layer variables not among the optimized ones: {missing}")
        self._index = index
        self.factors: list[tuple[tf.Variable, tf.Variable]] = []
        self.eigen: list[tuple[tf.Variable, tf.Variable, tf.Variable, tf.Variable]] = []
        for layer in self.layers:
            dim_a = int(weight_matrix(layer, self._layer_vars(layer)).shape[0])
            dim_g = int(layer.kernel.shape[-1])
            wide = max(dim_a, dim_g)  # the message names the wider factor, A or G
            if wide > MAX_FACTOR_DIM:
                raise RLBaseError(f"K-FAC factor of layer '{layer.name}' would be {wide} x "
                                  f"{wide} (at most {MAX_FACTOR_DIM}); use a convnet (cnn), "
                                  f"smaller inputs or fewer units")
            self.factors.append((_state(tf.zeros([dim_a, dim_a])),
                                 _state(tf.zeros([dim_g, dim_g]))))
            self.eigen.append((_state(tf.eye(dim_a)), _state(tf.ones([dim_a])),
                               _state(tf.eye(dim_g)), _state(tf.ones([dim_g]))))
        self.velocity = [_state(tf.zeros_like(v)) for v in self.trained]
        self.cold_velocity = [_state(tf.zeros_like(v)) for v in self.trained]
        self.updates = _state(tf.constant(0, tf.int64))

    def build(self, variables: Sequence[tf.Variable]) -> None:
        """Keras optimizers' build: the state exists already; checks the variables match."""
        if [id(v) for v in variables] != [id(v) for v in self.trained]:
            raise RLBaseError("K-FAC was built for other variables")

    @property
    def variables(self) -> list[tf.Variable]:
        """The optimizer's state (what a checkpoint saves)."""
        return [self.updates, *[v for pair in self.factors for v in pair],
                *[v for four in self.eigen for v in four], *self.velocity,
                *self.cold_velocity]

    @staticmethod
    def _layer_vars(layer: FactoredLayer) -> list[Any]:
        return [layer.kernel, layer.bias] if layer.use_bias else [layer.kernel]

    def update_stats(self, recorder: Recorder, probe_grads: dict[int, tf.Tensor]) -> None:
        """Fold one batch's factors into the averages: equal weights over the first
        ``cold_iter`` updates (the first batch replaces the zeros), then ``stats_decay``."""
        n = tf.cast(self.updates, tf.float32)
        decay = tf.where(self.updates < self.cold_iter, n / (n + 1.0), self.stats_decay)
        for layer, (a_var, g_var) in zip(self.layers, self.factors):
            a, g = batch_factors(layer, recorder.inputs[id(layer)], probe_grads[id(layer)])
            a_var.assign(decay * a_var + (1.0 - decay) * a)
            g_var.assign(decay * g_var + (1.0 - decay) * g)

    def update_inverse(self) -> None:
        """Eigendecompose the averaged factors (eigenvalues clipped at zero)."""
        for (a_var, g_var), (qa, da, qg, dg) in zip(self.factors, self.eigen):
            ea, va = tf.linalg.eigh(a_var)
            eg, vg = tf.linalg.eigh(g_var)
            da.assign(tf.maximum(ea, 0.0))
            qa.assign(va)
            dg.assign(tf.maximum(eg, 0.0))
            qg.assign(vg)

    def preconditioned(self, grads: Sequence[tf.Tensor]) -> list[tf.Tensor]:
        """Each factored layer's gradient times its damped inverse Kronecker block; the other
        variables' gradients unchanged."""
        updates = list(grads)
        for layer, (qa, da, qg, dg) in zip(self.layers, self.eigen):
            idx = [self._index[id(v)] for v in self._layer_vars(layer)]
            matrix = weight_matrix(layer, [grads[i] for i in idx])
            for i, part in zip(idx, split_matrix(
                    layer, precondition(matrix, qa, da, qg, dg, self.damping))):
                updates[i] = part
        return updates

    def apply(self, grads: Sequence[tf.Tensor], lr: tf.Tensor) -> tf.Tensor:
        """One K-FAC step with the current decomposition: precondition, scale into the trust
        region, momentum SGD at ``lr * (1 - momentum)``; returns the scale."""
        updates = self.preconditioned(grads)
        scale = clip_scale(updates, grads, lr, self.kfac_clip)
        for var, vel, u in zip(self.trained, self.velocity, updates):
            vel.assign(self.momentum * vel + scale * u)
            var.assign_sub(lr * (1.0 - self.momentum) * vel)
        return scale

    def apply_cold(self, grads: Sequence[tf.Tensor], lr: tf.Tensor) -> tf.Tensor:
        """One momentum SGD step at ``lr`` on the clipped gradients; returns 1 (no scaling)."""
        grads = list(grads)
        if self.max_grad_norm is not None:
            grads, _ = tf.clip_by_global_norm(grads, self.max_grad_norm)
        for var, vel, g in zip(self.trained, self.cold_velocity, grads):
            vel.assign(self.momentum * vel + g)
            var.assign_sub(lr * vel)
        return tf.constant(1.0)

    def minimize(self, grads: Sequence[tf.Tensor], recorder: Recorder,
                 probe_grads: dict[int, tf.Tensor], lr: tf.Tensor) -> tf.Tensor:
        """A whole update, in-graph: the factors' statistics, then a cold SGD step or (after
        ``cold_iter`` updates) a K-FAC step, decomposing the factors first every
        ``inverse_interval`` K-FAC steps. Returns the trust-region scale (1 when cold)."""
        self.update_stats(recorder, probe_grads)
        warm = self.updates - self.cold_iter

        def kfac_step() -> tf.Tensor:
            def decompose() -> tf.Tensor:
                self.update_inverse()
                return tf.constant(True)

            done = tf.cond(warm % self.inverse_interval == 0, decompose,
                           lambda: tf.constant(False))
            with tf.control_dependencies([done]):
                return self.apply(grads, lr)

        scale = tf.cond(warm >= 0, kfac_step, lambda: self.apply_cold(grads, lr))
        with tf.control_dependencies([scale]):
            self.updates.assign_add(1)
        return scale


def _state(value: tf.Tensor) -> tf.Variable:
    return tf.Variable(value, trainable=False)
