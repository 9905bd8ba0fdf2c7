"""SB3's policy_kwargs keys as users write them: each builds the network it describes, or is
refused in one line that says what to write."""

import keras
import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.compat.sb3 import A2C, DQN, PPO, SAC, TD3
from rlbase.compat.sb3.policy_kwargs import translate_policy_kwargs


def dense_widths(layer):
    return [w.shape[-1] for w in layer.weights if len(w.shape) == 2]


def test_net_arch_list_gives_a2c_and_ppo_separate_policy_and_value_networks():
    """SB3 builds separate pi and vf MLPs from a list net_arch (it shares no MLP layer)."""
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=16, policy_kwargs=dict(net_arch=[16, 8]))
    policy = model.model.policy
    assert dense_widths(policy.torso) == [16, 8] == dense_widths(policy.value_torso)
    fields, kwargs = translate_policy_kwargs("a2c", {"net_arch": [32]})
    assert (fields, kwargs) == ({}, {"layer_sizes": [32], "value_network": "copy"})


def test_net_arch_none_is_the_default_network_and_empty_is_linear():
    assert translate_policy_kwargs("ppo", {"net_arch": None}) == ({}, {})
    model = A2C("MlpPolicy", "CartPole-v1", policy_kwargs=dict(net_arch=[]))
    assert dense_widths(model.model.policy.torso) == []  # a linear policy, as in SB3


def test_net_arch_pi_qf_dict_for_sac_and_td3():
    model = SAC("MlpPolicy", "Pendulum-v1", policy_kwargs=dict(net_arch=dict(pi=[32], qf=[32])))
    assert dense_widths(model.model.actor.torso) == [32]
    with pytest.raises(RLBaseError, match="same widths"):
        TD3("MlpPolicy", "Pendulum-v1", policy_kwargs=dict(net_arch=dict(pi=[32], qf=[64])))


def test_dqn_net_arch_is_the_whole_q_network():
    model = DQN("MlpPolicy", "CartPole-v1", policy_kwargs=dict(net_arch=[24]))
    assert model.model.config.hiddens == ()


@pytest.mark.parametrize("activation", ["relu", keras.activations.elu])
def test_activation_fn_names_and_keras_functions(activation):
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=16,
                policy_kwargs=dict(activation_fn=activation, net_arch=[4]))
    x = np.full((1, 4), -1.0, np.float32)
    out = model.model.policy.torso(x).numpy()
    assert np.all(out >= 0) if activation == "relu" else np.all(out > -1)


def test_features_extractor_kwargs_features_dim_sets_the_cnn_width():
    assert translate_policy_kwargs("ppo", {"features_extractor_kwargs": {"features_dim": 128}},
                                   "cnn") == ({}, {"num_hidden": 128})
    with pytest.raises(RLBaseError, match="only features_dim of a CnnPolicy"):
        translate_policy_kwargs("ppo", {"features_extractor_kwargs": {"features_dim": 8}}, "mlp")


def test_log_std_init_ortho_init_and_share_features_extractor():
    model = PPO("MlpPolicy", "Pendulum-v1", n_steps=16,
                policy_kwargs=dict(log_std_init=-2.0, ortho_init=True,
                                   share_features_extractor=False))
    np.testing.assert_allclose(model.model.policy.pd_head.logstd.numpy(), [-2.0])
    assert model.model.policy.value_torso is not None  # not shared
    assert translate_policy_kwargs("sac", {"share_features_extractor": False}) == ({}, {})


@pytest.mark.parametrize("algorithm, policy_kwargs, match", [
    ("ppo", {"activation_fn": type("ReLU", (), {})}, "write activation_fn='relu'"),
    ("ppo", {"optimizer_class": object}, "optimizer_class is not supported"),
    ("sac", {"optimizer_kwargs": {"eps": 1e-5}}, "optimizer_kwargs is not supported"),
    ("ppo", {"ortho_init": False}, "always initialized orthogonally"),
    ("sac", {"log_std_init": -3}, "log_std_init is an option of A2C/PPO"),
    ("ppo", {"normalize_images": False}, "normalize_images must be True"),
    ("ppo", {"use_sde": True}, "use_sde must be False"),
    ("ppo", {"squash_output": True}, "squash_output"),
    ("sac", {"share_features_extractor": True}, "share_features_extractor must be False"),
    ("sac", {"n_critics": 3}, "n_critics must be 2 for sac"),
    ("ppo", {"n_critics": 2}, "n_critics is not an option of ppo"),
    ("ppo", {"net_arch": [64]}, "net_arch describes an MLP"),
])
def test_refused_keys_are_one_line_errors(algorithm, policy_kwargs, match):
    network = "cnn" if "net_arch" in policy_kwargs else "mlp"
    with pytest.raises(RLBaseError, match=match) as info:
        translate_policy_kwargs(algorithm, policy_kwargs, network)
    assert "\n" not in str(info.value)
