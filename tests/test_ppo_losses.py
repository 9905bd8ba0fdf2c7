"""PPO's losses and one whole update on numbers worked out by hand: the clipped surrogate at
ratios inside and outside the clip range with positive and negative advantages, its gradient,
the KL stop, the clipped value loss and its gradient, and the update's statistics and Adam
step for a policy whose weights are zero (uniform over 3 actions, a constant value), so that
every quantity is a short sum (a few seconds in all)."""

import math

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from rlbase.common.loops.rollout import Rollout
from rlbase.ppo.config import PPOConfig
from rlbase.ppo.model import approx_kl_stop, build_model, clipped_surrogate, value_loss_fn


# -- the pure functions --------------------------------------------------------------------------
def test_clipped_surrogate_inside_and_outside_the_clip_with_both_signs():
    """Clip range 0.2. Per sample max(-A r, -A clip(r, 0.8, 1.2)):
    r 1.5, A +1: max(-1.5, -1.2) = -1.2 (clipped: no gradient);
    r 0.5, A -1: max(0.5, 0.8) = 0.8 (clipped: no gradient);
    r 1.1, A +2: -2.2 (inside); r 0.7, A +1: max(-0.7, -0.8) = -0.7 (outside, not clipped:
    a worse ratio keeps its gradient); r 1.5, A -1: max(1.5, 1.2) = 1.5 (likewise).
    Mean 0.36 / 5. Clip fraction: 4 of the 5 ratios lie outside [0.8, 1.2]. The gradient by
    neglogp of -A r / 5 is A r / 5 where not clipped, else 0."""
    ratios = np.array([1.5, 0.5, 1.1, 0.7, 1.5])
    adv = tf.constant([1.0, -1.0, 2.0, 1.0, -1.0])
    old = tf.constant([0.3, -0.2, 0.0, 1.0, 0.5])
    neglogp = tf.Variable(old.numpy() - np.log(ratios).astype(np.float32))
    with tf.GradientTape() as tape:
        loss, ratio, clipfrac = clipped_surrogate(neglogp, old, adv, tf.constant(0.2))
    assert loss.numpy() == pytest.approx((-1.2 + 0.8 - 2.2 - 0.7 + 1.5) / 5, rel=1e-5)
    np.testing.assert_allclose(ratio.numpy(), ratios, rtol=1e-5)
    assert clipfrac.numpy() == pytest.approx(4 / 5)
    np.testing.assert_allclose(tape.gradient(loss, neglogp).numpy(),
                               [0.0, 0.0, 2.2 / 5, 0.7 / 5, -1.5 / 5], rtol=1e-5, atol=1e-7)


def test_a_ratio_of_one_is_never_clipped():
    """|r - 1| > c, strictly: r = 1 exactly at clip range 0 counts as not clipped."""
    _, _, clipfrac = clipped_surrogate(tf.constant([0.5, 2.0]), tf.constant([0.5, 2.0]),
                                       tf.constant([1.0, -1.0]), tf.constant(0.0))
    assert clipfrac.numpy() == 0.0


def test_kl_stop_above_one_and_a_half_target_kl():
    """log r = log 2 and 0: mean(r - 1 - log r) = (1 - log 2) / 2 = 0.15343, above 1.5 * 0.1
    = 0.15, below 1.5 * 0.11 = 0.165; an estimate of 0 never exceeds 1.5 * 0."""
    old, neglogp = tf.constant([0.0, 0.7]), tf.constant([-math.log(2.0), 0.7])
    assert bool(approx_kl_stop(neglogp, old, 0.1).numpy())
    assert not bool(approx_kl_stop(neglogp, old, 0.11).numpy())
    assert not bool(approx_kl_stop(old, old, 0.0).numpy())
    # r = 1/2: 1/2 - 1 + log 2 = 0.19315 (r < 1 counts too): above 0.12, not above 0.13
    half = tf.constant([math.log(2.0)])
    assert bool(approx_kl_stop(half, tf.constant([0.0]), 0.12).numpy())
    assert not bool(approx_kl_stop(half, tf.constant([0.0]), 0.13).numpy())


def test_clipped_value_loss_and_its_gradient():
    """Clip range 0.2; per sample max((V - R)^2, (V_old + clip(V - V_old) - R)^2):
    V 1 (old 0, R 2): 1 or (0.2 - 2)^2 = 3.24 -> 3.24, clipped: no gradient;
    V 3 (old 2.95, R 2): inside the range, both 1 -> 1, gradient 2 (V - R) = 2;
    V 0 (old 1, R 0.5): 0.25 or (0.8 - 0.5)^2 = 0.09 -> 0.25, unclipped: gradient -1;
    V -1 (old 0, R -2): 1 or (-0.2 + 2)^2 = 3.24 -> 3.24, clipped: no gradient.
    Half the mean: 7.73 / 8; gradient halved and averaged: 0, 0.25, -0.125, 0."""
    vpred = tf.Variable([1.0, 3.0, 0.0, -1.0])
    old = tf.constant([0.0, 2.95, 1.0, 0.0])
    returns = tf.constant([2.0, 2.0, 0.5, -2.0])
    with tf.GradientTape() as tape:
        loss = value_loss_fn(vpred, old, returns, tf.constant(0.2))
    assert loss.numpy() == pytest.approx(7.73 / 8, rel=1e-5)
    np.testing.assert_allclose(tape.gradient(loss, vpred).numpy(), [0.0, 0.25, -0.125, 0.0],
                               rtol=1e-5, atol=1e-7)
    # no clipping: 0.5 * mean(1, 1, 0.25, 1)
    assert value_loss_fn(vpred, old, returns, None).numpy() == pytest.approx(3.25 / 8)


