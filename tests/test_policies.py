"""build_policy over action and observation spaces: valid actions, consistent neglogp, exact
observation encoding, separate value torso, Q head, and clear errors."""

import math

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from rlbase.common.errors import RLBaseError
from rlbase.common.networks.policies import build_policy, encode_observation

VEC_OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
BATCH = 5


def identity_net():
    """A weightless torso: the latent is the encoded observation, flattened."""
    return keras.layers.Flatten()


def sample_obs(space, n, seed=0):
    space.seed(seed)
    return np.stack([space.sample() for _ in range(n)])


def run_step(policy, obs, deterministic=False):
    n = obs.shape[0]
    actions, values, state, nlp = policy.step(
        tf.constant(obs), tf.constant(policy.initial_state(n)), tf.zeros([n]), deterministic)
    return actions.numpy(), values.numpy(), state.numpy(), nlp.numpy()


def log_softmax(row):
    m = max(row)
    lse = m + math.log(sum(math.exp(v - m) for v in row))
    return [v - lse for v in row]


def closed_form_neglogp(space, params, action):
    """-log pi(action) for one row, computed from the flat head parameters."""
    if isinstance(space, gym.spaces.Discrete):
        return -log_softmax(list(params))[int(action) - int(space.start)]
    if isinstance(space, gym.spaces.MultiDiscrete):
        total, offset = 0.0, 0
        for n, a in zip(space.nvec, action):
            total -= log_softmax(list(params[offset:offset + n]))[int(a)]
            offset += n
        return total
    if isinstance(space, gym.spaces.MultiBinary):
        total = 0.0
        for logit, a in zip(params, action):
            p = 1.0 / (1.0 + math.exp(-logit))
            total -= math.log(p) if a else math.log(1.0 - p)
        return total
    size = space.shape[0]
    mean, logstd = params[:size], params[size:]
    return sum(0.5 * ((a - m) / math.exp(ls)) ** 2 + ls + 0.5 * math.log(2 * math.pi)
               for a, m, ls in zip(action, mean, logstd))


ACTION_SPACES = {
    "discrete": gym.spaces.Discrete(3),
    "discrete_start": gym.spaces.Discrete(4, start=2),
    "box": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
    "multidiscrete": gym.spaces.MultiDiscrete([3, 2]),
    "multibinary": gym.spaces.MultiBinary(4),
}


@pytest.fixture(autouse=True)
def _seed():
    tf.random.set_seed(7)


@pytest.mark.parametrize("key", list(ACTION_SPACES))
def test_step_over_action_spaces(key):
    ac_space = ACTION_SPACES[key]
    policy = build_policy(VEC_OBS, ac_space, "mlp", num_hidden=16)
    obs = sample_obs(VEC_OBS, BATCH)
    params = policy.forward(tf.constant(obs), tf.constant(policy.initial_state(BATCH)),
                            tf.zeros([BATCH]))[0].numpy()
    for deterministic in (False, True):
        actions, values, _, nlp = run_step(policy, obs, deterministic)
        assert actions.shape == (BATCH, *ac_space.shape)
        assert values.shape == (BATCH,)
        assert nlp.shape == (BATCH,)
        for i in range(BATCH):
            assert ac_space.contains(actions[i]), (actions[i], ac_space)
            expected = closed_form_neglogp(ac_space, params[i].astype(np.float64), actions[i])
            assert nlp[i] == pytest.approx(expected, rel=1e-4, abs=1e-5)
    assert policy.trainable_variables
    assert not policy.recurrent and policy.state_size == 0


def test_deterministic_discrete_is_argmax():
    space = gym.spaces.Discrete(4, start=2)
    policy = build_policy(VEC_OBS, space, "mlp", num_hidden=8)
    obs = sample_obs(VEC_OBS, BATCH)
    params = policy.forward(tf.constant(obs), tf.zeros([BATCH, 0]), tf.zeros([BATCH]))[0]
    actions = run_step(policy, obs, deterministic=True)[0]
    np.testing.assert_array_equal(actions, np.argmax(params.numpy(), axis=1) + 2)


