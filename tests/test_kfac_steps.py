"""K-FAC's bookkeeping with exact values on one Dense layer (rlbase/acktr/kfac.py): the cold
momentum-SGD steps, their gradient clipping, the factors' running averages (equal weights over
the cold updates, then stats_decay), when the factors are decomposed again, and the trust
region's scale. tests/test_acktr_fisher.py checks the factors and the first K-FAC step
through the ACKTR model; these pin the rules around them (found by mutation testing)."""

from __future__ import annotations

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from rlbase.acktr.kfac import KFAC, clip_scale, recording

RNG = np.random.default_rng(0)
BATCHES = [RNG.normal(size=(5, 3)).astype(np.float32) for _ in range(4)]


def make(**options):
    keras.utils.set_random_seed(1)
    layer = keras.layers.Dense(2)
    layer.build((None, 3))
    return layer, KFAC([layer], [layer.kernel, layer.bias], **options)


def update(layer, opt, x, lr=0.1):
    """One minimize() on the loss 0.5 sum(y^2) of batch x; returns (grads, scale)."""
    with tf.GradientTape(persistent=True) as tape:
        with recording([layer], tape) as recorder:
            loss = 0.5 * tf.reduce_sum(tf.square(layer(tf.constant(x))))
    grads = tape.gradient(loss, [layer.kernel, layer.bias])
    probe = {id(layer): tape.gradient(loss, recorder.probes[id(layer)])}
    scale = opt.minimize(grads, recorder, probe, tf.constant(lr))
    return [g.numpy() for g in grads], float(scale)


def weights(layer):
    return [layer.kernel.numpy().copy(), layer.bias.numpy().copy()]


def input_factor(x):
    h = np.concatenate([x, np.ones((len(x), 1))], 1).astype(np.float64)
    return h.T @ h / len(x)


