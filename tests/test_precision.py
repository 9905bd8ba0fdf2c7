"""precision='mixed_bfloat16': bfloat16 matmuls inside the registry networks, float32
everywhere else (variables, heads, losses, log-probabilities, saved arrays); one-line errors
for a bad value and for the algorithms that refuse it."""

from __future__ import annotations

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf
from process_util import cli_in_process

from rlbase import registry
from rlbase.common.errors import RLBaseError
from rlbase.common.io.serialization import load_file
from rlbase.common.networks.registry import build_network
from rlbase.common.precision import current_precision, precision_scope


def test_mlp_computes_in_bfloat16_on_float32_variables_and_returns_float32():
    x = tf.constant([[0.5, -1.0, 2.0]], tf.float32)
    with precision_scope("mixed_bfloat16"):
        assert current_precision() == "mixed_bfloat16"
        net = build_network("mlp", num_layers=2, num_hidden=4)
    assert current_precision() == "float32"
    assert keras.config.dtype_policy().name == "float32"  # restored after the build
    out = net(x)
    assert out.dtype == tf.float32 and out.shape == (1, 4)
    assert net.weights and all(v.dtype == "float32" for v in net.weights)
    assert net.hidden[0](x).dtype == tf.bfloat16  # the matmul inside
    assert net.hidden[0].dtype_policy.name == "mixed_bfloat16"
    # the same weights in float32: equal to bfloat16's precision (8 bits of mantissa)
    ref = np.asarray(x)
    for dense in net.hidden:
        kernel, bias = (np.asarray(v) for v in dense.weights)
        ref = np.tanh(ref @ kernel + bias)
    np.testing.assert_allclose(out.numpy(), ref, atol=3e-2)
    assert not np.array_equal(out.numpy(), ref.astype(np.float32))  # it did round


def test_float32_build_is_unchanged_and_conv_and_lstm_paths():
    with precision_scope("float32"):
        net = build_network("mlp", num_hidden=4)
    x = tf.ones((2, 3))
    assert net.hidden[0](x).dtype == tf.float32
    with precision_scope("mixed_bfloat16"):
        cnn = build_network("cnn_small", num_hidden=8)
        lstm = build_network("cnn_lstm", nlstm=4, num_hidden=8)
    images = tf.zeros((2, 36, 36, 1))
    assert cnn(images).dtype == tf.float32
    assert cnn.convs[0](images).dtype == tf.bfloat16
    assert all(v.dtype == "float32" for v in cnn.weights + lstm.weights)
    latent, state = lstm(tf.zeros((1, 2, 36, 36, 1)), tf.zeros((1, 8)), tf.zeros((1, 2)))
    assert latent.dtype == tf.float32 and state.dtype == tf.float32  # recurrence in float32
    assert lstm.torso.convs[0].dtype_policy.name == "mixed_bfloat16"


def test_policy_restored_when_the_build_fails():
    with precision_scope("mixed_bfloat16"), pytest.raises(RLBaseError, match="num_hidden"):
        build_network("mlp", num_hidden=0)
    assert keras.config.dtype_policy().name == "float32"


def test_ppo_policy_outputs_and_losses_are_float32():
    env_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    with pytest.warns(UserWarning, match="ppo: precision='mixed_bfloat16'"):
        model = registry.build_model("ppo", env_space, gym.spaces.Discrete(2), 1, "mlp", {},
                                     {"precision": "mixed_bfloat16"})
    policy = model.policy
    assert policy.torso.hidden[0].dtype_policy.name == "mixed_bfloat16"
    assert policy.value_head.dtype_policy.name == "float32"
    obs = tf.constant(np.zeros((2, 3), np.float32))
    actions, values, _, neglogp = policy.step(obs, tf.zeros((2, 0)), tf.ones([2]))
    assert values.dtype == tf.float32 and neglogp.dtype == tf.float32
    for v in model.trainable_variables():
        assert v.dtype == tf.float32, v.name


def test_sac_trains_mixed_saves_float32_and_loads_either_way(tmp_path):
    learn = registry.get_algorithm("sac").learn
    model = learn("mlp", "Pendulum-v1", total_timesteps=120, seed=1, learning_starts=100,
                  batch_size=16, num_hidden=16, precision="mixed_bfloat16")
    assert model.actor.torso.hidden[0].dtype_policy.name == "mixed_bfloat16"
    assert model.config.precision == "mixed_bfloat16"
    groups = model.variable_groups()
    assert all(v.dtype in (tf.float32, tf.int64) for vs in groups.values() for v in vs)
    path = str(tmp_path / "sac.zip")
    model.save(path)
    metadata, arrays, _ = load_file(path)
    assert metadata["hyperparameters"]["precision"] == "mixed_bfloat16"
    floats = {k: a for k, a in arrays.items() if a.dtype.kind == "f"}
    assert floats and all(a.dtype == np.float32 for a in floats.values())
    as_float32 = registry.load(path, overrides={"precision": "float32"})
    assert as_float32.actor.torso.hidden[0].dtype_policy.name == "float32"
    as_mixed = registry.load(path)
    assert as_mixed.config.precision == "mixed_bfloat16"
    for loaded in (as_float32, as_mixed):
        mine, theirs = model.parameter_arrays(), loaded.parameter_arrays()
        assert mine.keys() == theirs.keys()
        for key in mine:
            np.testing.assert_array_equal(mine[key], theirs[key], err_msg=key)
    continued = learn("mlp", "Pendulum-v1", total_timesteps=0, load_path=path, seed=1,
                      precision="float32")
    assert continued.actor.torso.hidden[0].dtype_policy.name == "float32"
    np.testing.assert_array_equal(continued.actor.weights[0].numpy(),
                                  model.actor.weights[0].numpy())
    obs = np.array([[0.3, -0.2, 0.5]], np.float32)
    np.testing.assert_allclose(as_float32.act(obs, deterministic=True),
                               model.act(obs, deterministic=True), atol=5e-2)