@pytest.mark.parametrize(
    ("ob_space", "network", "kwargs"),
    [
        (gym.spaces.Box(-1.0, 1.0, (3, 2), np.float32), "mlp", {"num_hidden": 8}),
        (gym.spaces.Discrete(5), "mlp", {"num_hidden": 8}),
        (gym.spaces.Discrete(5, start=-2), "mlp", {"num_hidden": 8}),
        (gym.spaces.MultiDiscrete([3, 4]), "mlp", {"num_hidden": 8}),
        (gym.spaces.MultiBinary(6), "mlp", {"num_hidden": 8}),
        (gym.spaces.Box(0, 255, (84, 84, 4), np.uint8), "cnn_small", {"num_hidden": 16}),
    ],
    ids=["box2d", "discrete", "discrete_start", "multidiscrete", "multibinary", "image"],
)
def test_observation_spaces(ob_space, network, kwargs):
    ac_space = gym.spaces.Discrete(3)
    policy = build_policy(ob_space, ac_space, network, **kwargs)
    obs = sample_obs(ob_space, 2)
    actions, values, _, nlp = run_step(policy, obs)
    assert all(ac_space.contains(a) for a in actions)
    assert values.shape == (2,) and np.all(np.isfinite(values))
    assert np.all(np.isfinite(nlp))
    assert policy.trainable_variables


def _head_of_identity(policy, encoded):
    """What the policy head outputs on a given encoded observation, computed in numpy."""
    kernel, bias = (v.numpy() for v in policy.pd_head.dense.weights)
    return encoded.reshape(len(encoded), -1) @ kernel + bias


@pytest.mark.parametrize(
    ("ob_space", "obs", "encoded"),
    [
        (gym.spaces.Discrete(4, start=2), [2, 5, 3],
         [[1, 0, 0, 0], [0, 0, 0, 1], [0, 1, 0, 0]]),
        (gym.spaces.MultiDiscrete([3, 2]), [[2, 1], [0, 0]],
         [[0, 0, 1, 0, 1], [1, 0, 0, 1, 0]]),
        (gym.spaces.MultiDiscrete([3, 2], start=[1, 5]), [[3, 6], [1, 5]],
         [[0, 0, 1, 0, 1], [1, 0, 0, 1, 0]]),
        (gym.spaces.MultiBinary(3), [[1, 0, 1], [0, 0, 0]], [[1, 0, 1], [0, 0, 0]]),
        (gym.spaces.Box(0, 255, (2, 2, 1), np.uint8), [[[[255], [0]], [[51], [102]]]],
         [[1.0, 0.0, 0.2, 0.4]]),
        (gym.spaces.Box(-5.0, 5.0, (2,), np.float32), [[1.5, -2.0]], [[1.5, -2.0]]),
    ],
    ids=["discrete_start", "multidiscrete", "multidiscrete_start", "multibinary", "uint8",
         "box"],
)
def test_observation_encoding_inside_the_policy(ob_space, obs, encoded):
    obs = np.asarray(obs, dtype=ob_space.dtype)
    encoded = np.asarray(encoded, dtype=np.float64)
    np.testing.assert_allclose(encode_observation(ob_space, tf.constant(obs)).numpy()
                               .reshape(len(obs), -1), encoded, rtol=1e-6)
    policy = build_policy(ob_space, gym.spaces.Discrete(3), identity_net)
    # the identity torso puts the encoded observation straight into the head
    params = policy.forward(tf.constant(obs), tf.zeros([len(obs), 0]), tf.zeros([len(obs)]))[0]
    np.testing.assert_allclose(params.numpy(), _head_of_identity(policy, encoded),
                               rtol=1e-5, atol=1e-6)


def _perturb(variables, seed):
    rng = np.random.default_rng(seed)
    for v in variables:
        value = v.numpy()
        v.assign(value + rng.normal(0.0, 0.5, value.shape).astype(value.dtype))


def _forward(policy, obs):
    params, values, _, _ = policy.forward(tf.constant(obs), tf.zeros([len(obs), 0]),
                                          tf.zeros([len(obs)]))
    return params.numpy(), values.numpy()


def test_value_network_copy_has_its_own_torso():
    ac_space = gym.spaces.Discrete(3)
    copy = build_policy(VEC_OBS, ac_space, "mlp", value_network="copy", num_hidden=8)
    shared = build_policy(VEC_OBS, ac_space, "mlp", num_hidden=8)
    assert copy.value_torso is not None and shared.value_torso is None
    torso_ids = {id(v) for v in copy.torso.trainable_variables}
    value_ids = {id(v) for v in copy.value_torso.trainable_variables}
    assert torso_ids and value_ids and not torso_ids & value_ids
    assert len(copy.trainable_variables) == (len(shared.trainable_variables)
                                             + len(copy.value_torso.trainable_variables))

    obs = sample_obs(VEC_OBS, 4)
    p0, v0 = _forward(copy, obs)
    _perturb(copy.torso.trainable_variables, 0)
    p1, v1 = _forward(copy, obs)
    np.testing.assert_array_equal(v1, v0)  # the value does not see the policy torso
    assert not np.allclose(p1, p0)

    # with a shared torso the same change does move the value
    s0 = _forward(shared, obs)[1]
    _perturb(shared.torso.trainable_variables, 0)
    assert not np.allclose(_forward(shared, obs)[1], s0)


