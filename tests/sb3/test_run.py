"""Port of SB3's tests/test_run.py: each algorithm built and trained briefly with SB3's
hyperparameters (action noise objects, clip_range_vf, normalize_advantage, ent_coef forms,
n_critics, train_freq forms), and the options rlbase does not have refused in one line."""

import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise
from rlbase.compat.sb3 import A2C, DDPG, DQN, PPO, SAC, TD3

ONE_LINE = r"^[^\n]+$"


@pytest.mark.slow
@pytest.mark.parametrize("model_class", [TD3, DDPG])
@pytest.mark.parametrize("action_noise", [
    NormalActionNoise(np.zeros(1), 0.1 * np.ones(1)),
    OrnsteinUhlenbeckActionNoise(np.zeros(1), 0.1 * np.ones(1))], ids=["normal", "ou"])
def test_deterministic_pg(model_class, action_noise, tmp_path):
    """The noise object becomes the model's noise (kind and scale saved, rebuilt on load)."""
    model = model_class("MlpPolicy", "Pendulum-v1", policy_kwargs=dict(net_arch=[64, 64]),
                        learning_starts=100, buffer_size=250, action_noise=action_noise,
                        seed=0)
    model.learn(total_timesteps=200)
    kind = type(model.model.action_noise)
    assert kind is type(action_noise) and model.model.param_noise is None
    np.testing.assert_array_equal(model.model.action_noise.sigma, [0.1])
    model.save(str(tmp_path / "m.zip"))
    loaded = model_class.load(str(tmp_path / "m.zip"), env="Pendulum-v1")
    assert type(loaded.model.action_noise) is kind
    name = "normal" if kind is NormalActionNoise else "ou"
    assert loaded.model.config.noise_type == f"{name}_0.1"


@pytest.mark.parametrize("model_class, action_noise", [
    (TD3, NormalActionNoise(np.zeros(1), 0.1 * np.ones(1))),
    (DDPG, OrnsteinUhlenbeckActionNoise(np.zeros(1), 0.1 * np.ones(1)))], ids=["td3", "ddpg"])
def test_action_noise_is_the_models_noise_and_survives_save_load(model_class, action_noise,
                                                                 tmp_path):
    """The quick form of the case above (no training)."""
    model = model_class("MlpPolicy", "Pendulum-v1", action_noise=action_noise, seed=0)
    kind = type(action_noise)
    assert type(model.model.action_noise) is kind and model.model.param_noise is None
    model.save(str(tmp_path / "m.zip"))
    loaded = model_class.load(str(tmp_path / "m.zip"))
    assert type(loaded.model.action_noise) is kind
    np.testing.assert_array_equal(loaded.model.action_noise.sigma, [0.1])


def test_action_noise_none_is_no_noise_and_unexpressible_noise_is_refused():
    model = TD3("MlpPolicy", "Pendulum-v1", action_noise=None)
    assert model.model.action_noise is None and model.model.param_noise is None
    for noise in (NormalActionNoise(np.ones(1), 0.1 * np.ones(1)),
                  NormalActionNoise(np.zeros(2), np.array([0.1, 0.2])),
                  OrnsteinUhlenbeckActionNoise(np.zeros(1), 0.1 * np.ones(1), theta=0.3)):
        with pytest.raises(RLBaseError, match=ONE_LINE) as info:
            TD3("MlpPolicy", "Pendulum-v1", action_noise=noise)
        assert "noise_type='normal_S'" in str(info.value)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_a2c(env_id):
    model = A2C("MlpPolicy", env_id, seed=0, policy_kwargs=dict(net_arch=[16]), verbose=1)
    model.learn(total_timesteps=64)


@pytest.mark.parametrize("model_class", [A2C, PPO])
@pytest.mark.parametrize("normalize_advantage", [False, True])
def test_advantage_normalization(model_class, normalize_advantage):
    model = model_class("MlpPolicy", "CartPole-v1", n_steps=64,
                        normalize_advantage=normalize_advantage)
    assert model.model.config.normalize_advantage is normalize_advantage
    model.learn(64)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
@pytest.mark.parametrize("clip_range_vf", [None, 0.2, -0.2])
def test_ppo(env_id, clip_range_vf):
    kwargs = dict(seed=0, policy_kwargs=dict(net_arch=[16]), verbose=1,
                  clip_range_vf=clip_range_vf)
    if clip_range_vf is not None and clip_range_vf < 0:
        with pytest.raises(RLBaseError, match="cliprange_vf must be > 0"):
            PPO("MlpPolicy", env_id, **kwargs)
        return
    model = PPO("MlpPolicy", env_id, n_steps=512, n_epochs=2, **kwargs)
    config = model.model.config
    assert (config.clip_value, config.cliprange_vf) == (clip_range_vf is not None, clip_range_vf)
    model.learn(total_timesteps=1000)


def test_ppo_clip_range_vf_schedule_is_its_own():
    """A clip_range_vf schedule is evaluated at every update, apart from clip_range."""
    seen = []
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=16, batch_size=16, n_epochs=1,
                clip_range_vf=lambda frac: seen.append(frac) or 0.1, seed=0)
    model.learn(32)
    assert seen[-2:] == [1.0, 0.5] and model.model.config.clip_value  # (and range checks)


