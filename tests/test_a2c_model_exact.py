"""A2C's model (rlbase/a2c/model.py) on numbers worked out by hand: one update of a policy
whose weights are zero (every logit its head's bias, every value its head's bias, so each
quantity is a short sum), its statistics, RMSProp's step in both forms, the gradient's
clipping, the advantages' normalization, the critic's targets (n-step and GAE), an update
under action masks, the losses of a policy with random weights against a numpy forward pass,
and the settings the model is built with. Cheap checks first: mutation testing
(tests/mutation/) runs this file once per mutant and stops at the first failure."""

import math

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from rlbase.a2c.config import A2CConfig
from rlbase.a2c.model import STAT_NAMES, build_model
from rlbase.common.loops.rollout import Rollout
from rlbase.common.tf_util import RMSprop
from tests.test_ppo_losses import V0, zero_weights

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
OBS = np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6], [0.7, -0.8]], np.float32)
LAST_OBS = np.array([[0.2, 0.2]], np.float32)
ACTIONS = np.array([0, 2, 2, 1])
REWARDS = np.array([1.0, 0.0, 2.0, -1.0])
DONES = np.array([0.0, 0.0, 1.0, 0.0])  # the episode ends at step 2: no bootstrap into it
GAMMA = 0.5
# n-step returns from the last value V0: R3 = -1 + 0.5 * 0.5, R2 = 2, R1 = 0 + 0.5 * 2,
# R0 = 1 + 0.5 * 1
RETURNS = np.array([1.5, 1.0, 2.0, -0.75])
# GAE at lam 0.5 (deltas 0.75, -0.25, 1.5, -1.25) plus V0
GAE_RETURNS = np.array([0.78125, 0.125, 1.5, -1.25]) + V0
# lam 0: one-step targets r + gamma V(next) (none after the episode's end)
ONE_STEP_RETURNS = np.array([1.25, 0.25, 2.0, -0.75])


def config(**kw):
    hp = dict(nsteps=4, gamma=GAMMA, ent_coef=0.0, vf_coef=0.5, max_grad_norm=None,
              jit_compile=False)
    hp.update(kw)
    return A2CConfig.build(hp, 1)


def make_model(pi_bias=(0.0, 0.0, 0.0), network_kwargs=None, **kw):
    """One env, 4 steps, Discrete(3); every weight 0 but the heads' biases."""
    model = build_model(OBS_SPACE, gym.spaces.Discrete(3), 1, "mlp",
                        network_kwargs or {"num_layers": 1, "num_hidden": 4}, config(**kw))
    return zero_weights(model, pi_bias)


def rollout(masks=None):
    return Rollout(obs=OBS, actions=ACTIONS, rewards=REWARDS[None].astype(np.float32),
                   bootstraps=np.zeros((1, 4), np.float32), dones=DONES[None].astype(np.float32),
                   starts=np.zeros(4, np.float32), state=np.zeros((1, 0), np.float32),
                   last_obs=LAST_OBS, last_state=np.zeros((1, 0), np.float32),
                   last_starts=np.zeros(1, np.float32), action_masks=masks,
                   last_action_masks=None if masks is None else masks[:1])


def heads(model):
    variables = model.policy.trainable_variables
    return variables[3].numpy(), variables[5].numpy()  # policy head's, value head's biases


def hand_update(logits, returns, ent_coef, vf_coef, normalize=False, valid=None):
    """The zero-weight policy's loss terms and gradients on its heads' biases: every row has
    the logits ``logits`` (masked ones at -inf) and the value V0. Policy loss mean(A neglogp),
    value loss mean((V - R)^2), entropy H(p); gradient on logit j:
    mean_i A_i (p_j - 1{a_i = j}) + ent_coef p_j (log p_j + H), on the value bias
    vf_coef * 2 mean(V - R). Every other weight's gradient is 0 (the hidden layer outputs 0
    and the heads' kernels are 0)."""
    logits = np.asarray(logits, np.float64)
    valid = np.ones(3, bool) if valid is None else valid
    z = np.where(valid, np.exp(logits), 0.0)
    p = z / z.sum()
    logp = np.where(valid, np.log(np.where(valid, p, 1.0)), 0.0)
    entropy = -np.sum(p * logp)
    adv = returns - V0
    if normalize:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    onehot = np.eye(3)[ACTIONS]
    pi_grad = (adv[:, None] * (p - onehot)).mean(axis=0) + ent_coef * p * (logp + entropy)
    pi_grad = np.where(valid, pi_grad, 0.0)
    v_grad = vf_coef * 2 * np.mean(V0 - returns)
    stats = dict(policy_loss=np.mean(adv * -logp[ACTIONS]),
                 value_loss=np.mean((V0 - returns) ** 2), entropy_loss=-entropy,
                 explained_variance=0.0,  # V is constant: Var[R - V] = Var[R]
                 grad_norm=math.sqrt(np.sum(pi_grad ** 2) + v_grad ** 2))
    return stats, np.append(pi_grad, v_grad)


