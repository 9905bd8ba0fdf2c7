"""Distributions against closed forms computed here in plain math, and the action-space head."""

import math

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from rlbase.common.errors import RLBaseError
from rlbase.common.networks.distributions import (
    Bernoulli,
    Categorical,
    DiagGaussian,
    Distribution,
    DistributionHead,
    MultiCategorical,
)

NDRAWS = 20000
SEED = tf.constant([7, 0], tf.int64)
# 20000 draws: the standard error of a frequency is at most 0.0036, so 0.015 is > 4 sigma and a
# wrong distribution (off by a few percent or more) fails.
FREQ_TOL = 0.015


def softmax(logits):
    m = max(logits)
    exps = [math.exp(v - m) for v in logits]
    total = sum(exps)
    return [e / total for e in exps]


def sigmoid(v):
    return 1.0 / (1.0 + math.exp(-v))


def const(x):
    return tf.constant(np.asarray(x, dtype=np.float32))


@pytest.fixture(autouse=True)
def _seed():
    tf.random.set_seed(1234)


# --------------------------------------------------------------------------- Categorical


def test_categorical_closed_forms():
    rows = [[1.0, 2.0, 3.0], [0.5, -1.0, 0.0]]
    other = [[0.0, 0.0, 0.0], [2.0, 1.0, -1.0]]
    pd, qd = Categorical(const(rows)), Categorical(const(other))

    # -log softmax(logits)[a], with log(e + e^2 + e^3) - 3 written out for the first row
    assert pd.neglogp(tf.constant([2, 1])).numpy()[0] == pytest.approx(
        math.log(math.e + math.e**2 + math.e**3) - 3.0, rel=1e-5)
    expected_nlp = [-math.log(softmax(r)[a]) for r, a in zip(rows, [2, 1])]
    np.testing.assert_allclose(pd.neglogp(tf.constant([2, 1])).numpy(), expected_nlp, rtol=1e-5)

    expected_ent = [-sum(p * math.log(p) for p in softmax(r)) for r in rows]
    np.testing.assert_allclose(pd.entropy().numpy(), expected_ent, rtol=1e-5)

    expected_kl = [sum(p * math.log(p / q) for p, q in zip(softmax(r), softmax(o)))
                   for r, o in zip(rows, other)]
    np.testing.assert_allclose(pd.kl(qd).numpy(), expected_kl, rtol=1e-5)
    np.testing.assert_allclose(pd.kl(pd).numpy(), [0.0, 0.0], atol=1e-6)
    # uniform over 3 actions: entropy log 3
    assert qd.entropy().numpy()[0] == pytest.approx(math.log(3.0), rel=1e-6)


def test_categorical_mode_and_start_offset():
    logits = const([[1.0, 2.0, 3.0], [5.0, 0.0, 1.0]])
    np.testing.assert_array_equal(Categorical(logits).mode().numpy(), [2, 0])
    shifted = Categorical(logits, start=3)
    np.testing.assert_array_equal(shifted.mode().numpy(), [5, 3])
    # neglogp of action start + i is the neglogp of index i
    np.testing.assert_allclose(shifted.neglogp(tf.constant([3, 5])).numpy(),
                               Categorical(logits).neglogp(tf.constant([0, 2])).numpy())
    np.testing.assert_allclose(shifted.neglogp(tf.constant([3, 5])).numpy(),
                               [-math.log(softmax([1.0, 2.0, 3.0])[0]),
                                -math.log(softmax([5.0, 0.0, 1.0])[2])], rtol=1e-5)


def test_categorical_sample_frequencies():
    row = [1.0, 2.0, 3.0]
    pd = Categorical(const([row] * NDRAWS), start=2, dtype=tf.int32)
    draws = pd.sample(SEED).numpy()
    assert draws.shape == (NDRAWS,)
    assert draws.dtype == np.int32
    assert set(np.unique(draws)) <= {2, 3, 4}
    freqs = np.bincount(draws - 2, minlength=3) / NDRAWS
    np.testing.assert_allclose(freqs, softmax(row), atol=FREQ_TOL)


# --------------------------------------------------------------------------- MultiCategorical