@pytest.mark.parametrize("target_kl, steps", [(None, 2 * 4), (1e-12, 1), (1.0, 2 * 4)])
def test_ppo_target_kl_stops_the_epochs_early(target_kl, steps):
    """The first minibatch moves nothing yet (KL 0), so with a tiny target_kl only its step
    is applied; a loose one changes nothing."""
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=16, n_epochs=4,
                target_kl=target_kl, seed=0)
    model.learn(32)
    assert int(model.model.optimizer.iterations.numpy()) == steps


@pytest.mark.parametrize("ent_coef", ["auto", 0.01, "auto_0.01"])
def test_sac(ent_coef):
    model = SAC("MlpPolicy", "Pendulum-v1", policy_kwargs=dict(net_arch=[64, 64]),
                learning_starts=100, verbose=1, buffer_size=250, ent_coef=ent_coef,
                action_noise=None)
    assert np.isclose(np.exp(model.model.log_alpha.numpy()), 1.0 if ent_coef == "auto" else 0.01)
    model.learn(total_timesteps=200)


def test_sac_action_noise_is_refused_in_one_line():
    with pytest.raises(RLBaseError, match="action_noise must be None"):
        SAC("MlpPolicy", "Pendulum-v1", action_noise=NormalActionNoise(np.zeros(1), np.zeros(1)))


@pytest.mark.parametrize("n_critics", [1, 3])
def test_n_critics(n_critics):
    """SAC's critics are two: other counts are refused; TD3's n_critics=1 is DDPG's critic."""
    with pytest.raises(RLBaseError, match="n_critics must be 2 for sac"):
        SAC("MlpPolicy", "Pendulum-v1", policy_kwargs=dict(net_arch=[64, 64],
                                                           n_critics=n_critics))
    if n_critics == 1:
        model = TD3("MlpPolicy", "Pendulum-v1", policy_kwargs=dict(n_critics=1))
        assert len(model.model.critics) == 1
    else:
        with pytest.raises(RLBaseError, match="n_critics must be 1 or 2 for ddpg"):
            TD3("MlpPolicy", "Pendulum-v1", policy_kwargs=dict(n_critics=n_critics))


def test_dqn():
    model = DQN("MlpPolicy", "CartPole-v1", policy_kwargs=dict(net_arch=[64, 64]),
                learning_starts=100, buffer_size=500, learning_rate=3e-4, verbose=1)
    model.learn(total_timesteps=200)


@pytest.mark.slow
@pytest.mark.parametrize("train_freq", [4, (4, "step")])
def test_train_freq(tmp_path, train_freq):
    model = SAC("MlpPolicy", "Pendulum-v1", policy_kwargs=dict(net_arch=[16, 16]),
                learning_starts=100, buffer_size=10000, train_freq=train_freq)
    model.learn(total_timesteps=150)
    model.save(str(tmp_path / "test_save.zip"))
    model = SAC.load(str(tmp_path / "test_save.zip"), env="Pendulum-v1")
    model.learn(total_timesteps=150)
    model = SAC.load(str(tmp_path / "test_save.zip"), train_freq=train_freq, env="Pendulum-v1")
    model.learn(total_timesteps=150)


@pytest.mark.parametrize("train_freq", ["4", ("1", "episode"), "non_sense", (1, "close"),
                                        (1, "episode")])
def test_train_freq_fail(train_freq):
    """Bad forms, and SB3's episode unit (rlbase counts env steps), are one-line errors."""
    with pytest.raises(RLBaseError, match=ONE_LINE):
        SAC("MlpPolicy", "Pendulum-v1", learning_starts=100, train_freq=train_freq)


# -- SB3 options rlbase does not have: refused, never ignored -------------------------------
@pytest.mark.parametrize("model_class, name, value", [
    (PPO, "use_sde", True), (A2C, "use_sde", True), (SAC, "use_sde", True),
    (PPO, "sde_sample_freq", 4), (SAC, "sde_sample_freq", 4),
    (PPO, "rollout_buffer_class", object), (A2C, "rollout_buffer_kwargs", {}),
    (DQN, "replay_buffer_class", object), (SAC, "replay_buffer_kwargs", {"a": 1}),
    (TD3, "replay_buffer_class", object), (DQN, "n_steps", 3), (TD3, "n_steps", 3),
    (TD3, "optimize_memory_usage", True), (DQN, "optimize_memory_usage", True),
    (PPO, "stats_window_size", 10), (DQN, "stats_window_size", 10)])
def test_options_rlbase_lacks_are_refused_in_one_line(model_class, name, value):
    with pytest.raises(RLBaseError, match=rf"^[^\n]*{name} must be[^\n]*$"):
        model_class("MlpPolicy", "Pendulum-v1" if model_class in (SAC, TD3) else
                    "CartPole-v1", **{name: value})


@pytest.mark.parametrize("model_class", [PPO, A2C, DQN, SAC, TD3])
def test_sb3_defaults_of_those_options_are_accepted(model_class):
    defaults = dict(stats_window_size=100, replay_buffer_class=None, replay_buffer_kwargs=None,
                    n_steps=1, optimize_memory_usage=False) if model_class in (DQN, SAC, TD3) \
        else dict(stats_window_size=100, use_sde=False, sde_sample_freq=-1,
                  rollout_buffer_class=None, rollout_buffer_kwargs=None)
    model_class("MlpPolicy", "Pendulum-v1" if model_class in (SAC, TD3) else "CartPole-v1",
                _init_setup_model=False, **defaults)