def assert_stats(stats, expected):
    assert list(stats) == list(STAT_NAMES)
    for name in STAT_NAMES:
        assert stats[name] == pytest.approx(expected[name], rel=1e-5, abs=1e-6), name


def torch_rmsprop_step(grad, lr, rho, eps):
    """From a zero mean square: ms = (1 - rho) g^2, step lr g / (sqrt(ms) + eps)."""
    return -lr * grad / (np.sqrt((1 - rho) * grad ** 2) + eps)


# -- the settings --------------------------------------------------------------------------------
def test_the_statistics_are_named_as_logged():
    assert STAT_NAMES == ("policy_loss", "value_loss", "entropy_loss", "explained_variance",
                          "grad_norm")


def test_the_optimizer_is_the_configs_rmsprop():
    """Decay rms_alpha, epsilon rms_epsilon; PyTorch's form by default (mean square from 0,
    epsilon outside the root), TF1's with tf1_rmsprop (from 1, inside)."""
    opt = make_model(rms_alpha=0.9, rms_epsilon=0.25).optimizer
    assert isinstance(opt, RMSprop) and opt.rho == 0.9 and opt.epsilon == 0.25
    assert opt.initial_accumulator == 0.0 and opt.epsilon_inside_sqrt is False
    tf1 = make_model(tf1_rmsprop=True).optimizer
    assert tf1.initial_accumulator == 1.0 and tf1.epsilon_inside_sqrt is True
    np.testing.assert_array_equal(tf1._velocities[3].numpy(), 1.0)


def test_the_model_keeps_the_configs_coefficients_and_its_network_kwargs():
    model = make_model(ent_coef=0.25, vf_coef=0.75, max_grad_norm=0.3, lam=0.5,
                       normalize_advantage=True)
    assert (model.ent_coef, model.vf_coef, model.gamma, model.lam, model.max_grad_norm,
            model.normalize_advantage) == (0.25, 0.75, GAMMA, 0.5, 0.3, True)
    assert model.network_kwargs == {"num_layers": 1, "num_hidden": 4}
    assert model.nsteps == 4 and model.num_envs == 1 and model.algorithm == "a2c"


def test_a_directly_built_model_has_empty_network_kwargs_and_xla():
    """Model(...) without network_kwargs: {} (what a saved model rebuilds its network from);
    without jit_compile: XLA."""
    from rlbase.a2c.model import Model
    model = Model(make_model().policy, 1, config())
    assert model.network_kwargs == {} and model.jit_compile is True


def test_the_action_masking_setting_is_the_configs():
    assert make_model().action_masking is False
    assert make_model(action_masks="info").action_masking == "info"


def test_xla_from_1500_updates_of_the_run_unless_told():
    """jit_compile None: XLA for runs of at least 1500 updates (2 envs x 4 steps = 8 steps
    an update: from 12,000 steps), none below; True or False decides alone."""
    def jit(total, **kw):
        return build_model(OBS_SPACE, gym.spaces.Discrete(3), 2, "mlp", {"num_hidden": 4},
                           A2CConfig.build(dict(nsteps=4, **kw), 2),
                           total_timesteps=total).jit_compile

    assert [jit(t) for t in (0, 11_999, 12_000, 10**6)] == [False, False, True, True]
    assert jit(10**6, jit_compile=False) is False and jit(0, jit_compile=True) is True


# -- the critic's targets ------------------------------------------------------------------------
@pytest.mark.parametrize("lam,expected", [(1.0, RETURNS), (0.5, GAE_RETURNS),
                                          (0.0, ONE_STEP_RETURNS)])
