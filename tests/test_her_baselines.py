"""Baselines' --alg=her: DDPG's options it needs (target clipping, action penalty, random
actions, target update interval, normalizer clip and floor) by exact values on tiny inputs,
Baselines' spellings, the settings derived from the episode length, and the command line."""

import copy

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf
from process_util import cli_in_process

from rlbase.common.errors import RLBaseError
from rlbase.common.families.her_baselines import (
    BASELINES_HER,
    horizon_settings,
    refuse_baselines_names,
)
from rlbase.ddpg.config import DDPGConfig
from rlbase.ddpg.ddpg import learn
from rlbase.ddpg.graph import clip_targets, policy_loss
from rlbase.ddpg.observations import ObservationStats
from rlbase.registry import resolve
from tests.test_ddpg import _batch, _fill_for_hand_targets, _hand_targets, fill, make_model


def test_critic_targets_are_clipped_to_the_bounds():
    model = make_model(target_min=-0.3, target_max=0.5)
    _fill_for_hand_targets(model, twin=False)
    next_obs = np.array([[1.0, 2.0], [0.5, -1.0], [0.0, 0.0], [3.0, 1.0]], np.float32)
    rewards = np.array([1.0, -0.5, 0.0, -2.0], np.float32)
    dones = np.zeros(4, np.float32)
    got = model.critic_targets(rewards, next_obs, dones, None).numpy()
    raw = _hand_targets(rewards, next_obs, dones, None, False)
    np.testing.assert_allclose(got, np.clip(raw, -0.3, 0.5), rtol=1e-5)
    assert got[0] == np.float32(0.5) and got[3] == np.float32(-0.3) and -0.3 < got[2] < 0.5


def test_clip_targets_each_side_alone():
    x = tf.constant([-3.0, -1.0, 0.5, 2.0])
    np.testing.assert_array_equal(clip_targets(x, None, None).numpy(), [-3.0, -1.0, 0.5, 2.0])
    np.testing.assert_array_equal(clip_targets(x, -2.0, None).numpy(), [-2.0, -1.0, 0.5, 2.0])
    np.testing.assert_array_equal(clip_targets(x, None, 0.0).numpy(), [-3.0, -1.0, 0.0, 0.0])


@pytest.mark.parametrize("l2", [0.0, 1.0, 2.5])
def test_actor_loss_adds_the_action_penalty(l2):
    """Actor 3 ReLU units of weight 0.1, output bias 0.8: a = tanh(0.3 relu(0.1 sum s) + 0.8);
    critic weights 0.1: Q = 0.3 relu(0.1 (sum s + a)); loss = -mean Q + l2 mean a^2."""
    model = make_model(action_l2=l2)
    fill(model.actor, 0.1, 0.8)
    fill(model.critics[0], 0.1)
    obs = np.array([[1.0, 2.0], [-4.0, 1.0], [0.5, 0.5]], np.float32)
    s = obs.sum(axis=1)
    a = np.tanh(0.3 * np.maximum(0.1 * s, 0) + 0.8)
    q = 0.3 * np.maximum(0.1 * (s + a), 0)
    got = policy_loss(model.q_value, model.critics[0], model.actor, obs, l2).numpy()
    np.testing.assert_allclose(got, -q.mean() + l2 * np.mean(a ** 2), rtol=1e-5)


def test_random_eps_replaces_whole_rows_by_uniform_actions():
    model = make_model(num_actions=2, random_eps=0.5)
    clean = np.zeros((64, 2), np.float32)
    noisy = np.full((64, 2), 0.25, np.float32)
    rng = copy.deepcopy(model.noise_rng)
    got = model.explore(clean, noisy, explore=True)
    rows = rng.random(64) < 0.5
    want = np.where(rows[:, None], rng.uniform(-1.0, 1.0, (64, 2)), 0.25)
    np.testing.assert_array_equal(got, want)
    assert 0 < rows.sum() < 64
    np.testing.assert_array_equal(model.explore(clean, noisy, explore=False), clean)
    never = make_model(num_actions=2)
    np.testing.assert_array_equal(never.explore(clean, noisy, True), noisy)


def test_targets_move_every_target_update_gradient_steps():
    model = make_model(tau=0.25, target_update_gradient_steps=3, gradient_steps=1)
    before = [v.numpy().copy() for v in model.target_actor.weights]
    for step, targets_same in _gradient_steps(model, before, 3):
        assert targets_same == (step < 3), step
    for b, online, target in zip(before, model.actor.weights, model.target_actor.weights):
        np.testing.assert_allclose(target.numpy(), 0.75 * b + 0.25 * online.numpy(),
                                   rtol=1e-6, atol=1e-7)
    assert model.train_fn.function.experimental_get_tracing_count() == 1


def test_normalizer_clip_and_std_floor():
    space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    stats = ObservationStats(space, True, clip=2.0, std_min=0.01)
    stats.rms[0].mean, stats.rms[0].var = np.array([1.0, 3.0]), np.array([0.0, 4e-6])
    stats.refresh()  # variances below 0.01**2: the floor applies
    np.testing.assert_allclose(stats.std, [0.01, 0.01])
    obs = tf.constant([[1.005, 3.0], [1.5, 2.0]])
    got = stats.normalize(obs, stats.mean, stats.std).numpy()
    np.testing.assert_allclose(got, [[0.5, 0.0], [2.0, -2.0]], rtol=1e-3)
    default = ObservationStats(space, True)
    default.rms[0].var = np.array([0.0, 4.0])
    default.refresh()
    np.testing.assert_allclose(default.std, [0.1, 2.0], rtol=1e-6)