def test_bad_precision_and_refusals_are_one_line():
    config = registry.get_algorithm("ppo").config
    with pytest.raises(RLBaseError, match=r"^ppo: precision must be one of 'float32', "
                                          r"'mixed_bfloat16', got 'float16'$"):
        config.build({"precision": "float16"})
    for alg, reason in (("acktr", "K-FAC"), ("es", "numpy"), ("qlearning", "no network")):
        with pytest.raises(RLBaseError, match=rf"^{alg}: precision='mixed_bfloat16' is not "
                                              rf"supported \(.*{reason}.*\); use "
                                              r"precision='float32'$"):
            registry.get_algorithm(alg).config.build({"precision": "mixed_bfloat16"})
        assert registry.get_algorithm(alg).config.build({}).precision == "float32"


def test_ppo_and_a2c_warn_that_mixed_precision_hurt_them_and_others_do_not_warn():
    import warnings

    with pytest.warns(UserWarning, match=r"^ppo: precision='mixed_bfloat16' ended below every "
                                         r"float32 run .*Hopper-v5.*precision='float32' is the "
                                         r"safe"):
        registry.get_algorithm("ppo").config.build({"precision": "mixed_bfloat16"})
    with pytest.warns(UserWarning, match=r"^a2c: precision='mixed_bfloat16' ended below every "
                                         r"float32 run.*BreakoutNoFrameskip-v4.*precision="
                                         r"'float32' is the safe"):
        registry.get_algorithm("a2c").config.build({"precision": "mixed_bfloat16"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        for alg in ("sac", "ddpg"):
            registry.get_algorithm(alg).config.build({"precision": "mixed_bfloat16"})
        for alg in ("ppo", "a2c"):
            registry.get_algorithm(alg).config.build({})


def test_ppo_precision_warning_points_at_the_users_line():
    import rlbase
    from rlbase.ppo.ppo import learn

    config = registry.get_algorithm("ppo").config
    for make in (lambda: config.build({"precision": "mixed_bfloat16"}),
                 lambda: rlbase.PPO("MlpPolicy", "CartPole-v1", n_steps=8, batch_size=8,
                                    precision="mixed_bfloat16"),
                 lambda: learn("mlp", "CartPole-v1", 16, 0, nsteps=8, nminibatches=1,
                               precision="mixed_bfloat16")):
        with pytest.warns(UserWarning, match="^ppo: precision=") as record:
            make()
        assert [w.filename for w in record if w.category is UserWarning] == [__file__]


def test_cli_flag_plumbs_through_and_bad_value_exits_2(tmp_path, capsys):
    from rlbase.run import main

    code, _, err = cli_in_process(capsys, "--alg=a2c", "--env=CartPole-v1",
                                  "--num_timesteps=10", "--precision=float16")
    assert code == 2
    assert "precision must be one of 'float32', 'mixed_bfloat16', got 'float16'" in err
    assert "Traceback" not in err
    path = str(tmp_path / "a2c.zip")
    with pytest.warns(UserWarning, match="^a2c: precision='mixed_bfloat16'"):
        main(["--alg=a2c", "--env=CartPole-v1", "--num_timesteps=10", "--num_env=1",
              "--precision=mixed_bfloat16", f"--save_path={path}", "--no_progress"])
    assert load_file(path)[0]["hyperparameters"]["precision"] == "mixed_bfloat16"


def test_model_class_takes_precision():
    import rlbase

    with pytest.warns(UserWarning, match="ppo: precision='mixed_bfloat16'"):
        model = rlbase.PPO("MlpPolicy", "CartPole-v1", precision="mixed_bfloat16", n_steps=8)
    assert model.model.policy.torso.hidden[0].dtype_policy.name == "mixed_bfloat16"
    assert model.model.policy.pd_head.dtype_policy.name == "float32"


def test_bench_suite_precision_switch():
    from rlbase.bench.suite import available, select, suite_command, with_precision

    specs = {(s.name, s.env): with_precision(s, "mixed_bfloat16")
             for s in select("classic", ["td3", "es"], ["Pendulum-v1"])}
    td3 = specs[("td3", "Pendulum-v1")]
    assert td3.extra == {"twin_q": True, "policy_delay": 2, "target_noise": 0.2,
                         "precision": "mixed_bfloat16"}
    assert available(td3) is None
    assert available(specs[("es", "Pendulum-v1")]).startswith(
        "es refuses precision='mixed_bfloat16' (ES evaluates")
    assert with_precision(td3, "float32") is td3
    assert suite_command("classic", ["td3"], None, None, "mixed_bfloat16") == \
        "python -m rlbase.bench suite --preset=classic --algs=td3 --precision=mixed_bfloat16"


def test_precision_microbenchmark_counts_flops_and_runs():
    from rlbase.bench.precision import flops, measure

    assert flops((256, 400), (400, 300), 0) == 2 * 256 * 400 * 300
    # conv1 of the Nature CNN: 84 -> 20 positions per side
    assert flops((32, 84, 84, 4), (8, 8, 4, 32), 4) == 2 * 32 * 20 * 20 * 8 * 8 * 4 * 32
    rows = measure(repeats=1)
    assert [r["shape"].split()[0] for r in rows] == ["td3", "sac", "nature", "nature", "nature"]
    assert all(r["float32_gflops"] > 0 and r["bfloat16_gflops"] > 0 for r in rows)