def test_multicategorical_is_sum_of_parts():
    a_logits, b_logits = [1.0, 2.0, 3.0], [0.5, -0.5]
    oa, ob = [0.0, 1.0, 0.0], [-1.0, 1.0]
    pd = MultiCategorical(const([a_logits + b_logits]), np.array([3, 2]))
    qd = MultiCategorical(const([oa + ob]), np.array([3, 2]))

    x = tf.constant([[1, 1]], dtype=tf.int64)
    expected = -math.log(softmax(a_logits)[1]) - math.log(softmax(b_logits)[1])
    assert pd.neglogp(x).numpy()[0] == pytest.approx(expected, rel=1e-5)

    def ent(lg):
        return -sum(p * math.log(p) for p in softmax(lg))

    def kl(lp, lq):
        return sum(p * math.log(p / q) for p, q in zip(softmax(lp), softmax(lq)))

    assert pd.entropy().numpy()[0] == pytest.approx(ent(a_logits) + ent(b_logits), rel=1e-5)
    assert pd.kl(qd).numpy()[0] == pytest.approx(kl(a_logits, oa) + kl(b_logits, ob), rel=1e-5)
    np.testing.assert_array_equal(pd.mode().numpy(), [[2, 0]])


def test_multicategorical_sample_frequencies():
    a_logits, b_logits = [0.0, 1.0, -1.0], [2.0, 0.0]
    pd = MultiCategorical(const([a_logits + b_logits] * NDRAWS), np.array([3, 2]))
    draws = pd.sample(SEED).numpy()
    assert draws.shape == (NDRAWS, 2)
    np.testing.assert_allclose(np.bincount(draws[:, 0], minlength=3) / NDRAWS,
                               softmax(a_logits), atol=FREQ_TOL)
    np.testing.assert_allclose(np.bincount(draws[:, 1], minlength=2) / NDRAWS,
                               softmax(b_logits), atol=FREQ_TOL)


# --------------------------------------------------------------------------- Bernoulli


def test_bernoulli_closed_forms():
    logits, other = [0.0, 2.0, -1.0], [1.0, -0.5, 0.3]
    pd, qd = Bernoulli(const([logits])), Bernoulli(const([other]))
    ps = [sigmoid(v) for v in logits]
    qs = [sigmoid(v) for v in other]

    x = [1, 0, 1]
    expected_nlp = -sum(math.log(p) if xi else math.log(1.0 - p) for p, xi in zip(ps, x))
    assert pd.neglogp(tf.constant([x], dtype=tf.int8)).numpy()[0] == pytest.approx(
        expected_nlp, rel=1e-5)
    # logit 0 -> p = 1/2: neglogp of either value is log 2 (spot check of one term)
    one = Bernoulli(const([[0.0]]))
    assert one.neglogp(tf.constant([[1]])).numpy()[0] == pytest.approx(math.log(2.0), rel=1e-6)

    expected_ent = -sum(p * math.log(p) + (1 - p) * math.log(1 - p) for p in ps)
    assert pd.entropy().numpy()[0] == pytest.approx(expected_ent, rel=1e-5)

    expected_kl = sum(p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))
                      for p, q in zip(ps, qs))
    assert pd.kl(qd).numpy()[0] == pytest.approx(expected_kl, rel=1e-4)
    assert pd.kl(pd).numpy()[0] == pytest.approx(0.0, abs=1e-6)


def test_bernoulli_mode_and_samples():
    logits = [0.0, 2.0, -1.0]
    pd = Bernoulli(const([logits]))
    mode = pd.mode().numpy()
    assert mode.dtype == np.int8
    np.testing.assert_array_equal(mode, [[0, 1, 0]])
    # P(1) = sigmoid(0.5) > 0.5: the mode is 1 for any positive logit, not only large ones
    np.testing.assert_array_equal(Bernoulli(const([[0.5, -0.5]])).mode().numpy(), [[1, 0]])

    draws = Bernoulli(const([logits] * NDRAWS)).sample(SEED).numpy()
    assert draws.shape == (NDRAWS, 3)
    assert set(np.unique(draws)) <= {0, 1}
    np.testing.assert_allclose(draws.mean(axis=0), [sigmoid(v) for v in logits], atol=FREQ_TOL)


# --------------------------------------------------------------------------- DiagGaussian