# -- one update of a zero-weight policy ----------------------------------------------------------
# One env, 4 steps, the episode ends at step 2; V = 0.5 everywhere (the value head's bias),
# gamma = lam = 0.5: deltas 0.75, -0.25, 1.5 (no bootstrap), -1.25; GAE
# A = 0.75 + 0.25 * 0.125, -0.25 + 0.25 * 1.5, 1.5, -1.25.
ACTIONS = np.array([0, 2, 2, 1])
ADV = np.array([0.78125, 0.125, 1.5, -1.25])
V0 = 0.5


def make_model(pi_bias=(0.0, 0.0, 0.0), **kw):
    hp = dict(nsteps=4, nminibatches=1, noptepochs=1, gamma=0.5, lam=0.5, ent_coef=0.01,
              vf_coef=0.5, max_grad_norm=0.5, normalize_advantage=False, seed=0,
              jit_compile=False)
    hp.update(kw)
    model = build_model(gym.spaces.Box(-1.0, 1.0, (2,), np.float32), gym.spaces.Discrete(3), 1,
                        "mlp", {"num_layers": 1, "num_hidden": 4}, PPOConfig.build(hp, 1))
    return zero_weights(model, pi_bias)


def zero_weights(model, pi_bias):
    """Every weight of a one-hidden-layer actor-critic 0, but the policy head's biases
    (``pi_bias``, 3 actions) and the value head's (V0): every row's logits and value are those
    biases (A2C's exact tests use it too)."""
    for v in model.policy.trainable_variables:
        v.assign(tf.zeros_like(v))
    _, head_bias, _, value_bias = model.policy.trainable_variables[2:]
    assert head_bias.shape == (3,) and value_bias.shape == (1,)
    head_bias.assign(pi_bias)
    value_bias.assign([V0])
    return model


def rollout():
    obs = np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6], [0.7, -0.8]], np.float32)
    return Rollout(obs=obs, actions=ACTIONS, rewards=np.array([[1.0, 0.0, 2.0, -1.0]], np.float32),
                   bootstraps=np.zeros((1, 4), np.float32),
                   dones=np.array([[0.0, 0.0, 1.0, 0.0]], np.float32),
                   starts=np.zeros(4, np.float32), state=np.zeros((1, 0), np.float32),
                   last_obs=np.array([[0.2, 0.2]], np.float32),
                   last_state=np.zeros((1, 0), np.float32), last_starts=np.zeros(1, np.float32))


def hand_gradients(adv, p, ent_coef):
    """The gradient on the policy head's biases (the logits of every row, softmax p):
    -(1/4) sum_i A_i (1{a_i = j} - p_j) from the surrogate at ratio 1, and
    ent_coef p_j (log p_j + H) from -ent_coef H; on the value bias, vf_coef (0.5) * -mean(A)
    (V 0.5 and R = A + 0.5, A before any normalization). Every other weight's is 0 (the hidden
    layer outputs 0, the heads' kernels are 0)."""
    onehot = np.eye(3)[ACTIONS]
    entropy = -np.sum(p * np.log(p))
    pi = -(adv[:, None] * (onehot - p)).sum(axis=0) / 4 + ent_coef * p * (np.log(p) + entropy)
    return pi, 0.5 * -ADV.mean()


def heads(model):
    variables = model.policy.trainable_variables
    return variables[3].numpy(), variables[5].numpy()  # policy head's, value head's biases


