"""The network registry: every built-in builds with the right latent width, errors are clear,
custom builders register, and recurrent state handling is exact."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from rlbase.common.errors import RLBaseError
from rlbase.common.networks import registry as models
from rlbase.common.networks.registry import (
    build_network,
    get_network_builder,
    network_kwarg_names,
    register,
    registered_networks,
)

BUILTINS = {"mlp", "simba", "cnn", "cnn_small", "minatar_cnn", "conv_only", "lstm", "lnlstm",
            "cnn_lstm", "cnn_lnlstm"}


def images(*lead):
    """uint8-ranged float frames [*lead, 84, 84, 4] (kept tiny: one or two frames)."""
    rng = np.random.default_rng(0)
    return tf.constant(rng.integers(0, 256, (*lead, 84, 84, 4)).astype(np.float32))


def test_builtins_are_registered():
    assert BUILTINS <= set(registered_networks())
    assert registered_networks() == sorted(registered_networks())


@pytest.mark.parametrize(
    ("name", "kwargs", "width"),
    [
        ("mlp", {}, 64),
        ("mlp", {"num_layers": 3, "num_hidden": 16, "activation": "relu"}, 16),
        ("mlp", {"num_layers": 1, "num_hidden": 8, "layer_norm": True}, 8),
        ("mlp", {"num_layers": 0}, 5),  # no layers: the flattened input itself
    ],
)
def test_mlp_width(name, kwargs, width):
    net = build_network(name, **kwargs)
    assert net.recurrent is False
    out = net(tf.random.normal([4, 5]))
    assert tuple(out.shape) == (4, width)
    if kwargs.get("num_layers") == 0:
        assert not net.trainable_variables
    else:
        assert net.trainable_variables


def test_mlp_flattens_and_applies_activation():
    net = build_network("mlp", num_layers=1, num_hidden=7, activation="relu")
    out = net(tf.random.normal([3, 2, 4])).numpy()
    assert out.shape == (3, 7)
    assert out.min() >= 0.0  # relu
    tanh_out = build_network("mlp", num_hidden=9)(tf.random.normal([3, 6]) * 100.0).numpy()
    assert np.all(np.abs(tanh_out) <= 1.0)


@pytest.mark.parametrize(
    ("name", "kwargs", "width"),
    [
        ("cnn", {}, 512),
        ("cnn", {"num_hidden": 32}, 32),
        ("cnn_small", {}, 128),
        # 84 -> (84-8)/4+1 = 20 -> (20-4)/2+1 = 9 -> 9-3+1 = 7; 7*7*64
        ("conv_only", {}, 7 * 7 * 64),
        ("conv_only", {"convs": [(4, 8, 4)]}, 20 * 20 * 4),
    ],
)
def test_conv_widths(name, kwargs, width):
    net = build_network(name, **kwargs)
    assert net.recurrent is False
    out = net(images(2))
    assert tuple(out.shape) == (2, width)
    assert np.all(out.numpy() >= 0.0)  # relu output
    assert net.trainable_variables


@pytest.mark.parametrize(
    ("name", "kwargs", "obs"),
    [
        ("lstm", {"nlstm": 8}, (5,)),
        ("lnlstm", {"nlstm": 8}, (5,)),
        ("cnn_lstm", {"nlstm": 8, "num_hidden": 16}, (84, 84, 4)),
        ("cnn_lnlstm", {"nlstm": 8, "num_hidden": 16}, (84, 84, 4)),
    ],
)
def test_recurrent_shapes(name, kwargs, obs):
    net = build_network(name, **kwargs)
    assert net.recurrent is True
    assert net.state_size == 16
    batch, steps = (2, 3) if len(obs) == 1 else (1, 2)
    x = images(batch, steps) if len(obs) == 3 else tf.random.normal([batch, steps, *obs])
    state = net.initial_state(batch)
    assert state.shape == (batch, 16) and not state.any()
    latent, new_state = net(x, tf.constant(state), tf.zeros([batch, steps]))
    assert tuple(latent.shape) == (batch, steps, 8)
    assert tuple(new_state.shape) == (batch, 16)
    # the new state is (cell, hidden), and hidden is the last output
    np.testing.assert_allclose(new_state.numpy()[:, 8:], latent.numpy()[:, -1], rtol=1e-6)
    assert net.trainable_variables


def test_unknown_network_lists_registered_names():
    with pytest.raises(RLBaseError) as info:
        get_network_builder("resnet9000")
    msg = str(info.value)
    assert "resnet9000" in msg
    for name in BUILTINS:
        assert name in msg
    with pytest.raises(RLBaseError, match="resnet9000"):
        build_network("resnet9000")


def test_unknown_kwarg_is_named():
    with pytest.raises(RLBaseError) as info:
        build_network("mlp", num_hiden=32)
    msg = str(info.value)
    assert "num_hiden" in msg
    assert "num_hidden" in msg  # what it does take
    with pytest.raises(RLBaseError, match="nlstm"):
        build_network("cnn", nlstm=4)


def test_unknown_activation():
    with pytest.raises(RLBaseError, match="no_such_act"):
        build_network("mlp", activation="no_such_act")


def test_kwarg_names():
    assert network_kwarg_names("mlp") == ["num_layers", "num_hidden", "activation", "layer_norm",
                                          "layer_sizes"]
    assert set(network_kwarg_names("cnn_lstm")) == {"nlstm", "layer_norm", "num_hidden", "pad"}


def test_mlp_layer_sizes_and_cnn_padding():
    net = build_network("mlp", layer_sizes=(5, 3))
    assert net(tf.zeros([2, 4])).shape == (2, 3)
    assert [d.units for d in net.hidden] == [5, 3]
    # The Nature convnet on 28x28 images: VALID strides leave nothing, SAME keeps them.
    small = tf.zeros([1, 28, 28, 1])
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        build_network("cnn")(small)
    assert build_network("cnn", pad="SAME")(small).shape == (1, 512)
    with pytest.raises(RLBaseError, match="pad must be 'VALID' or 'SAME'"):
        build_network("cnn", pad="FULL")


def test_activation_by_tf_name():
    # Baselines' README: --activation=tf.nn.relu
    net = build_network("mlp", num_layers=1, num_hidden=3, activation="tf.nn.relu")
    assert net.act is keras.activations.relu


@pytest.fixture
def custom_name():
    name = "test_models_custom_net"
    yield name
    models._REGISTRY.pop(name, None)


def test_register_custom_builder(custom_name):
    @register(custom_name)
    def tiny(width: int = 3) -> keras.layers.Layer:
        return keras.layers.Dense(width)

    assert custom_name in registered_networks()
    assert get_network_builder(custom_name) is tiny
    assert network_kwarg_names(custom_name) == ["width"]
    out = build_network(custom_name, width=7)(tf.zeros([2, 4]))
    assert tuple(out.shape) == (2, 7)
    with pytest.raises(RLBaseError, match="height"):
        build_network(custom_name, height=2)


def test_callable_passes_through():
    def builder(**kwargs):
        return keras.layers.Dense(kwargs.get("n", 2))

    assert get_network_builder(builder) is builder
    # a builder with **kwargs accepts anything
    assert tuple(build_network(builder, n=5, whatever=1)(tf.zeros([1, 3])).shape) == (1, 5)


# --------------------------------------------------------------------------- LSTM state


def _lstm(name):
    net = build_network(name, nlstm=6)
    net(tf.zeros([1, 1, 5]), tf.zeros([1, 12]), tf.zeros([1, 1]))  # create weights
    return net


@pytest.mark.parametrize("name", ["lstm", "lnlstm"])
def test_episode_start_resets_state(name):
    net = _lstm(name)
    rng = np.random.default_rng(1)
    batch, steps, t0 = 2, 6, 3
    x = tf.constant(rng.normal(size=(batch, steps, 5)).astype(np.float32))
    s0 = tf.constant(rng.normal(size=(batch, 12)).astype(np.float32))
    starts = np.zeros((batch, steps), np.float32)
    starts[0, t0] = 1.0  # env 0 starts a new episode at t0; env 1 never resets
    out, final = net(x, s0, tf.constant(starts))
    out, final = out.numpy(), final.numpy()

    # env 0 from t0 on == the tail run from a zero state
    tail, tail_final = net(x[:1, t0:], tf.zeros([1, 12]), tf.zeros([1, steps - t0]))
    np.testing.assert_allclose(out[0, t0:], tail.numpy()[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(final[0], tail_final.numpy()[0], rtol=1e-5, atol=1e-6)
    # ...and before t0 it still used s0 (so the reset is the only thing that cut it)
    head, _ = net(x[:1, :t0], s0[:1], tf.zeros([1, t0]))
    np.testing.assert_allclose(out[0, :t0], head.numpy()[0], rtol=1e-5, atol=1e-6)

    # env 1 was not reset: its tail differs from a zero-state run of its tail
    tail1, _ = net(x[1:, t0:], tf.zeros([1, 12]), tf.zeros([1, steps - t0]))
    assert not np.allclose(out[1, t0:], tail1.numpy()[0], atol=1e-4)


@pytest.mark.parametrize("name", ["lstm", "lnlstm"])
def test_start_flag_at_first_step_ignores_given_state(name):
    net = _lstm(name)
    rng = np.random.default_rng(2)
    x = tf.constant(rng.normal(size=(1, 4, 5)).astype(np.float32))
    s0 = tf.constant(rng.normal(size=(1, 12)).astype(np.float32))
    flags = tf.constant([[1.0, 0.0, 0.0, 0.0]])
    with_reset, _ = net(x, s0, flags)
    from_zero, _ = net(x, tf.zeros([1, 12]), tf.zeros([1, 4]))
    np.testing.assert_allclose(with_reset.numpy(), from_zero.numpy(), rtol=1e-5, atol=1e-6)
    no_reset, _ = net(x, s0, tf.zeros([1, 4]))
    assert not np.allclose(no_reset.numpy(), from_zero.numpy(), atol=1e-4)


@pytest.mark.parametrize("name", ["lstm", "lnlstm"])
def test_state_carries_over_between_calls(name):
    net = _lstm(name)
    rng = np.random.default_rng(3)
    batch, steps, half = 3, 8, 5
    x = tf.constant(rng.normal(size=(batch, steps, 5)).astype(np.float32))
    s0 = tf.constant(rng.normal(size=(batch, 12)).astype(np.float32))
    whole, final = net(x, s0, tf.zeros([batch, steps]))
    first, mid = net(x[:, :half], s0, tf.zeros([batch, half]))
    second, final2 = net(x[:, half:], mid, tf.zeros([batch, steps - half]))
    np.testing.assert_allclose(whole.numpy(), np.concatenate([first, second], axis=1),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(final.numpy(), final2.numpy(), rtol=1e-5, atol=1e-6)