def test_gaussian_closed_forms():
    mean, logstd = [0.5, -1.0], [0.0, math.log(2.0)]
    mean2, logstd2 = [0.0, 1.0], [math.log(0.5), math.log(3.0)]
    pd = DiagGaussian(const([mean]), const([logstd]))
    qd = DiagGaussian(const([mean2]), const([logstd2]))
    stds, stds2 = [math.exp(v) for v in logstd], [math.exp(v) for v in logstd2]

    x = [1.0, 0.0]
    logpdf = sum(-0.5 * ((xi - m) / s) ** 2 - math.log(s) - 0.5 * math.log(2 * math.pi)
                 for xi, m, s in zip(x, mean, stds))
    assert pd.neglogp(const([x])).numpy()[0] == pytest.approx(-logpdf, rel=1e-5)
    # standard normal at its mean, one dimension: 0.5 * log(2 pi)
    std_normal = DiagGaussian(const([[0.0]]), const([[0.0]]))
    assert std_normal.neglogp(const([[0.0]])).numpy()[0] == pytest.approx(
        0.5 * math.log(2 * math.pi), rel=1e-6)

    entropy = sum(0.5 * math.log(2 * math.pi * math.e * s**2) for s in stds)
    assert pd.entropy().numpy()[0] == pytest.approx(entropy, rel=1e-5)

    kl = sum(math.log(s2 / s1) + (s1**2 + (m1 - m2) ** 2) / (2 * s2**2) - 0.5
             for m1, s1, m2, s2 in zip(mean, stds, mean2, stds2))
    assert pd.kl(qd).numpy()[0] == pytest.approx(kl, rel=1e-5)
    assert pd.kl(pd).numpy()[0] == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_allclose(pd.mode().numpy(), [mean])


def test_gaussian_sample_moments():
    mean, logstd = [0.5, -1.0], [0.0, math.log(2.0)]
    pd = DiagGaussian(const([mean] * NDRAWS), const([logstd] * NDRAWS))
    draws = pd.sample(SEED).numpy()
    assert draws.shape == (NDRAWS, 2)
    # standard error of the mean is std / sqrt(N) <= 0.0142; of the std about std / sqrt(2N)
    np.testing.assert_allclose(draws.mean(axis=0), mean, atol=0.06)
    np.testing.assert_allclose(draws.std(axis=0), [1.0, 2.0], rtol=0.03)


# --------------------------------------------------------------------------- DistributionHead


@pytest.mark.parametrize(
    ("space", "size", "dtype", "shape"),
    [
        (gym.spaces.Discrete(5), 5, np.int64, ()),
        (gym.spaces.Box(-1.0, 1.0, (3,), np.float32), 6, np.float32, (3,)),
        (gym.spaces.MultiDiscrete([3, 4]), 7, np.int64, (2,)),
        (gym.spaces.MultiBinary(4), 4, np.int8, (4,)),
    ],
    ids=["discrete", "box", "multidiscrete", "multibinary"],
)
def test_head_sizes_and_dtypes(space, size, dtype, shape):
    head = DistributionHead(space)
    latent = tf.random.normal([6, 8])
    params = head(latent)
    assert tuple(params.shape) == (6, size)
    assert head.action_dtype == np.dtype(dtype)
    assert head.action_shape == shape
    pd = head.distribution(params)
    for actions in (pd.sample(SEED).numpy(), pd.mode().numpy()):
        assert actions.shape == (6, *shape)
        assert actions.dtype == np.dtype(dtype)
    nlp = pd.neglogp(pd.sample(SEED)).numpy()
    assert nlp.shape == (6,)
    assert np.all(np.isfinite(nlp))
    assert pd.entropy().numpy().shape == (6,)
    np.testing.assert_allclose(pd.kl(pd).numpy(), np.zeros(6), atol=1e-6)


def test_head_gaussian_logstd_is_a_trained_weight():
    head = DistributionHead(gym.spaces.Box(-1.0, 1.0, (3,), np.float32))
    params = head(tf.zeros([2, 4])).numpy()
    # zero latent: the mean is the (zero) bias, log-std is the zero-initialized weight
    np.testing.assert_allclose(params, np.zeros((2, 6)))
    names = [v.path for v in head.trainable_variables]
    assert any("logstd" in n for n in names), names
    head.logstd.assign([0.1, 0.2, 0.3])
    pd = head.distribution(head(tf.zeros([2, 4])))
    np.testing.assert_allclose(pd.logstd.numpy(), [[0.1, 0.2, 0.3]] * 2, rtol=1e-6)


