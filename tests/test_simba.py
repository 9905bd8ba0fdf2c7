"""network='simba' (Lee et al., ICLR 2025): the forward pass against numpy, every weight
trains inside SAC's actor and critics, the CLI with another network than its row's, and the
convnets' layer norm (PQN's)."""

import numpy as np
import pytest
import tensorflow as tf

from rlbase.common.errors import RLBaseError
from rlbase.common.networks.registry import SimBa, build_network


def layer_norm(x, gamma, beta, eps=1e-3):  # Keras' LayerNormalization (epsilon 1e-3)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def test_forward_pass_is_embedding_residual_blocks_then_layer_norm():
    net = build_network("simba", num_blocks=2, num_hidden=3, expansion=2)
    x = np.array([[0.5, -1.0, 2.0, 0.0], [1.0, 1.0, -0.5, 0.25]], np.float32)
    net(tf.constant(x))
    rng = np.random.default_rng(0)
    for v in net.weights:  # non-trivial norm scales and offsets too
        v.assign(rng.normal(size=v.shape).astype(np.float32))
    embed_w, embed_b = net.embed.kernel.numpy(), net.embed.bias.numpy()
    h = x @ embed_w + embed_b
    for norm, widen, narrow in net.blocks:
        z = layer_norm(h, norm.gamma.numpy(), norm.beta.numpy())
        z = np.maximum(z @ widen.kernel.numpy() + widen.bias.numpy(), 0.0)
        h = h + z @ narrow.kernel.numpy() + narrow.bias.numpy()
    expected = layer_norm(h, net.norm.gamma.numpy(), net.norm.beta.numpy())
    np.testing.assert_allclose(net(tf.constant(x)).numpy(), expected, rtol=1e-4, atol=1e-5)
    assert [w.kernel.shape[1] for _, w, _ in net.blocks] == [6, 6]  # widened 2x in each


def test_images_are_flattened_and_bad_sizes_refused():
    net = build_network("simba", num_blocks=1, num_hidden=4)
    assert net(tf.zeros([2, 3, 3, 2])).shape == (2, 4)
    with pytest.raises(RLBaseError, match="num_blocks"):
        SimBa(0, 4, 4)
    with pytest.raises(RLBaseError, match="does not take num_layers"):
        build_network("simba", num_layers=2)


def test_sac_with_simba_trains_every_weight():
    from rlbase.sac.sac import learn

    model = learn("simba", "Pendulum-v1", total_timesteps=20, seed=0, learning_starts=20,
                  batch_size=8, num_blocks=1, num_hidden=8, log_interval=10**9)
    assert any(isinstance(layer, SimBa) for layer in model.actor._flatten_layers())
    assert any(isinstance(layer, SimBa) for layer in model.critics[0]._flatten_layers())
    variables = model.trainable_variables()  # actor, critics, their targets, log alpha
    before = [v.numpy().copy() for v in variables]
    model.train_and_act(model.replay_buffer.obs[:1], 1e-3)
    unchanged = [v.path for v, b in zip(variables, before) if np.array_equal(v.numpy(), b)]
    assert unchanged == []


def test_cli_drops_the_rows_mlp_arguments_under_another_network(tmp_path):
    """The mujoco row of sac.yml sets num_layers/activation for its mlp: with --network=simba
    they would reach SimBa's builder, which takes neither."""
    from rlbase import registry
    from rlbase.run import main

    path = str(tmp_path / "m.zip")
    main(["--alg=sac", "--env=Pendulum-v1", "--env_type=mujoco", "--network=simba",
          "--num_timesteps=40", "--learning_starts=20", "--batch_size=8", "--num_hidden=8",
          "--num_blocks=1", f"--save_path={path}"])
    model = registry.load(path)
    assert model.network == "simba" and model.network_kwargs == {"num_blocks": 1,
                                                                 "num_hidden": 8}
    assert model.config.learning_starts == 20 and model.config.batch_size == 8


def test_convnet_layer_norm_normalizes_each_frames_feature_map():
    net = build_network("cnn_small", num_hidden=8, layer_norm=True)
    x = tf.random.stateless_uniform([2, 84, 84, 4], [1, 2]) * 255.0
    net(x)
    conv, norm = net.convs[0], net.conv_norms[0]
    normalized = norm(conv(x)).numpy()  # gamma 1, beta 0 at the start
    np.testing.assert_allclose(normalized.reshape(2, -1).mean(axis=1), 0.0, atol=1e-4)
    np.testing.assert_allclose(normalized.reshape(2, -1).std(axis=1), 1.0, atol=1e-2)
    plain = build_network("cnn_small", num_hidden=8)
    plain(x)
    assert not plain.conv_norms and not plain.dense_norms
    assert len(plain.trainable_weights) == len(net.trainable_weights) - 6
