"""The model classes take Stable-Baselines3's parameter names (rlbase/docs/sb3_names.md)."""

import pytest

from rlbase import A2C, DQN, PPO, TD3
from rlbase.common.envs.make import make_vec_env
from rlbase.common.errors import RLBaseError
from rlbase.compat.sb3.policy_kwargs import translate_policy_kwargs


def test_ppo_with_sb3_names_builds_what_rlbase_names_build():
    model = PPO("MlpPolicy", "CartPole-v1", learning_rate=3e-4, n_steps=64, batch_size=32,
                n_epochs=3, gae_lambda=0.9, clip_range=0.1,
                policy_kwargs=dict(net_arch=[32, 16], activation_fn="relu"))
    hp = model.model.hyperparameters
    assert (hp["lr"], hp["nsteps"], hp["nminibatches"], hp["noptepochs"], hp["lam"],
            hp["cliprange"]) == (3e-4, 64, 2, 3, 0.9, 0.1)
    torso = model.model.policy.torso
    assert [d.units for d in torso.hidden] == [32, 16]
    model.learn(64)  # and it trains


def test_torch_activation_classes_are_refused_with_the_keras_name_to_write():
    class ReLU:  # stands for torch.nn.ReLU
        pass

    with pytest.raises(RLBaseError, match="write activation_fn='relu'"):
        translate_policy_kwargs("ppo", {"activation_fn": ReLU})
    _, kwargs = translate_policy_kwargs("ppo", {"activation_fn": "relu"})
    assert kwargs == {"activation": "relu"}


def test_net_arch_dict_gives_a_separate_value_torso():
    _, kwargs = translate_policy_kwargs("a2c", {"net_arch": dict(pi=[64, 64], vf=[64, 64])})
    assert kwargs == {"value_network": "copy", "layer_sizes": [64, 64]}
    with pytest.raises(RLBaseError, match="same widths"):
        translate_policy_kwargs("a2c", {"net_arch": dict(pi=[64], vf=[32])})


def test_dqn_net_arch_is_the_whole_q_network_and_train_freq_tuples():
    hyper, kwargs = translate_policy_kwargs("dqn", {"net_arch": [256, 256]})
    assert (hyper, kwargs) == ({"hiddens": ()}, {"layer_sizes": [256, 256]})
    # SB3's (n, "step") counts vector steps: n * num_envs env steps; its gradient_steps=-1
    # is as many gradient steps as env steps between phases. A plain number is env steps.
    env = make_vec_env("CartPole-v1", num_env=4, seed=0)
    model = DQN("MlpPolicy", env, train_freq=(4, "step"), gradient_steps=-1,
                target_update_interval=50, learning_rate=1e-3, buffer_size=1000,
                learning_starts=10, policy_kwargs=dict(net_arch=[8]))
    config = model.model.config
    assert (config.train_freq, config.gradient_steps, config.target_update_interval,
            config.lr, config.hiddens) == (16, 16, 50, 1e-3, ())
    assert model.model.network_kwargs == {"layer_sizes": [8]}
    model = DQN("MlpPolicy", env, train_freq=4, gradient_steps=-1, learning_starts=10)
    assert (model.model.config.train_freq, model.model.config.gradient_steps) == (4, 4)
    with pytest.raises(RLBaseError, match=r"^dqn: train_freq=\(1, 'episode'\): .*env steps"):
        DQN("MlpPolicy", "CartPole-v1", train_freq=(1, "episode"))
    with pytest.warns(DeprecationWarning, match="'target_network_update_freq' is deprecated"):
        model = DQN("MlpPolicy", "CartPole-v1", target_network_update_freq=70)
    assert model.model.config.target_update_interval == 70


def test_td3_learning_rate_sets_both_networks():
    model = TD3("MlpPolicy", "Pendulum-v1", learning_rate=5e-4, learning_starts=10,
                policy_kwargs=dict(net_arch=[16, 16]))
    hp = model.model.hyperparameters
    assert hp["actor_lr"] == hp["critic_lr"] == 5e-4
    assert hp["twin_q"] and hp["policy_delay"] == 2
    # SB3's name for a TD3 preset replaces the preset.
    model = TD3("MlpPolicy", "Pendulum-v1", target_policy_noise=0.3,
                policy_kwargs=dict(net_arch=[8]))
    config = model.model.config
    assert (config.target_noise, config.policy_delay, config.twin_q) == (0.3, 2, True)


def test_one_setting_under_two_names_is_an_error():
    with pytest.raises(RLBaseError, match="nsteps is given twice"):
        A2C("MlpPolicy", "CartPole-v1", n_steps=5, nsteps=5)
    with pytest.raises(RLBaseError, match="batch_size=30: must divide"):
        PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=30)