def test_head_discrete_start_offset():
    space = gym.spaces.Discrete(4, start=3)
    head = DistributionHead(space)
    params = head(tf.random.normal([4000, 8]))
    pd = head.distribution(params)
    draws = pd.sample(SEED).numpy()
    # small init scale: nearly uniform logits, so every action shows up
    assert set(np.unique(draws)) == {3, 4, 5, 6}
    assert all(space.contains(a) for a in draws[:50])
    assert set(np.unique(pd.mode().numpy())) <= {3, 4, 5, 6}
    logp = -pd.neglogp(tf.constant(np.full(4000, 3))).numpy()
    expected = tf.nn.log_softmax(params).numpy()[:, 0]
    np.testing.assert_allclose(logp, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.Dict({"a": gym.spaces.Discrete(2)}),
        gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(3))),
        gym.spaces.Box(-1.0, 1.0, (2, 3), np.float32),
        gym.spaces.MultiDiscrete([[2, 3], [4, 5]]),
        gym.spaces.MultiDiscrete([3, 2], start=[1, 0]),
        gym.spaces.MultiDiscrete([3, 2], start=[-1, 0]),
        gym.spaces.MultiBinary([2, 3]),
        gym.spaces.Box(-1.0, 1.0, (), np.float32),
    ],
    ids=["dict", "tuple", "box2d", "multidiscrete2d", "multidiscrete_start",
         "multidiscrete_negative_start", "multibinary2d", "box_scalar"],
)
def test_head_rejects_unsupported_space(space):
    with pytest.raises(RLBaseError) as info:
        DistributionHead(space)
    # the message names the offending space
    assert type(space).__name__ in str(info.value)


def test_head_unsupported_message_lists_supported_spaces():
    with pytest.raises(RLBaseError, match="Discrete.*Box.*MultiDiscrete.*MultiBinary"):
        DistributionHead(gym.spaces.Dict({"a": gym.spaces.Discrete(2)}))


# --------------------------------------------------------------------------- any leading axes
# The distributions act on the last axis whatever comes before it ([batch, time, actions] of a
# sequence model as well as [batch, actions]); the numpy references below reduce axis -1 and a
# time axis of another length than the action axis tells the two apart.


def np_log_softmax(x):
    x = np.asarray(x, np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def test_categorical_on_batch_time_actions():
    rng = np.random.default_rng(3)
    logits, other = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
    pd, qd = Categorical(const(logits), start=1), Categorical(const(other))
    logp, logq = np_log_softmax(logits), np_log_softmax(other)
    np.testing.assert_array_equal(pd.mode().numpy(), logits.argmax(axis=-1) + 1)
    np.testing.assert_allclose(pd.entropy().numpy(), -(np.exp(logp) * logp).sum(-1), rtol=1e-5)
    np.testing.assert_allclose(pd.kl(qd).numpy(), (np.exp(logp) * (logp - logq)).sum(-1),
                               rtol=1e-4)
    actions = rng.integers(0, 4, size=(2, 3))
    np.testing.assert_allclose(pd.neglogp(tf.constant(actions + 1)).numpy(),
                               -np.take_along_axis(logp, actions[..., None], -1)[..., 0],
                               rtol=1e-5)
    # a gap of 100 in the logits exceeds any Gumbel noise (< 17): the draw is the argmax
    sure = 100.0 * np.eye(4)[rng.integers(0, 4, size=(2, 3))]
    np.testing.assert_array_equal(Categorical(const(sure), start=1).sample(SEED).numpy(),
                                  sure.argmax(axis=-1) + 1)


def test_multicategorical_on_batch_time_actions():
    nvec = np.array([3, 2])
    rng = np.random.default_rng(4)
    logits, other = rng.normal(size=(2, 4, 5)), rng.normal(size=(2, 4, 5))
    pd, qd = MultiCategorical(const(logits), nvec), MultiCategorical(const(other), nvec)
    parts, others = (logits[..., :3], logits[..., 3:]), (other[..., :3], other[..., 3:])
    np.testing.assert_array_equal(pd.mode().numpy(),
                                  np.stack([p.argmax(-1) for p in parts], axis=-1))
    entropy = sum(-(np.exp(lp) * lp).sum(-1) for lp in map(np_log_softmax, parts))
    np.testing.assert_allclose(pd.entropy().numpy(), entropy, rtol=1e-5)
    kl = sum((np.exp(lp) * (lp - lq)).sum(-1) for lp, lq in
             zip(map(np_log_softmax, parts), map(np_log_softmax, others)))
    np.testing.assert_allclose(pd.kl(qd).numpy(), kl, rtol=1e-4)
    actions = np.stack([rng.integers(0, 3, (2, 4)), rng.integers(0, 2, (2, 4))], axis=-1)
    nlp = sum(-np.take_along_axis(np_log_softmax(p), actions[..., i, None], -1)[..., 0]
              for i, p in enumerate(parts))
    np.testing.assert_allclose(pd.neglogp(tf.constant(actions)).numpy(), nlp, rtol=1e-5)
    sure = np.concatenate([100.0 * np.eye(3)[actions[..., 0]],
                           100.0 * np.eye(2)[actions[..., 1]]], axis=-1)
    np.testing.assert_array_equal(MultiCategorical(const(sure), nvec).sample(SEED).numpy(),
                                  actions)


def test_bernoulli_on_batch_time_actions():
    rng = np.random.default_rng(5)
    # p near 1 against q near 0: the KL (about 7.9 per entry) is many times the entropy
    logits = rng.uniform(3.0, 5.0, size=(2, 3, 4))
    other = rng.uniform(-5.0, -3.0, size=(2, 3, 4))
    pd, qd = Bernoulli(const(logits)), Bernoulli(const(other))
    p, q = 1.0 / (1.0 + np.exp(-logits)), 1.0 / (1.0 + np.exp(-other))
    entropy = -(p * np.log(p) + (1 - p) * np.log(1 - p)).sum(-1)
    kl = (p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))).sum(-1)
    assert np.all(kl > 2 * entropy)
    np.testing.assert_allclose(pd.entropy().numpy(), entropy, rtol=1e-4)
    np.testing.assert_allclose(pd.kl(qd).numpy(), kl, rtol=1e-4)
    x = rng.integers(0, 2, size=(2, 3, 4))
    nlp = -(x * np.log(p) + (1 - x) * np.log(1 - p)).sum(-1)
    np.testing.assert_allclose(pd.neglogp(tf.constant(x)).numpy(), nlp, rtol=1e-4)


