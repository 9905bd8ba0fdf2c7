"""The numpy act path matches the TF policy it mirrors."""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from rlbase.common.networks.compiled_policy import CompiledPolicy
from rlbase.common.networks.numpy_actor import NumpyActor
from rlbase.common.networks.policies import build_policy

BOX_OBS = gym.spaces.Box(-2.0, 2.0, (5,), np.float32)
SPACES = {
    "discrete": (BOX_OBS, gym.spaces.Discrete(4)),
    "discrete_start": (BOX_OBS, gym.spaces.Discrete(3, start=-1)),
    "box": (BOX_OBS, gym.spaces.Box(-1.0, 1.0, (2,), np.float32)),
    "multidiscrete": (BOX_OBS, gym.spaces.MultiDiscrete([3, 2, 4])),
    "multibinary": (BOX_OBS, gym.spaces.MultiBinary(3)),
    "discrete_obs": (gym.spaces.Discrete(6), gym.spaces.Discrete(2)),
    "multidiscrete_obs": (gym.spaces.MultiDiscrete([2, 3]), gym.spaces.Discrete(2)),
    # 2-D nvec: each entry one-hot in its own size, in numpy as in TF (27 features).
    "multidiscrete_2d_obs": (gym.spaces.MultiDiscrete([[2, 3, 4], [5, 6, 7]]),
                             gym.spaces.Discrete(2)),
    "multibinary_obs": (gym.spaces.MultiBinary(4), gym.spaces.Discrete(2)),
}


def sample_obs(space, n, seed=0):
    space.seed(seed)
    return np.stack([space.sample() for _ in range(n)])


def randomize(policy, seed=0):
    """Weights away from their initial values so that every term matters."""
    rng = np.random.default_rng(seed)
    for v in policy.trainable_variables:
        v.assign(rng.normal(0, 0.5, v.shape).astype(np.float32))


@pytest.mark.parametrize("name", sorted(SPACES))
@pytest.mark.parametrize("kwargs", [{}, {"num_layers": 3, "num_hidden": 16, "activation": "relu",
                                         "layer_norm": True}], ids=["default", "relu_ln"])
def test_parameters_and_modes_match_tf(name, kwargs):
    ob_space, ac_space = SPACES[name]
    policy = build_policy(ob_space, ac_space, "mlp", **kwargs)
    randomize(policy)
    actor = NumpyActor.create(policy, seed=0)
    assert actor is not None
    obs = sample_obs(ob_space, 32)
    params, _, _, _ = policy.forward(tf.constant(obs), tf.zeros([32, 0]), tf.zeros([32]))
    expected = params.numpy()[:, :actor.params(obs).shape[1]]
    np.testing.assert_allclose(actor.params(obs), expected, rtol=1e-4, atol=1e-4)
    calls = CompiledPolicy(policy)
    tf_modes = calls.step(obs, deterministic=True)[0]
    np_modes = actor.act(obs, deterministic=True)
    assert np_modes.dtype == tf_modes.dtype
    if isinstance(ac_space, gym.spaces.Box):
        np.testing.assert_allclose(np_modes, tf_modes, rtol=1e-4, atol=1e-4)
    else:
        np.testing.assert_array_equal(np_modes, tf_modes)
    samples = actor.act(obs)
    if isinstance(ac_space, gym.spaces.Box):  # Gaussian draws are clipped by the runner
        assert samples.shape == (32, *ac_space.shape) and samples.dtype == ac_space.dtype
    else:
        for action in samples:
            assert ac_space.contains(action)


def test_sampling_follows_the_distribution():
    ob_space, ac_space = SPACES["discrete"]
    policy = build_policy(ob_space, ac_space, "mlp")
    randomize(policy)
    actor = NumpyActor.create(policy, seed=1)
    obs = np.repeat(sample_obs(ob_space, 1), 20000, axis=0)
    logits = actor.params(obs[:1])[0]
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    freq = np.bincount(actor.act(obs), minlength=4) / len(obs)
    np.testing.assert_allclose(freq, probs, atol=0.015)


def test_gaussian_sampling_uses_logstd():
    ob_space, ac_space = SPACES["box"]
    policy = build_policy(ob_space, ac_space, "mlp")
    policy.pd_head.logstd.assign([np.log(0.3), np.log(2.0)])
    actor = NumpyActor.create(policy, seed=2)
    obs = np.repeat(sample_obs(ob_space, 1), 20000, axis=0)
    draws = actor.act(obs)
    mean = actor.params(obs[:1])[0]
    np.testing.assert_allclose(draws.mean(axis=0), mean, atol=0.05)
    np.testing.assert_allclose(draws.std(axis=0), [0.3, 2.0], rtol=0.03)


def test_sync_follows_weight_changes_and_unsupported_networks_fall_back():
    ob_space, ac_space = SPACES["discrete"]
    policy = build_policy(ob_space, ac_space, "mlp")
    actor = NumpyActor.create(policy, seed=0)
    obs = sample_obs(ob_space, 8)
    before = actor.params(obs)
    randomize(policy, seed=5)
    np.testing.assert_array_equal(actor.params(obs), before)  # a copy, until synced
    actor.sync()
    assert not np.allclose(actor.params(obs), before)
    lstm = build_policy(ob_space, ac_space, "lstm", nlstm=8)
    assert NumpyActor.create(lstm, seed=0) is None
