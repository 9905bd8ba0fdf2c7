"""PPO's model beyond its losses (rlbase/ppo/model.py), on numbers worked out by hand: the
clip fraction's abs(r - 1), the optimizer and settings the model is built with, XLA's threshold,
the shuffling seed's advance, the advantages' normalization epsilon, minibatches of single
samples, the value clipping inside an update (and switched off), and minibatches of whole env
sequences (a recurrent policy). Cheap checks first: mutation testing (tests/mutation/) runs
this file once per mutant and stops at the first failure. The zero-weight policy and its
rollout are tests/test_ppo_losses.py's."""

import math

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from rlbase.common.errors import RLBaseError
from rlbase.common.loops.rollout import Rollout
from rlbase.common.tf_util import Adam
from rlbase.ppo.config import PPOConfig
from rlbase.ppo.model import build_model, clipped_surrogate
from tests.test_ppo_losses import ACTIONS, ADV, V0, make_model, rollout, second_epoch_by_hand


def test_the_clip_fraction_counts_ratios_more_than_the_clip_range_from_one():
    """Ratios 0.9, 1.05, 1.3, 0.7 at clip range 0.2: |r - 1| = 0.1, 0.05, 0.3, 0.3, so 2 of 4."""
    ratios = np.array([0.9, 1.05, 1.3, 0.7], np.float32)
    _, _, clipfrac = clipped_surrogate(tf.constant(-np.log(ratios)), tf.zeros(4), tf.ones(4),
                                       tf.constant(0.2))
    assert clipfrac.numpy() == 0.5


def test_the_optimizer_is_adam_with_epsilon_1e_5():
    """PPO2's and SB3's Adam epsilon, 1e-5 (Keras' own default is 1e-7)."""
    model = make_model()
    assert isinstance(model.optimizer, Adam) and model.optimizer.epsilon == 1e-5


def test_the_model_keeps_its_network_kwargs():
    """What a saved model rebuilds its network from."""
    assert make_model().network_kwargs == {"num_layers": 1, "num_hidden": 4}


def test_the_action_masking_setting_is_the_configs():
    """What the rollout reads its masks by (False: none), read as the config gives it."""
    assert make_model().action_masking is False
    assert make_model(action_masks="info").action_masking == "info"


def test_xla_from_200_updates_of_the_run_unless_told():
    """jit_compile None: XLA for runs of at least 200 updates (2 envs x 4 steps = 8 steps an
    update: from 1600 steps), none below and none for 0 steps; True or False decides alone."""
    def jit(total, **kw):
        config = PPOConfig.build(dict(nsteps=4, nminibatches=1, **kw), 2)
        return build_model(gym.spaces.Box(-1.0, 1.0, (2,), np.float32), gym.spaces.Discrete(3),
                           2, "mlp", {"num_hidden": 4}, config, total_timesteps=total).jit_compile

    assert [jit(t) for t in (0, 1599, 1600, 10**6)] == [False, False, True, True]
    assert jit(10**6, jit_compile=False) is False and jit(0, jit_compile=True) is True


def test_each_update_advances_the_shuffling_seeds_counter_by_one():
    """The minibatch order of update k comes from the seed (s, c + k): each update adds
    exactly (0, 1), so a resumed run (the seed is checkpointed) shuffles as the unbroken one."""
    model = make_model(nminibatches=2)
    start = model.shuffle_seed.numpy().copy()
    model.train(rollout(), 0.0, 0.2, 0.2)
    np.testing.assert_array_equal(model.shuffle_seed.numpy(), start + [0, 1])
    model.train(rollout(), 0.0, 0.2, 0.2)
    np.testing.assert_array_equal(model.shuffle_seed.numpy(), start + [0, 2])


def test_advantage_normalization_divides_by_std_plus_1e_8():
    """gamma = lam = 0 and V = 0, so A = r = (1e-8, -1e-8, 1e-8, -1e-8): mean 0, std 1e-8,
    each normalized to +-1e-8 / (1e-8 + 1e-8) = +-0.5. Uniform policy, entropy coefficient 0:
    the gradient on the policy head's biases is -(1/4) sum_i A_i 1{a_i = j} = (-0.125, 0.125, 0)
    (actions 0, 2, 2, 1), on the value bias 0.5 mean(V - R) = 0: grad_norm 0.125 sqrt(2)."""
    model = make_model(gamma=0.0, lam=0.0, ent_coef=0.0, normalize_advantage=True)
    model.policy.trainable_variables[5].assign([0.0])
    one = rollout()
    one.rewards = np.array([[1e-8, -1e-8, 1e-8, -1e-8]], np.float32)
    stats, _ = model.train(one, 0.0, 0.2, 0.2)
    assert stats["grad_norm"] == pytest.approx(0.125 * math.sqrt(2), rel=1e-5)
    assert stats["policy_gradient_loss"] == pytest.approx(0.0, abs=1e-7)


def test_single_sample_minibatches_average_to_the_batchs_statistics():
    """4 minibatches of one sample each, 2 epochs at lr 0: the eight steps' statistics average
    to the whole batch's: -mean(A), 0.5 mean(A^2), H of the uniform policy, nothing clipped."""
    stats, _ = make_model(noptepochs=2, nminibatches=4).train(rollout(), 0.0, 0.2, 0.2)
    assert stats["policy_gradient_loss"] == pytest.approx(-ADV.mean(), rel=1e-5)
    assert stats["value_loss"] == pytest.approx(0.5 * np.mean(ADV ** 2), rel=1e-5)
    assert stats["entropy_loss"] == pytest.approx(-math.log(3), rel=1e-5)
    assert stats["clip_fraction"] == 0.0 and stats["approx_kl"] == 0.0