def test_baselines_her_spellings_set_the_fields():
    given = {"polyak": 0.95, "pi_lr": 2e-3, "Q_lr": 3e-3, "n_batches": 40, "gamma": 0.98,
             "clip_return": True, "norm_clip": 4, "norm_eps": 0.01, "noise_eps": 0.2}
    with pytest.warns(DeprecationWarning):
        c = DDPGConfig.build(given)
    assert c.tau == pytest.approx(0.05) and (c.actor_lr, c.critic_lr) == (2e-3, 3e-3)
    assert c.gradient_steps == 40 and c.target_min == pytest.approx(-50.0)
    assert (c.obs_clip, c.obs_std_min, c.noise_type) == (4.0, 0.01, "normal_0.2")
    with pytest.warns(DeprecationWarning):
        assert DDPGConfig.build({"clip_return": False}).target_min is None


@pytest.mark.parametrize("bad", [{"target_min": 1.0, "target_max": 0.0},
                                 {"random_eps": 1.5}, {"action_l2": -1.0},
                                 {"target_update_gradient_steps": 0},
                                 {"obs_clip": 0.0},
                                 {"obs_std_min": 0.0}])
def test_bad_values_are_one_line_errors(bad):
    with pytest.raises(RLBaseError, match=r"^ddpg: [^\n]*$"):
        DDPGConfig.build(bad)


def test_horizon_settings():
    assert horizon_settings(50, 2, {}) == pytest.approx(
        {"gamma": 0.98, "target_min": -50.0, "train_freq": 100})
    assert horizon_settings(50, 1, {"gamma": 0.9}) == pytest.approx(
        {"target_min": -10.0, "train_freq": 50})
    assert horizon_settings(10, 1, {"gamma": 1.0, "train_freq": 5}) == {"target_min": None}
    assert horizon_settings(10, 1, {"clip_return": False}) == pytest.approx(
        {"gamma": 0.9, "train_freq": 10})
    with pytest.raises(RLBaseError, match="time limit"):
        horizon_settings(None, 1, {})


def test_her_alias_is_ddpg_with_baselines_settings():
    name, preset = resolve("her")
    assert name == "ddpg" and preset is BASELINES_HER
    hp = {k: v for k, v in preset.items() if k not in ("num_layers", "num_hidden", "num_env")}
    c = DDPGConfig.build({**hp, **horizon_settings(50, 1, {})})
    assert (c.tau, c.target_update_gradient_steps, c.gradient_steps, c.train_freq) == \
        (0.05, 40, 40, 50)
    assert (c.action_l2, c.random_eps, c.target_max, c.batch_size) == (1.0, 0.3, 0.0, 256)
    assert c.replay_buffer_class == "her" and c.obs_std_min == 0.01


def test_baselines_names_without_a_meaning_here_are_refused():
    refuse_baselines_names({"gamma": 0.9})
    with pytest.raises(RLBaseError, match=r"^her: Baselines' n_cycles=10 [^\n]*log_interval"):
        refuse_baselines_names({"n_cycles": 10})
    env = gym.make("rlbase.envs:BitFlippingEnv-v0", n_bits=3, continuous=True)
    with pytest.raises(RLBaseError, match=r"^her: Baselines' layers=3 [^\n]*num_layers=N$"):
        learn("mlp", env, 10, layers=3)


def test_cli_alg_her(tmp_path, capsys):
    from rlbase.run import main

    flags = ["--alg=her", "--env=rlbase.envs:BitFlippingEnv-v0",
             "--env_kwargs={'n_bits': 3, 'continuous': True, 'max_episode_steps': 4}"]
    capsys.readouterr()
    main([*flags, "--num_timesteps=40", "--batch_size=8", "--gradient_steps=2",
          f"--log_path={tmp_path}"])
    banner = capsys.readouterr().out
    assert "Training her (ddpg)" in banner and "with 1 env(s)" in banner
    for text in ("'num_layers': 3, 'num_hidden': 256",
                 "'target_update_gradient_steps': 40",
                 "'gradient_steps': 2", "'train_freq': 4", "'gamma': 0.75",
                 "'target_min': -4.0", "'target_max': 0.0", "'random_eps': 0.3",
                 "'replay_buffer_class': 'her'"):
        assert text in banner, text
    code, _, err = cli_in_process(capsys, *flags, "--num_timesteps=40", "--n_cycles=10")
    assert code == 2
    assert err.strip().splitlines()[-1].startswith("rlbase: error: her: Baselines' n_cycles")


def test_target_updates_with_a_policy_delay_wait_for_an_actor_step():
    """policy_delay 2, target_update_gradient_steps 3: the targets first move at gradient step
    6, the first that is both a multiple of 3 and an actor step."""
    model = make_model(tau=0.25, policy_delay=2, target_update_gradient_steps=3)
    before = [v.numpy().copy() for v in model.target_actor.weights]
    for step, targets_same in _gradient_steps(model, before, 6):
        assert targets_same == (step < 6), step


def _gradient_steps(model, before, count):
    """Runs `count` gradient steps on random batches without target noise; yields each step's
    number and whether the target actor still equals `before`."""
    rng = np.random.default_rng(0)
    mean, std, lr = np.zeros(2, np.float32), np.ones(2, np.float32), np.float32(1e-3)
    for step in range(1, count + 1):
        batch = _batch(rng)
        noise = np.zeros(batch[1].shape, np.float32)
        model.train_fn(*batch, noise, batch[0][0, :1], mean, std, lr, lr)
        yield step, all(np.array_equal(b, v.numpy())
                        for b, v in zip(before, model.target_actor.weights))
