"""Port of Stable-Baselines3's tests/test_predict.py to rlbase's classes (same cases; 'cuda'
on a machine without a GPU is refused in one line)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from identity_envs import DiscreteIdentityEnv

from rlbase import A2C, DQN, PPO, SAC, TD3
from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env import DummyVecEnv

MODEL_LIST = [PPO, A2C, TD3, SAC, DQN]
FAST = (A2C, DQN)


def classes(selected: list) -> list:
    return [c if c in FAST else pytest.param(c, marks=pytest.mark.slow) for c in selected]


def gpu_available() -> bool:
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))


class SubClassedBox(spaces.Box):
    pass


class CustomSubClassedSpaceEnv(gym.Env):
    def __init__(self):
        super().__init__()
        self.observation_space = SubClassedBox(-1, 1, shape=(2,), dtype=np.float32)
        self.action_space = SubClassedBox(-1, 1, shape=(2,), dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, bool(np.random.rand() > 0.5), False, {}


@pytest.mark.parametrize("model_class", classes(MODEL_LIST))
def test_auto_wrap(model_class):
    env = gym.make("CartPole-v1" if model_class is DQN else "Pendulum-v1")
    model = model_class("MlpPolicy", env)
    model.learn(100)


@pytest.mark.parametrize("model_class", classes(MODEL_LIST))
@pytest.mark.parametrize("env_id", ["Pendulum-v1", "CartPole-v1"])
@pytest.mark.parametrize("device", ["cpu", "cuda", "auto"])
def test_predict(model_class, env_id, device):
    if env_id == "CartPole-v1":
        if model_class in [SAC, TD3]:
            return
    elif model_class in [DQN]:
        return
    if device == "cuda" and not gpu_available():
        with pytest.raises(RLBaseError, match="sees no GPU"):
            model_class("MlpPolicy", env_id, device=device)
        return
    model = model_class("MlpPolicy", env_id, device=device)
    assert model.policy.device == ("cpu" if device == "cpu" or not gpu_available() else "cuda")

    env = gym.make(env_id)
    vec_env = DummyVecEnv([lambda: gym.make(env_id), lambda: gym.make(env_id)])
    obs, _ = env.reset()
    action, _ = model.predict(obs)
    assert isinstance(action, np.ndarray)
    assert action.shape == env.action_space.shape
    assert env.action_space.contains(action)

    vec_env_obs = vec_env.reset()
    action, _ = model.predict(vec_env_obs)
    assert isinstance(action, np.ndarray)
    assert action.shape[0] == vec_env_obs.shape[0]

    if model_class is DQN:
        model.exploration_rate = 1.0
        action, _ = model.predict(obs, deterministic=False)
        assert action.shape == env.action_space.shape
        assert env.action_space.contains(action)
        action, _ = model.predict(vec_env_obs, deterministic=False)
        assert action.shape[0] == vec_env_obs.shape[0]


def test_dqn_epsilon_greedy():
    env = DiscreteIdentityEnv(2)
    model = DQN("MlpPolicy", env)
    model.exploration_rate = 1.0
    obs, _ = env.reset()
    action, _ = model.predict(obs, deterministic=False)
    assert env.action_space.contains(action)


@pytest.mark.parametrize("model_class", classes([A2C, SAC, PPO, TD3]))
def test_subclassed_space_env(model_class):
    env = CustomSubClassedSpaceEnv()
    model = model_class("MlpPolicy", env, policy_kwargs=dict(net_arch=[32]))
    model.learn(300)
    obs, _ = env.reset()
    env.step(model.predict(obs)[0])


def test_mixing_gym_vecenv_api():
    env = gym.make("CartPole-v1")
    model = PPO("MlpPolicy", env)
    wrong_obs = env.reset()
    with pytest.raises(ValueError, match=r"mix"):
        model.predict(wrong_obs)