def test_value_clipping_in_an_update_and_switched_off():
    """Two epochs at lr 0.1, the value's clip range 0.02 (the policy's 0.2): the first epoch's
    value loss is 0.5 mean(A^2) either way (V = V_old); in the second the value V1 moved about
    0.1 from V_old = 0.5, so with clip_value the loss is 0.5 mean(max((V1 - R)^2,
    (V_old + clip(V1 - V_old, -0.02, 0.02) - R)^2)), and without it 0.5 mean((V1 - R)^2)."""
    one_step = make_model()
    one_step.train(rollout(), 0.1, 0.2, 0.02)
    _, _, v1 = second_epoch_by_hand(one_step)
    assert abs(v1 - V0) > 0.05
    returns = ADV + V0
    clipped = V0 + np.clip(v1 - V0, -0.02, 0.02)
    first = 0.5 * np.mean(ADV ** 2)
    with_clip = 0.5 * np.mean(np.maximum((v1 - returns) ** 2, (clipped - returns) ** 2))
    without = 0.5 * np.mean((v1 - returns) ** 2)
    assert abs(with_clip - without) > 1e-3
    stats, _ = make_model(noptepochs=2).train(rollout(), 0.1, 0.2, 0.02)
    assert stats["value_loss"] == pytest.approx((first + with_clip) / 2, rel=1e-5)
    stats, _ = make_model(noptepochs=2, clip_value=False).train(rollout(), 0.1, 0.2, 0.02)
    assert stats["value_loss"] == pytest.approx((first + without) / 2, rel=1e-5)


# -- a recurrent policy: minibatches of whole env sequences ------------------------------------
# Env 1 of the recurrent rollout: rewards 0, no episode end, V = 0.5 everywhere, gamma = lam =
# 0.5: deltas -0.25 each; GAE from the last step back -0.25, -0.3125, -0.328125, -0.33203125.
ADV_ENV1 = np.array([-0.33203125, -0.328125, -0.3125, -0.25])


def make_recurrent_model(num_envs=2, **kw):
    """An LSTM policy (4 units) with every weight zero but the value bias V0: its cell and
    output stay 0 from a zero state, so the policy is uniform over 3 actions, the value V0."""
    hp = dict(nsteps=4, nminibatches=2, noptepochs=1, gamma=0.5, lam=0.5, ent_coef=0.0,
              vf_coef=0.5, max_grad_norm=0.5, normalize_advantage=False, seed=0,
              jit_compile=False)
    hp.update(kw)
    model = build_model(gym.spaces.Box(-1.0, 1.0, (2,), np.float32), gym.spaces.Discrete(3),
                        num_envs, "lstm", {"nlstm": 4}, PPOConfig.build(hp, num_envs))
    for v in model.policy.trainable_variables:
        v.assign(tf.zeros_like(v))
    model.policy.trainable_variables[-1].assign([V0])
    return model


def recurrent_rollout():
    """Env 0: the feed-forward tests' rollout; env 1: zero rewards, no episode end."""
    one = rollout()
    obs = np.concatenate([one.obs, -one.obs])
    return Rollout(obs=obs, actions=np.concatenate([ACTIONS, [1, 1, 0, 2]]),
                   rewards=np.concatenate([one.rewards, np.zeros((1, 4), np.float32)]),
                   bootstraps=np.zeros((2, 4), np.float32),
                   dones=np.concatenate([one.dones, np.zeros((1, 4), np.float32)]),
                   starts=np.zeros(8, np.float32), state=np.zeros((2, 8), np.float32),
                   last_obs=np.array([[0.2, 0.2], [0.0, 0.1]], np.float32),
                   last_state=np.zeros((2, 8), np.float32),
                   last_starts=np.zeros(2, np.float32))


def test_recurrent_minibatches_are_whole_env_sequences():
    """2 envs x 4 steps in 2 minibatches of one env each, 3 epochs at lr 0: the six steps'
    statistics average to the whole batch's (-mean(A), 0.5 mean(A^2) over both envs' GAE);
    nminibatches must divide the number of envs (2 of 4 envs is fine, 2 of 3 is refused)."""
    adv = np.concatenate([ADV, ADV_ENV1])
    model = make_recurrent_model(noptepochs=3)
    stats, _ = model.train(recurrent_rollout(), 0.0, 0.2, 0.2)
    assert stats["policy_gradient_loss"] == pytest.approx(-adv.mean(), rel=1e-5)
    assert stats["value_loss"] == pytest.approx(0.5 * np.mean(adv ** 2), rel=1e-5)
    assert stats["entropy_loss"] == pytest.approx(-math.log(3), rel=1e-5)
    assert model.nunits == 2 and model.unit_len == 4
    assert make_recurrent_model(num_envs=4).nunits == 4
    with pytest.raises(RLBaseError, match=r"nminibatches \(2\) must divide the number of envs "
                                        r"\(3\)"):
        make_recurrent_model(num_envs=3)