def test_the_critics_targets_with_an_episode_end(lam, expected):
    model = make_model(lam=lam)
    returns = model._returns(tf.constant(REWARDS[None], tf.float32),
                             tf.constant(DONES[None], tf.float32),
                             tf.fill([4], V0), tf.constant([V0]))
    np.testing.assert_allclose(returns.numpy(), expected, rtol=1e-6)


def test_gae_targets_of_two_envs_are_env_major():
    """Two envs, two steps each, rows env * nsteps + t; gamma 1, lam 0.5, V = 0 but env 1's
    second value 1 and last values (2, 3): env 0 deltas 1, 2 + 2 -> A = 1 + 0.5 * 4, 4;
    env 1 deltas 0 + 1 - 0, 0 + 3 - 1 -> A = 1 + 0.5 * 2, 2; targets A + V."""
    model = build_model(OBS_SPACE, gym.spaces.Discrete(3), 2, "mlp", {"num_hidden": 4},
                        A2CConfig.build(dict(nsteps=2, gamma=1.0, lam=0.5), 2))
    returns = model._returns(tf.constant([[1.0, 2.0], [0.0, 0.0]]), tf.zeros([2, 2]),
                             tf.constant([0.0, 0.0, 0.0, 1.0]), tf.constant([2.0, 3.0]))
    np.testing.assert_allclose(returns.numpy(), [3.0, 4.0, 2.0, 3.0], rtol=1e-6)


# -- one update ----------------------------------------------------------------------------------
@pytest.mark.parametrize("lam,returns", [(1.0, RETURNS), (0.5, GAE_RETURNS)])
def test_one_update_by_hand(lam, returns):
    """Logits 0.2, -0.1, 0, entropy coefficient 0.5, vf_coef 0.25, no clipping: the
    statistics before the step, then one RMSProp step (PyTorch's form) on exactly the heads'
    biases, each by its own gradient; every other weight stays 0."""
    logits = np.array([0.2, -0.1, 0.0])
    model = make_model(pi_bias=logits, ent_coef=0.5, vf_coef=0.25, lam=lam, rms_alpha=0.9)
    stats, _ = model.train(rollout(), 0.01)
    expected, grads = hand_update(logits, returns, 0.5, 0.25)
    assert_stats(stats, expected)
    pi_bias, v_bias = heads(model)
    np.testing.assert_allclose(np.append(pi_bias - logits, v_bias - V0),
                               torch_rmsprop_step(grads, 0.01, 0.9, 1e-5), rtol=1e-4)
    others = model.policy.trainable_variables
    for v in others[:3] + [others[4]]:
        np.testing.assert_array_equal(v.numpy(), 0.0)


def test_the_learning_rate_is_the_update_calls():
    """The same update at lr 0.02 moves each bias twice as far as at 0.01."""
    steps = []
    for lr in (0.01, 0.02):
        model = make_model()
        model.train(rollout(), lr)
        pi_bias, v_bias = heads(model)
        steps.append(np.append(pi_bias, v_bias - V0))
    np.testing.assert_allclose(steps[1], 2 * steps[0], rtol=1e-5)
    assert np.all(np.abs(steps[0]) > 1e-3)


def test_tf1_rmsprop_steps_from_a_mean_square_of_one():
    """ms = rho + (1 - rho) g^2, step lr g / sqrt(ms + eps), with eps 0.5 (so that a
    misplaced epsilon shows)."""
    model = make_model(tf1_rmsprop=True, rms_alpha=0.9, rms_epsilon=0.5)
    model.train(rollout(), 0.1)
    _, grads = hand_update(np.zeros(3), RETURNS, 0.0, 0.5)
    pi_bias, v_bias = heads(model)
    np.testing.assert_allclose(np.append(pi_bias, v_bias - V0),
                               -0.1 * grads / np.sqrt(0.9 + 0.1 * grads ** 2 + 0.5), rtol=1e-5)