def test_value_network_errors():
    with pytest.raises(RLBaseError, match="bogus"):
        build_policy(VEC_OBS, gym.spaces.Discrete(2), "mlp", value_network="bogus")
    with pytest.raises(RLBaseError, match="copy"):
        build_policy(VEC_OBS, gym.spaces.Discrete(2), "lstm", value_network="copy", nlstm=4)


def test_estimate_q_head():
    policy = build_policy(VEC_OBS, gym.spaces.Discrete(4), "mlp", estimate_q=True,
                          num_hidden=8)
    obs = sample_obs(VEC_OBS, 3)
    _, values, _, q = policy.forward(tf.constant(obs), tf.zeros([3, 0]), tf.zeros([3]))
    assert tuple(q.shape) == (3, 4)
    assert tuple(values.shape) == (3,)
    q_vars = {id(v) for v in policy.q_head.trainable_variables}
    assert q_vars and q_vars <= {id(v) for v in policy.trainable_variables}

    plain = build_policy(VEC_OBS, gym.spaces.Discrete(4), "mlp", num_hidden=8)
    assert plain.forward(tf.constant(obs), tf.zeros([3, 0]), tf.zeros([3]))[3] is None
    with pytest.raises(RLBaseError, match="Discrete"):
        build_policy(VEC_OBS, gym.spaces.Box(-1.0, 1.0, (2,), np.float32), "mlp",
                     estimate_q=True)


def test_recurrent_policy_state():
    policy = build_policy(VEC_OBS, gym.spaces.Discrete(3), "lstm", nlstm=8)
    assert policy.recurrent and policy.state_size == 16
    assert policy.initial_state(2).shape == (2, 16)
    obs = sample_obs(VEC_OBS, 2)
    actions, values, state, nlp = run_step(policy, obs)
    assert actions.shape == (2,) and values.shape == (2,) and nlp.shape == (2,)
    assert state.shape == (2, 16) and np.abs(state).sum() > 0
    # training layout: 2 envs x 3 steps, env-major rows
    rows = sample_obs(VEC_OBS, 6)
    params, values, new_state, _ = policy.forward(
        tf.constant(rows), tf.zeros([2, 16]), tf.zeros([6]))
    assert tuple(params.shape) == (6, 3) and tuple(values.shape) == (6,)
    assert tuple(new_state.shape) == (2, 16)
    # env 1's first row depends only on its own observation (zero start state)
    single, _, _, _ = policy.forward(tf.constant(rows[3:4]), tf.zeros([1, 16]), tf.zeros([1]))
    np.testing.assert_allclose(params.numpy()[3], single.numpy()[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("network", ["mlp", "lstm"])
def test_all_weights_are_tracked(network):
    policy = build_policy(VEC_OBS, gym.spaces.Box(-1.0, 1.0, (2,), np.float32), network,
                          value_network="copy" if network == "mlp" else None)
    variables = policy.trainable_variables
    assert variables
    ids = {id(v) for v in variables}
    for part in (policy.torso, policy.pd_head, policy.value_head):
        assert part.trainable_variables
        assert {id(v) for v in part.trainable_variables} <= ids
    assert any("logstd" in v.path for v in variables)


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.Text(8),
        gym.spaces.Dict({"pos": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
                         "name": gym.spaces.Text(8)}),
    ],
    ids=["text", "dict-with-text"],
)
def test_unsupported_observation_space(space):
    with pytest.raises(RLBaseError, match="unsupported observation space Text"):
        build_policy(space, gym.spaces.Discrete(2), "mlp")


def test_multidiscrete_2d_observations_are_one_hot_per_entry():
    # nvec [[2,3,4],[5,6,7]]: 27 features, each entry one-hot in its own size (rows kept).
    space = gym.spaces.MultiDiscrete([[2, 3, 4], [5, 6, 7]])
    obs = np.array([[[1, 2, 3], [4, 5, 6]], [[0, 0, 0], [0, 0, 0]]])
    features = encode_observation(space, tf.constant(obs)).numpy()
    assert features.shape == (2, 27)
    offsets = np.cumsum([0, 2, 3, 4, 5, 6])
    expected = np.zeros((2, 27), np.float32)
    for row, values in enumerate(obs.reshape(2, -1)):
        expected[row, offsets + values] = 1.0
    np.testing.assert_array_equal(features, expected)