def test_gaussian_on_batch_time_actions():
    rng = np.random.default_rng(6)
    mean, logstd = rng.normal(size=(2, 3, 2)), rng.normal(scale=0.3, size=(2, 3, 2))
    mean2, logstd2 = rng.normal(size=(2, 3, 2)), rng.normal(scale=0.3, size=(2, 3, 2))
    pd = DiagGaussian(const(mean), const(logstd))
    qd = DiagGaussian(const(mean2), const(logstd2))
    std, std2 = np.exp(logstd), np.exp(logstd2)
    x = rng.normal(size=(2, 3, 2))
    nlp = (0.5 * ((x - mean) / std) ** 2 + logstd + 0.5 * math.log(2 * math.pi)).sum(-1)
    np.testing.assert_allclose(pd.neglogp(const(x)).numpy(), nlp, rtol=1e-5)
    entropy = (logstd + 0.5 * math.log(2 * math.pi * math.e)).sum(-1)
    np.testing.assert_allclose(pd.entropy().numpy(), entropy, rtol=1e-5)
    kl = (logstd2 - logstd + (std**2 + (mean - mean2) ** 2) / (2 * std2**2) - 0.5).sum(-1)
    np.testing.assert_allclose(pd.kl(qd).numpy(), kl, rtol=1e-4)