def test_cold_steps_are_momentum_sgd_on_the_raw_gradients():
    layer, opt = make(cold_iter=2, momentum=0.9, max_grad_norm=None)
    w0 = weights(layer)
    g1, s1 = update(layer, opt, BATCHES[0])
    w1 = weights(layer)
    g2, s2 = update(layer, opt, BATCHES[1])
    w2 = weights(layer)
    assert s1 == s2 == 1.0
    for i in range(2):  # v1 = g1, w1 = w0 - lr v1; v2 = 0.9 v1 + g2, w2 = w1 - lr v2
        np.testing.assert_allclose(w1[i], w0[i] - 0.1 * g1[i], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(w2[i], w1[i] - 0.1 * (0.9 * g1[i] + g2[i]), rtol=1e-5,
                                   atol=1e-7)


def test_cold_steps_clip_the_gradients_global_norm():
    layer, opt = make(cold_iter=1, momentum=0.9, max_grad_norm=1e-3)
    w0 = weights(layer)
    g, _ = update(layer, opt, BATCHES[0])
    norm = math.sqrt(sum(float(np.sum(x.astype(np.float64) ** 2)) for x in g))
    assert norm > 1e-3
    for before, after, grad in zip(w0, weights(layer), g):
        np.testing.assert_allclose(after, before - 0.1 * grad * 1e-3 / norm, rtol=1e-4,
                                   atol=1e-9)


def test_factor_averages_weigh_the_cold_batches_equally_then_decay():
    # stats_decay 0.5: unlike the equal weights' 2/3 and 3/4 of the 3rd and 4th updates
    layer, opt = make(cold_iter=2, stats_decay=0.5, max_grad_norm=None)
    a_var = opt.factors[0][0]
    a = [input_factor(x) for x in BATCHES]
    update(layer, opt, BATCHES[0])
    np.testing.assert_allclose(a_var.numpy(), a[0], rtol=1e-5, atol=1e-6)  # replaces the zeros
    update(layer, opt, BATCHES[1])
    np.testing.assert_allclose(a_var.numpy(), (a[0] + a[1]) / 2, rtol=1e-5, atol=1e-6)
    update(layer, opt, BATCHES[2])  # the first K-FAC update: stats_decay from here
    third = 0.5 * (a[0] + a[1]) / 2 + 0.5 * a[2]
    np.testing.assert_allclose(a_var.numpy(), third, rtol=1e-5, atol=1e-6)
    update(layer, opt, BATCHES[3])  # and on
    np.testing.assert_allclose(a_var.numpy(), 0.5 * third + 0.5 * a[3], rtol=1e-5, atol=1e-6)


def test_factors_are_decomposed_every_inverse_interval_kfac_steps():
    layer, opt = make(cold_iter=1, inverse_interval=2, max_grad_norm=None)
    a_var, da = opt.factors[0][0], opt.eigen[0][1]
    update(layer, opt, BATCHES[0])          # cold: no decomposition yet
    np.testing.assert_array_equal(da.numpy(), np.ones(4))
    decomposed = []
    for x in BATCHES[1:4]:                  # K-FAC steps 0, 1, 2
        update(layer, opt, x)
        decomposed.append(np.linalg.eigvalsh(a_var.numpy().astype(np.float64)))
        if len(decomposed) == 2:            # step 1 keeps step 0's decomposition
            np.testing.assert_allclose(np.sort(da.numpy()), np.maximum(decomposed[0], 0),
                                       rtol=1e-4, atol=1e-6)
            assert not np.allclose(decomposed[0], decomposed[1], rtol=1e-3)
        else:
            np.testing.assert_allclose(np.sort(da.numpy()), np.maximum(decomposed[-1], 0),
                                       rtol=1e-4, atol=1e-6)
    assert int(opt.updates.numpy()) == 4


def test_kfac_steps_report_the_trust_region_scale():
    layer, opt = make(cold_iter=0, kfac_clip=1e-9, max_grad_norm=None)
    _, scale = update(layer, opt, BATCHES[0])
    assert 0.0 < scale < 1.0                # a tiny trust region scales the step down
    layer, opt = make(cold_iter=0, kfac_clip=1e9, max_grad_norm=None)
    _, scale = update(layer, opt, BATCHES[0])
    assert scale == 1.0


def test_clip_scale_by_hand():
    """min(1, sqrt(clip / (lr^2 sum(u * g)))): sum(u * g) = 1*3 + 2*4 + 0.5*2 = 12, lr 0.5:
    vfv = 3; clip 0.03 -> sqrt(0.01) = 0.1; clip 300 -> 1."""
    u, g = [tf.constant([1.0, 2.0]), tf.constant([0.5])], [tf.constant([3.0, 4.0]),
                                                           tf.constant([2.0])]
    assert float(clip_scale(u, g, tf.constant(0.5), 0.03)) == pytest.approx(0.1, rel=1e-6)
    assert float(clip_scale(u, g, tf.constant(0.5), 300.0)) == 1.0
    # a zero Fisher norm does not divide by zero: the step is left whole
    zero = [tf.zeros([2]), tf.zeros([1])]
    assert float(clip_scale(zero, g, tf.constant(0.5), 0.03)) == 1.0
    # nor does one that rounding left just below zero (u * g of a positive definite Fisher)
    below = [tf.constant([-1e-12, 0.0]), tf.zeros([1])]
    assert float(clip_scale(below, g, tf.constant(0.5), 0.03)) == 1.0


def test_recording_applies_the_activation_and_restores_the_layer():
    """The recorded call is the layer's own (activation included; the probe adds zero), and
    leaving the block gives the layer its own call back: a later call records nothing."""
    keras.utils.set_random_seed(2)
    layer = keras.layers.Dense(2, activation="tanh")
    layer.build((None, 3))
    x = BATCHES[0]
    want = np.tanh(x @ layer.kernel.numpy() + layer.bias.numpy())
    with tf.GradientTape() as tape:
        with recording([layer], tape) as recorder:
            got = layer(tf.constant(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert "call" not in vars(layer)
    layer(tf.constant(BATCHES[1]))
    np.testing.assert_array_equal(recorder.inputs[id(layer)].numpy(), x)


def test_hyperparameters_are_keyword_only_with_these_defaults():
    layer = keras.layers.Dense(2)
    layer.build((None, 3))
    with pytest.raises(TypeError):  # KFAC(layers, variables, 0.9, ...) would mix them up
        KFAC([layer], [layer.kernel, layer.bias], 0.9)
    opt = KFAC(layers=[layer], variables=[layer.kernel, layer.bias])
    assert (opt.momentum, opt.kfac_clip, opt.damping, opt.stats_decay, opt.cold_iter,
            opt.inverse_interval, opt.max_grad_norm) == (0.9, 0.001, 0.01, 0.95, 10, 1, 0.5)


def test_decomposition_clips_negative_eigenvalues_at_zero():
    """A factor is an average of outer products, but rounding can leave an eigenvalue just
    below zero: it is clipped at 0, here one of -0.5 set by hand (eigenvalues 2 and -0.5)."""
    _, opt = make()
    rotation = np.array([[0.6, -0.8], [0.8, 0.6]])
    a = np.eye(4)
    a[:2, :2] = rotation @ np.diag([2.0, -0.5]) @ rotation.T
    opt.factors[0][0].assign(a.astype(np.float32))
    opt.factors[0][1].assign(np.diag([-0.25, 3.0]).astype(np.float32))
    opt.update_inverse()
    qa, da, qg, dg = (v.numpy() for v in opt.eigen[0])
    np.testing.assert_allclose(np.sort(da), [0.0, 1.0, 1.0, 2.0], atol=1e-6)
    np.testing.assert_allclose(np.sort(dg), [0.0, 3.0], atol=1e-6)
    # the eigenvectors are the factor's own: Qa^T A Qa is diagonal (before the clipping)
    np.testing.assert_allclose(np.abs(qa.T @ a @ qa - np.diag(np.diag(qa.T @ a @ qa))).max(),
                               0.0, atol=1e-6)
    np.testing.assert_allclose(np.abs(qg[:, np.argmax(dg)]), [0.0, 1.0], atol=1e-6)