@pytest.mark.parametrize("normalize", [False, True])
def test_one_update_by_hand(normalize):
    """Logits 0.2, -0.1, 0 (p = softmax) on every row, entropy coefficient 0.5. Statistics
    before the step: ratio 1, so the policy loss is -mean(A) (0 once the minibatch's
    advantages are normalized), the value loss 0.5 mean(A^2), the entropy's H(p), no KL,
    nothing clipped, the gradient's norm from the hand gradients (before its clipping to
    0.5); explained variance 0 (V is constant). Then one Adam step: each weight with a
    gradient moves by about lr against its sign, the zero-gradient ones not at all."""
    logits = np.array([0.2, -0.1, 0.0])
    p = np.exp(logits) / np.sum(np.exp(logits))
    model = make_model(pi_bias=logits, ent_coef=0.5, normalize_advantage=normalize)
    stats, _ = model.train(rollout(), 0.01, 0.2, 0.2)
    adv = (ADV - ADV.mean()) / (ADV.std() + 1e-8) if normalize else ADV
    pi_grad, v_grad = hand_gradients(adv, p, 0.5)
    norm = math.sqrt(np.sum(pi_grad ** 2) + v_grad ** 2)
    assert stats["policy_gradient_loss"] == pytest.approx(-adv.mean(), rel=1e-5, abs=1e-6)
    assert stats["value_loss"] == pytest.approx(0.5 * np.mean(ADV ** 2), rel=1e-5)
    assert stats["entropy_loss"] == pytest.approx(np.sum(p * np.log(p)), rel=1e-5)
    assert stats["approx_kl"] == 0.0 and stats["clip_fraction"] == 0.0
    assert stats["grad_norm"] == pytest.approx(norm, rel=1e-5)
    assert stats["explained_variance"] == pytest.approx(0.0, abs=1e-5)
    pi_bias, v_bias = heads(model)
    np.testing.assert_allclose(np.append(pi_bias - logits, v_bias - V0),
                               -0.01 * np.sign(np.append(pi_grad, v_grad)), rtol=2e-2)
    for v in model.policy.trainable_variables[:3] + [model.policy.trainable_variables[4]]:
        np.testing.assert_array_equal(v.numpy(), 0.0)


def test_epochs_and_minibatches_average_their_statistics():
    """3 epochs of 2 minibatches at learning rate 0: the weights never move, so the six
    steps' value losses average to the whole batch's (equal halves), the policy loss to
    -mean(A), and nothing moves."""
    model = make_model(noptepochs=3, nminibatches=2)
    stats, _ = model.train(rollout(), 0.0, 0.2, 0.2)
    assert stats["policy_gradient_loss"] == pytest.approx(-ADV.mean(), rel=1e-5)
    assert stats["value_loss"] == pytest.approx(0.5 * np.mean(ADV ** 2), rel=1e-5)
    assert stats["entropy_loss"] == pytest.approx(-math.log(3), rel=1e-5)
    pi_bias, v_bias = heads(model)
    np.testing.assert_array_equal(pi_bias, 0.0)
    np.testing.assert_array_equal(v_bias, V0)


def second_epoch_by_hand(stepped):
    """The policy after its first step (read from ``stepped``, a model that took just that
    step): logits l_j and value V1, the same for every observation (the kernels still 0),
    and the log-probabilities of the rollout's actions."""
    logits, value = heads(stepped)
    logp = logits - np.log(np.sum(np.exp(logits.astype(np.float64))))
    return logits, logp[ACTIONS], float(value[0])


def test_two_epochs_by_hand_and_the_kl_stop():
    """Two epochs of one minibatch, lr 0.1. The second sees the stepped policy: ratio r =
    3 p(a), inside [0.8, 1.2]; its policy loss -mean(A r), value loss 0.5 mean((V1 - R)^2)
    (V1 - V_old about 0.1, inside the value clip), KL stat 0.5 mean((log r)^2); the statistics
    are the two epochs' means. With target_kl 1e-4 the second epoch's KL estimate (about 0.008)
    stops the update before its step: the statistics are the first epoch's alone and the
    weights those of one step."""
    one_step = make_model()
    one_step.train(rollout(), 0.1, 0.2, 0.2)
    logits, logp, v1 = second_epoch_by_hand(one_step)
    log_r = logp + math.log(3)
    assert np.all(np.abs(np.exp(log_r) - 1) < 0.2) and abs(v1 - V0) < 0.2
    assert np.mean(np.exp(log_r) - 1 - log_r) > 1.5e-4
    first = dict(policy_gradient_loss=-ADV.mean(), value_loss=0.5 * np.mean(ADV ** 2),
                 approx_kl=0.0)
    second = dict(policy_gradient_loss=-np.mean(ADV * np.exp(log_r)),
                  value_loss=0.5 * np.mean((v1 - (ADV + V0)) ** 2),
                  approx_kl=0.5 * np.mean(log_r ** 2))
    model = make_model(noptepochs=2)
    stats, _ = model.train(rollout(), 0.1, 0.2, 0.2)
    for name in first:
        assert stats[name] == pytest.approx((first[name] + second[name]) / 2, rel=1e-5), name
    assert not np.allclose(heads(model)[0], logits, rtol=1e-2)  # it took a second step

    stopped = make_model(noptepochs=2, target_kl=1e-4)
    stats, _ = stopped.train(rollout(), 0.1, 0.2, 0.2)
    for name in first:
        assert stats[name] == pytest.approx(first[name], rel=1e-5, abs=1e-7), name
    pi_bias, v_bias = heads(stopped)
    np.testing.assert_allclose(pi_bias, logits, rtol=1e-6)
    assert v_bias[0] == pytest.approx(v1, rel=1e-6)
