"""K-FAC's Conv2D path and its refusals with exact values (rlbase/acktr/kfac.py), found by
mutation testing: the receptive-field patches (kernel, strides, 'valid' and 'same' padding,
channels), the factors built from them (``A`` the mean over samples and output positions,
``G`` times the ``T`` positions), a whole K-FAC step on a convolution, and each configuration
K-FAC refuses with its one-line error. The references are plain numpy, patches cut by hand
with TensorFlow's padding rule (the extra row or column of 'same' padding goes at the end)."""

from __future__ import annotations

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from rlbase.acktr import kfac
from rlbase.common.errors import RLBaseError

N = 2  # batch


def hand_patches(x, kernel, strides, padding):
    """(N, out rows, out columns, kh * kw * c) receptive fields, each in the kernel's (row,
    column, channel) order."""
    (kh, kw), (sh, sw) = kernel, strides
    _, h, w, _ = x.shape
    if padding == "same":
        oh, ow = math.ceil(h / sh), math.ceil(w / sw)
        ph, pw = max((oh - 1) * sh + kh - h, 0), max((ow - 1) * sw + kw - w, 0)
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    else:
        oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
    return np.stack([np.stack([x[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :].reshape(len(x), -1)
                               for j in range(ow)], axis=1) for i in range(oh)], axis=1)


def conv_layer(filters, kernel, strides, padding, channels, use_bias=True, seed=0):
    keras.utils.set_random_seed(seed)
    layer = keras.layers.Conv2D(filters, kernel, strides=strides, padding=padding,
                                use_bias=use_bias)
    layer.build((None, None, None, channels))
    if use_bias:  # a bias that is not zero, so the forward pass shows it
        layer.bias.assign(np.linspace(-0.5, 0.5, filters).astype(np.float32))
    return layer


def record(layer, x, out_weights):
    """The recorded forward pass with the loss mean_n sum(out_weights[n] * y[n]); returns
    (outputs, recorder, pre-activation gradient, loss gradients of kernel and bias)."""
    with tf.GradientTape(persistent=True) as tape:
        with kfac.recording([layer], tape) as rec:
            y = layer(tf.constant(x))
        loss = tf.reduce_mean(tf.reduce_sum(y * out_weights, axis=[1, 2, 3]))
    probe = tape.gradient(loss, rec.probes[id(layer)])
    grads = tape.gradient(loss, layer.trainable_variables)
    return y.numpy(), rec, probe, grads


# (kernel, strides, padding, image height x width, channels, bias): output positions T
CASES = [
    ((2, 2), (1, 1), "valid", (4, 4), 1, True),    # T = 9
    ((2, 2), (2, 2), "valid", (4, 4), 1, True),    # T = 4, patches do not overlap
    ((2, 2), (1, 1), "same", (4, 4), 1, True),     # T = 16, last row and column padded
    ((2, 2), (2, 2), "same", (4, 4), 1, True),     # T = 4, no padding needed
    ((3, 3), (1, 1), "same", (4, 4), 1, True),     # T = 16, a zero row on each side
    ((3, 3), (2, 2), "same", (4, 4), 1, True),     # T = 4, a zero row at the end only
    ((2, 3), (1, 2), "same", (4, 5), 2, True),     # rows != columns, two channels
    ((2, 3), (2, 1), "valid", (5, 4), 2, False),   # no bias: A has no row of ones
]