def test_the_gradient_is_clipped_to_max_grad_norm_and_its_raw_norm_logged():
    """max_grad_norm 0.1, below the raw norm: the logged norm is the raw one; the mean square
    sees the clipped gradient g * 0.1 / norm. With epsilon 1 (TF1's form, from 1): step
    lr g' / sqrt(0.9 + 0.1 g'^2 + 1), which differs from the unclipped step."""
    model = make_model(max_grad_norm=0.1, tf1_rmsprop=True, rms_alpha=0.9, rms_epsilon=1.0)
    stats, _ = model.train(rollout(), 0.1)
    expected, grads = hand_update(np.zeros(3), RETURNS, 0.0, 0.5)
    assert expected["grad_norm"] > 0.5
    assert stats["grad_norm"] == pytest.approx(expected["grad_norm"], rel=1e-5)
    clipped = grads * 0.1 / expected["grad_norm"]
    pi_bias, v_bias = heads(model)
    np.testing.assert_allclose(np.append(pi_bias, v_bias - V0),
                               -0.1 * clipped / np.sqrt(0.9 + 0.1 * clipped ** 2 + 1.0),
                               rtol=1e-5)


def test_normalized_advantages():
    """normalize_advantage: A = (A - mean A) / (std A + 1e-8) in the policy loss and its
    gradient; the value loss keeps the raw targets."""
    logits = np.array([0.3, 0.0, -0.2])
    model = make_model(pi_bias=logits, normalize_advantage=True, rms_alpha=0.9)
    stats, _ = model.train(rollout(), 0.01)
    expected, grads = hand_update(logits, RETURNS, 0.0, 0.5, normalize=True)
    assert_stats(stats, expected)
    pi_bias, v_bias = heads(model)
    np.testing.assert_allclose(np.append(pi_bias - logits, v_bias - V0),
                               torch_rmsprop_step(grads, 0.01, 0.9, 1e-5), rtol=1e-4)


def test_an_update_under_action_masks_uses_the_acting_masks():
    """Action 1 masked on every row but the fourth (where it was taken): the log-probabilities
    and the entropy are those of the masked distribution the actions were drawn from."""
    masks = np.ones((4, 3), bool)
    masks[:3, 1] = False
    logits = np.array([0.2, -0.1, 0.0])
    model = make_model(pi_bias=logits, ent_coef=0.5, action_masks=True)
    stats, _ = model.train(rollout(masks), 0.0)
    z = np.exp(logits)
    rows = np.where(masks, z, 0.0)
    p = rows / rows.sum(axis=1, keepdims=True)
    logp = np.log(np.where(masks, p, 1.0))
    neglogp = -logp[np.arange(4), ACTIONS]
    entropy = -np.sum(np.where(masks, p * logp, 0.0), axis=1).mean()
    adv = RETURNS - V0
    assert stats["policy_loss"] == pytest.approx(np.mean(adv * neglogp), rel=1e-5)
    assert stats["entropy_loss"] == pytest.approx(-entropy, rel=1e-5)


def test_the_losses_of_a_policy_with_random_weights_against_numpy():
    """Weights drawn at random: logits and values differ per observation. A numpy forward
    pass (tanh hidden layer) gives the n-step targets from the last observation's value, the
    three losses, and the explained variance 1 - Var[R - V] / Var[R]."""
    model = make_model()
    rng = np.random.default_rng(3)
    for v in model.policy.trainable_variables:
        v.assign(rng.normal(0.0, 0.7, v.shape).astype(np.float32))
    w1, b1, wp, bp, wv, bv = (v.numpy().astype(np.float64)
                              for v in model.policy.trainable_variables)

    def forward(x):
        h = np.tanh(x @ w1 + b1)
        return h @ wp + bp, (h @ wv + bv)[:, 0]

    logits, values = forward(OBS.astype(np.float64))
    _, last = forward(LAST_OBS.astype(np.float64))
    returns = np.zeros(4)
    future = last[0]
    for t in reversed(range(4)):
        future = REWARDS[t] + GAMMA * future * (1.0 - DONES[t])
        returns[t] = future
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    p = np.exp(logp)
    adv = returns - values
    stats, _ = model.train(rollout(), 0.0)
    assert stats["policy_loss"] == pytest.approx(np.mean(adv * -logp[np.arange(4), ACTIONS]),
                                                 rel=1e-4)
    assert stats["value_loss"] == pytest.approx(np.mean(adv ** 2), rel=1e-4)
    assert stats["entropy_loss"] == pytest.approx(np.mean(np.sum(p * logp, axis=1)), rel=1e-4)
    assert stats["explained_variance"] == pytest.approx(1 - np.var(adv) / np.var(returns),
                                                        rel=1e-4)
