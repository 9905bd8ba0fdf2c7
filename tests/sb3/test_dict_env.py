"""Port of SB3's tests/test_dict_env.py (the cases rlbase's API has): MultiInputPolicy on mixed
Dict observations (an image, a vector, a discrete entry, a nested Dict) for every algorithm,
and a Dict of one vector acting exactly like the flat vector."""

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.common.vec_env import DummyVecEnv
from rlbase.compat.sb3 import A2C, DDPG, DQN, PPO, SAC, TD3

from .envs import DummyEnv

CONTINUOUS = (SAC, TD3, DDPG)


def dict_env(discrete_actions: bool, vec_only: bool = False, nested: bool = False) -> gym.Env:
    spaces = {"vec": gym.spaces.Box(-1, 1, (2,), np.float32)}
    if not vec_only:
        spaces["img"] = gym.spaces.Box(0, 255, (36, 36, 1), np.uint8)
        spaces["discrete"] = gym.spaces.Discrete(4)
    if nested:
        spaces["nested-dict"] = gym.spaces.Dict({"nested-dict-discrete": gym.spaces.Discrete(4)})
    action = gym.spaces.Discrete(3) if discrete_actions else \
        gym.spaces.Box(-1, 1, (2,), np.float32)
    return gym.wrappers.TimeLimit(DummyEnv(gym.spaces.Dict(spaces), action), 100)


def small_kwargs(model_class, n_steps=64):
    if model_class in (A2C, PPO):
        return dict(n_steps=n_steps, **(dict(n_epochs=1) if model_class is PPO else {}))
    return dict(buffer_size=250, train_freq=8, gradient_steps=1,
                **(dict(learning_starts=0) if model_class is DQN else {}))


@pytest.mark.parametrize("model_class", [PPO, SAC, *(pytest.param(c, marks=pytest.mark.slow)
                                                      for c in (A2C, DQN, DDPG, TD3))])
def test_consistency(model_class, monkeypatch):
    """A Dict of one vector and the flat vector give the same network, so the same actions
    before and after the same training."""
    # Both act through TensorFlow (MLPs on flat vectors otherwise act in numpy, which draws
    # its samples from another generator).
    monkeypatch.setenv("RLBASE_NUMPY_ACT", "0")
    discrete = model_class not in CONTINUOUS
    env_dict = dict_env(discrete, vec_only=True)
    env_dict.reset(seed=10)
    env_flat = gym.wrappers.FlattenObservation(dict_env(discrete, vec_only=True))
    env_flat.reset(seed=10)
    obs, _ = env_dict.reset(seed=10)
    kwargs = dict(small_kwargs(model_class), policy_kwargs=dict(net_arch=[8, 8]))
    dict_model = model_class("MultiInputPolicy", env_dict, gamma=0.5, seed=1, **kwargs)
    before_1, _ = dict_model.predict(obs, deterministic=True)
    dict_model.learn(total_timesteps=128)
    flat_model = model_class("MlpPolicy", env_flat, gamma=0.5, seed=1, **kwargs)
    before_2, _ = flat_model.predict(obs["vec"], deterministic=True)
    flat_model.learn(total_timesteps=128)
    np.testing.assert_allclose(before_1, before_2)
    np.testing.assert_allclose(dict_model.predict(obs, deterministic=True)[0],
                               flat_model.predict(obs["vec"], deterministic=True)[0], atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("model_class", [PPO, A2C, DQN, DDPG, SAC, TD3])
@pytest.mark.parametrize("nested", [False, True])
def test_dict_spaces(model_class, nested):
    env = dict_env(model_class not in CONTINUOUS, nested=nested)
    model = model_class("MultiInputPolicy", env, gamma=0.5, seed=1,
                        policy_kwargs=dict(net_arch=[16]), **small_kwargs(model_class))
    model.learn(total_timesteps=128)
    evaluate_policy(model, DummyVecEnv([lambda: env]), n_eval_episodes=5)


def test_cnn_output_dim_is_refused_in_one_line():
    """SB3's CombinedExtractor width: rlbase's Dict encoder gives each image 256 features."""
    with pytest.raises(RLBaseError, match=r"^[^\n]*features_extractor_kwargs[^\n]*$"):
        PPO("MultiInputPolicy", dict_env(True), n_steps=64,
            policy_kwargs=dict(features_extractor_kwargs=dict(cnn_output_dim=16)))