@pytest.mark.parametrize("kernel, strides, padding, hw, channels, use_bias", CASES)
def test_conv_factors_from_hand_cut_patches(kernel, strides, padding, hw, channels, use_bias):
    """A = mean over samples and positions of a_ a_^T (a_ the patch, with a 1 for the bias);
    G = T * mean over samples and positions of g g^T, g the per-sample loss gradient of one
    position's pre-activations (here the loss weights themselves: no activation)."""
    layer = conv_layer(3, kernel, strides, padding, channels, use_bias)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(N, *hw, channels)).astype(np.float32)
    patches = hand_patches(x.astype(np.float64), kernel, strides, padding)
    out_weights = rng.normal(size=(*patches.shape[:3], 3)).astype(np.float32)
    t = patches.shape[1] * patches.shape[2]
    patches = patches.reshape(N, t, -1)
    y, rec, probe, grads = record(layer, x, out_weights)
    # the recorded pass is the convolution: patches times the kernel, plus the bias
    kernel_rows = layer.kernel.numpy().astype(np.float64).reshape(-1, 3)
    bias = layer.bias.numpy() if use_bias else np.zeros(3)
    np.testing.assert_allclose(y.reshape(N, t, 3), patches @ kernel_rows + bias,
                               rtol=1e-5, atol=1e-5)
    rows = patches.reshape(N * t, -1)
    if use_bias:
        rows = np.concatenate([rows, np.ones((N * t, 1))], axis=1)
    g = out_weights.astype(np.float64).reshape(N * t, 3)
    a_got, g_got = kfac.batch_factors(layer, rec.inputs[id(layer)], probe)
    np.testing.assert_allclose(a_got.numpy(), rows.T @ rows / (N * t), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g_got.numpy(), t * (g.T @ g) / (N * t), rtol=1e-5, atol=1e-6)
    # the loss gradient of the kernel is the patches times the per-position gradients / N
    np.testing.assert_allclose(grads[0].numpy().reshape(-1, 3),
                               patches.reshape(N * t, -1).T @ g / N, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("use_bias", [True, False])
def test_kfac_step_on_a_convolution(use_bias):
    """With cold_iter=0 the first update is a K-FAC step on this batch's factors (folded into
    the zeros with weight 1 - stats_decay): the kernel (and bias) gradient as one
    ``(kh kw c [+ 1], filters)`` matrix, times ``(A (x) G + damping I)^-1``, scaled into the
    trust region and taken at ``lr (1 - momentum)``; the kernel comes back in its own shape.
    4 filters, unlike the kernel's 2 rows and 3 columns, so no other axis has the outputs'
    size; momentum 0.25, where 1 - momentum differs from 1 % momentum."""
    layer = conv_layer(4, (2, 3), (1, 2), "same", 2, use_bias, seed=2)
    opt = kfac.KFAC([layer], layer.trainable_variables, cold_iter=0, stats_decay=0.5,
                    damping=0.01, kfac_clip=1e-4, momentum=0.25)
    dim_a = 2 * 3 * 2 + use_bias
    assert [tuple(f.shape) for f in opt.factors[0]] == [(dim_a, dim_a), (4, 4)]
    rng = np.random.default_rng(3)
    x = rng.normal(size=(N, 4, 5, 2)).astype(np.float32)
    out_weights = rng.normal(size=(N, 4, 3, 4)).astype(np.float32)
    before = [v.numpy().astype(np.float64) for v in layer.trainable_variables]
    _, rec, probe, grads = record(layer, x, out_weights)
    scale = float(opt.minimize(grads, rec, {id(layer): probe}, tf.constant(0.5)))
    patches = hand_patches(x.astype(np.float64), (2, 3), (1, 2), "same").reshape(N * 12, -1)
    # 4 x 3 = 12 output positions per sample
    if use_bias:
        patches = np.concatenate([patches, np.ones((N * 12, 1))], axis=1)
    g = out_weights.astype(np.float64).reshape(N * 12, 4)
    a, gg = 0.5 * patches.T @ patches / (N * 12), 0.5 * 12 * (g.T @ g) / (N * 12)
    grad = np.concatenate([grads[0].numpy().reshape(-1, 4)]
                          + ([grads[1].numpy()[None]] if use_bias else []), axis=0)
    u = np.linalg.solve(np.kron(a, gg) + 0.01 * np.eye(dim_a * 4),
                        grad.astype(np.float64).ravel()).reshape(grad.shape)
    want_scale = min(1.0, math.sqrt(1e-4 / (0.5 ** 2 * np.sum(u * grad))))
    assert 0.0 < want_scale < 1.0
    assert scale == pytest.approx(want_scale, rel=1e-3)
    assert np.abs(u).max() * 0.5 * 0.75 * want_scale > 1e-4  # steps well above the atol
    step = -0.5 * (1.0 - 0.25) * want_scale * u
    after = [v.numpy().astype(np.float64) for v in layer.trainable_variables]
    np.testing.assert_allclose(after[0] - before[0], step[:12].reshape(2, 3, 2, 4),
                               rtol=2e-3, atol=1e-7)
    if use_bias:
        np.testing.assert_allclose(after[1] - before[1], step[12], rtol=2e-3, atol=1e-7)


@pytest.mark.parametrize("options", [dict(data_format="channels_first"),
                                     dict(dilation_rate=2), dict(dilation_rate=(1, 2)),
                                     dict(dilation_rate=(2, 1)), dict(groups=2)])
def test_conv_configurations_refused(options):
    layer = keras.layers.Conv2D(4, 2, name="odd_conv", **options)
    with pytest.raises(RLBaseError, match=r"^K-FAC handles channels_last, undilated, "
                       r"ungrouped Conv2D only, not layer 'odd_conv'$"):
        kfac.check_layers([keras.layers.Dense(2), layer])


@pytest.mark.parametrize("kind, args", [("LSTM", (4,)), ("Conv1D", (4, 2)),
                                        ("DepthwiseConv2D", (2,))])
def test_other_layers_refused(kind, args):
    layer = getattr(keras.layers, kind)(*args, name="odd")
    with pytest.raises(RLBaseError, match=rf"^K-FAC handles Dense and Conv2D layers only, not "
                       rf"{kind} 'odd'; use an mlp or cnn network$"):
        kfac.check_layers([keras.layers.Conv2D(4, 2), layer])


def test_dense_and_plain_conv_layers_accepted_in_order():
    layers = [keras.layers.Conv2D(4, 2), keras.layers.Conv2D(4, 3, strides=2, padding="same"),
              keras.layers.Dense(3), keras.layers.Dense(2, use_bias=False)]
    assert kfac.check_layers(layers) == layers


def dense(units, inputs, name=None):
    layer = keras.layers.Dense(units, name=name)
    layer.build((None, inputs))
    return layer


def test_layer_variables_must_be_optimized():
    layer = dense(2, 3)
    with pytest.raises(RLBaseError, match=r"^K-FAC layer variables not among the optimized "
                       r"ones: \['bias'\]$"):
        kfac.KFAC([layer], [layer.kernel])
    extra = tf.Variable([1.0])  # variables outside the layers are optimized unfactored
    opt = kfac.KFAC([layer], [extra, layer.bias, layer.kernel])
    assert [tuple(f.shape) for f in opt.factors[0]] == [(4, 4), (2, 2)]


def test_build_checks_the_variables():
    layer = dense(2, 3)
    opt = kfac.KFAC([layer], [layer.kernel, layer.bias])
    opt.build([layer.kernel, layer.bias])
    # other orders, fewer and more variables (a list sorting before or after the right one)
    for other in ([layer.bias, layer.kernel], [layer.kernel],
                  [layer.kernel, layer.bias, tf.Variable(1.0)]):
        with pytest.raises(RLBaseError, match="^K-FAC was built for other variables$"):
            opt.build(other)
    # its state is not trainable: a model collecting trainable variables leaves it alone
    assert opt.variables and not any(v.trainable for v in opt.variables)


class ShapesOnly:
    """TensorFlow, except that ``zeros`` and ``eye`` return the shape asked for: a factor
    10000 wide is 400 MB and ``tf.eye(10000)`` takes seconds."""

    def __getattr__(self, name):
        return getattr(tf, name)

    @staticmethod
    def zeros(shape):
        return tf.constant(shape)

    @staticmethod
    def eye(size):
        return tf.constant([size, size])


def test_factor_bound_is_inclusive(monkeypatch):
    monkeypatch.setattr(kfac, "tf", ShapesOnly())
    for units, inputs in [(1, 9999), (10000, 1)]:  # A 10000 wide, then G
        layer = dense(units, inputs)
        opt = kfac.KFAC([layer], [layer.kernel, layer.bias])
        shapes = [f.numpy().tolist() for f in opt.factors[0]]
        assert shapes == [[inputs + 1] * 2, [units] * 2]


@pytest.mark.parametrize("units, inputs", [(1, 10000), (2, 10000), (10001, 1)])
def test_factors_wider_than_the_bound_refused(units, inputs, monkeypatch):
    """The message names the wider factor: A (inputs + 1) or G (units)."""
    monkeypatch.setattr(kfac, "tf", ShapesOnly())
    layer = dense(units, inputs, name="wide")
    with pytest.raises(RLBaseError, match=r"^K-FAC factor of layer 'wide' would be 10001 x "
                       r"10001 \(at most 10000\); use a convnet \(cnn\), smaller inputs or "
                       r"fewer units$"):
        kfac.KFAC([layer], [layer.kernel, layer.bias])