def test_head_on_batch_time_latents():
    head = DistributionHead(gym.spaces.Box(-1.0, 1.0, (2,), np.float32))
    head.build((None, 3, 5))
    head.logstd.assign([0.25, -0.5])
    latent = np.random.default_rng(7).normal(size=(2, 3, 5)).astype(np.float32)
    params = head(tf.constant(latent)).numpy()
    kernel, bias = (w.numpy() for w in head.dense.weights)
    mean = latent @ kernel + bias
    assert params.shape == (2, 3, 4)
    np.testing.assert_allclose(params[..., :2], mean, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(params[..., 2:], np.broadcast_to([0.25, -0.5], (2, 3, 2)))
    pd = head.distribution(tf.constant(params))
    np.testing.assert_array_equal(pd.mean.numpy(), params[..., :2])
    np.testing.assert_array_equal(pd.logstd.numpy(), params[..., 2:])


# --------------------------------------------------------------------------- head details


def test_head_output_layer_is_orthogonal_with_gain_one_hundredth():
    # the default init_scale 0.01: near-uniform logits at the start (Baselines' choice)
    head = DistributionHead(gym.spaces.Discrete(3))
    head(tf.zeros([1, 8]))
    kernel = head.dense.kernel.numpy()
    np.testing.assert_allclose(kernel.T @ kernel, 1e-4 * np.eye(3), atol=1e-9)


def test_head_masks_apply_to_discrete_and_are_refused_elsewhere():
    head = DistributionHead(gym.spaces.Discrete(3))
    params = tf.constant([[0.5, 1.5, -2.0]])
    pd = head.distribution(params, action_masks=tf.constant([[True, False, True]]))
    np.testing.assert_array_equal(pd.logits.numpy(), [[0.5, -1e8, -2.0]])
    head = DistributionHead(gym.spaces.Box(-1.0, 1.0, (3,), np.float32))
    with pytest.raises(RLBaseError, match="action masks need a Discrete, MultiDiscrete or "
                                          "MultiBinary action space, got Box"):
        head.distribution(tf.zeros([1, 6]), action_masks=tf.ones([1, 3], tf.bool))


def test_masked_multibinary_by_hand():
    """MultiBinary(4) under sb3-contrib's mask layout (per dimension: 0 allowed, 1 allowed):
    both allowed keeps the logit, only 1 forces P(1) = 1, only 0 forces P(1) = 0; a forced
    dimension adds nothing to the entropy or to a valid action's -log p, and its logit gets
    no gradient; the numpy actor masks the same way."""
    head = DistributionHead(gym.spaces.MultiBinary(4))
    logits = tf.constant([[0.5, -1.0, 2.0, 0.0]])
    masks = tf.constant([[True, True, False, True, True, False, True, True]])
    with tf.GradientTape() as tape:
        tape.watch(logits)
        pd = head.distribution(logits, action_masks=masks)
        entropy = pd.entropy()
    np.testing.assert_array_equal(pd.logits.numpy(), [[0.5, 1e8, -1e8, 0.0]])
    np.testing.assert_array_equal(pd.mode().numpy(), [[1, 1, 0, 0]])
    p0 = 1.0 / (1.0 + math.exp(-0.5))
    h = lambda p: -(p * math.log(p) + (1 - p) * math.log(1 - p))  # noqa: E731
    np.testing.assert_allclose(entropy.numpy(), [h(p0) + 0.0 + 0.0 + math.log(2.0)],
                               rtol=1e-6)
    np.testing.assert_array_equal(tape.gradient(entropy, logits).numpy()[0, 1:3], [0.0, 0.0])
    np.testing.assert_allclose(pd.neglogp(tf.constant([[1, 1, 0, 0]])).numpy(),
                               [-math.log(p0) + math.log(2.0)], rtol=1e-6)
    draws = pd.sample(tf.constant([3, 4], tf.int64)).numpy()
    assert draws[0, 1] == 1 and draws[0, 2] == 0
    many = head.distribution(tf.zeros([2000, 4]), action_masks=tf.tile(masks, [2000, 1]))
    sample = many.sample(tf.constant([5, 6], tf.int64)).numpy()
    assert (sample[:, 1] == 1).all() and (sample[:, 2] == 0).all()
    assert 0.45 < sample[:, 0].mean() < 0.55 and 0.45 < sample[:, 3].mean() < 0.55


def test_mask_size_is_one_entry_per_logit_and_two_per_multibinary_bit():
    assert DistributionHead(gym.spaces.MultiBinary(4)).mask_size == 8
    assert DistributionHead(gym.spaces.Discrete(3)).mask_size == 3
    assert DistributionHead(gym.spaces.MultiDiscrete([2, 3])).mask_size == 5


def test_head_multibinary_and_multidiscrete_shapes():
    head = DistributionHead(gym.spaces.MultiBinary([4]))  # n given as a 1-element list
    assert head.size == 4 and head.kind == "bernoulli"
    with pytest.raises(RLBaseError, match="MultiBinary action spaces must be 1-D"):
        DistributionHead(gym.spaces.MultiBinary([]))
    with pytest.raises(RLBaseError, match="MultiDiscrete action spaces must be 1-D"):
        DistributionHead(gym.spaces.MultiDiscrete(3))  # a 0-D nvec


def test_base_distribution_is_abstract():
    base, other = Distribution(), Categorical(const([[0.0, 1.0]]))
    for call in (base.mode, base.entropy, lambda: base.sample(SEED),
                 lambda: base.neglogp(tf.constant([0])), lambda: base.kl(other)):
        with pytest.raises(NotImplementedError):
            call()
