"""Port of SB3's tests/test_spaces.py: every algorithm on the observation and action spaces it
takes (MultiDiscrete/MultiBinary observations for the off-policy ones, float64 Boxes, discrete
observations), and a one-line error for a space it does not take."""

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.common.vec_env import DummyVecEnv
from rlbase.compat.sb3 import A2C, DDPG, DQN, ES, PPO, SAC, TD3

from .envs import BOX_FLOAT32, BOX_FLOAT64, DummyEnv

OFF_POLICY = (SAC, TD3, DDPG)


def multidiscrete_obs():
    return DummyEnv(gym.spaces.MultiDiscrete([4, 3]), BOX_FLOAT32)


def multibinary_obs(n):
    return DummyEnv(gym.spaces.MultiBinary(n), BOX_FLOAT32)


def multidim_action():
    return DummyEnv(BOX_FLOAT32, gym.spaces.Box(-1, 1, (2, 2), np.float32))


@pytest.mark.slow
@pytest.mark.parametrize("model_class", [SAC, TD3, DQN])
@pytest.mark.parametrize("make_env", [multidiscrete_obs, lambda: multibinary_obs(8),
                                      lambda: multibinary_obs((3, 2))],
                         ids=["multidiscrete", "multibinary", "multibinary2d"])
def test_identity_spaces(model_class, make_env):
    """SAC, TD3 (and DQN) take MultiDiscrete and MultiBinary observations, in their replay
    buffers too: they train past learning_starts and are evaluated."""
    env = make_env()
    if model_class is DQN:
        env.action_space = gym.spaces.Discrete(4)
    env = gym.wrappers.TimeLimit(env, max_episode_steps=100)
    model = model_class("MlpPolicy", env, gamma=0.5, seed=1, learning_starts=100,
                        policy_kwargs=dict(net_arch=[64]))
    model.learn(total_timesteps=500)
    assert len(model.model.replay_buffer) == 500  # every transition stored
    evaluate_policy(model, DummyVecEnv([lambda: env]), n_eval_episodes=1)


@pytest.mark.parametrize("model_class", [SAC, TD3])
@pytest.mark.parametrize("make_env", [multidiscrete_obs, lambda: multibinary_obs((3, 2))],
                         ids=["multidiscrete", "multibinary2d"])
def test_discrete_observations_reach_the_off_policy_networks_one_hot(model_class, make_env):
    """The quick form of the case above: a few gradient steps, and the stored observations
    are the env's."""
    env = gym.wrappers.TimeLimit(make_env(), max_episode_steps=100)
    model = model_class("MlpPolicy", env, seed=1, learning_starts=20, batch_size=8,
                        policy_kwargs=dict(net_arch=[8]))
    model.learn(total_timesteps=30)
    buffer = model.model.replay_buffer
    stored = buffer.get(np.arange(len(buffer))).obs
    assert len(buffer) == 30 and env.observation_space.contains(
        stored[0].astype(env.observation_space.dtype))


@pytest.mark.parametrize("model_class", [A2C, DDPG, DQN, PPO, SAC, TD3])
@pytest.mark.parametrize("env_id", ["Pendulum-v1", "CartPole-v1"])
def test_action_spaces(model_class, env_id):
    """Box actions for all but DQN; Discrete ones for A2C, PPO and DQN; else a one-line error."""
    supported = env_id == "Pendulum-v1" if model_class in OFF_POLICY else \
        env_id == "CartPole-v1" if model_class is DQN else True
    kwargs = dict(learning_starts=2, train_freq=32) if model_class in OFF_POLICY else \
        dict(n_steps=64) if model_class in (A2C, PPO) else {}
    if supported:
        model_class("MlpPolicy", env_id, **kwargs)
    else:
        with pytest.raises(RLBaseError, match=r"^[^\n]*action space[^\n]*$"):
            model_class("MlpPolicy", env_id, **kwargs)


@pytest.mark.parametrize("model_class", [A2C, DDPG, PPO, SAC, TD3])
def test_multidimensional_box_actions_are_refused_in_one_line(model_class):
    """rlbase's policies take 1-D Box actions (SB3 flattens others): a clear error instead."""
    with pytest.raises(RLBaseError, match=r"^[^\n]*1-D[^\n]*$"):
        model_class("MlpPolicy", multidim_action())


@pytest.mark.slow
@pytest.mark.parametrize("model_class", [A2C, PPO, DQN])
def test_discrete_obs_space(model_class):
    kwargs = dict(buffer_size=1000, learning_starts=100) if model_class is DQN else \
        dict(n_steps=256)
    model = model_class("MlpPolicy", "Taxi-v3", seed=0, **kwargs).learn(256)
    assert model.num_timesteps == 256


@pytest.mark.parametrize("model_class", [SAC, TD3, PPO, DDPG, A2C])
def test_float64_actions_and_observations(model_class):
    """The quick form of the matrix below: float64 observations and actions."""
    env = gym.wrappers.TimeLimit(DummyEnv(BOX_FLOAT64, BOX_FLOAT64), max_episode_steps=200)
    kwargs = dict(n_steps=16) if model_class in (PPO, A2C) else \
        dict(learning_starts=8, batch_size=8)
    model = model_class("MlpPolicy", env, policy_kwargs=dict(net_arch=[12]), **kwargs)
    model.learn(32)  # DummyEnv asserts each action is in the space (dtype included)
    action, _ = model.predict(env.reset()[0], deterministic=False)
    assert action.dtype == np.float64 and action.shape == (2,)


def test_es_takes_float64_boxes():
    env = gym.wrappers.TimeLimit(DummyEnv(BOX_FLOAT64, BOX_FLOAT64), max_episode_steps=20)
    model = ES("MlpPolicy", env, seed=0).learn(100)
    assert model.predict(env.reset()[0])[0].dtype == np.float64


@pytest.mark.slow
@pytest.mark.parametrize("model_class", [SAC, TD3, PPO, DDPG, A2C])
@pytest.mark.parametrize("obs_space", [
    BOX_FLOAT32, BOX_FLOAT64, gym.spaces.Dict({"a": BOX_FLOAT32, "b": BOX_FLOAT32}),
    gym.spaces.Dict({"a": BOX_FLOAT32, "b": BOX_FLOAT64})],
    ids=["box32", "box64", "dict32", "dict64"])
@pytest.mark.parametrize("action_space", [BOX_FLOAT32, BOX_FLOAT64], ids=["act32", "act64"])
def test_float64_action_space(model_class, obs_space, action_space):
    """Actions are computed in float32 and reach the env (DummyEnv checks) and predict() in
    the space's dtype."""
    env = gym.wrappers.TimeLimit(DummyEnv(obs_space, action_space), max_episode_steps=200)
    policy = "MultiInputPolicy" if isinstance(obs_space, gym.spaces.Dict) else "MlpPolicy"
    kwargs = dict(n_steps=64) if model_class in (PPO, A2C) else dict(learning_starts=60)
    model = model_class(policy, env, policy_kwargs=dict(net_arch=[12]), **kwargs)
    model.learn(64)
    initial_obs, _ = env.reset()
    action, _ = model.predict(initial_obs, deterministic=False)
    assert action.dtype == env.action_space.dtype


def test_multidim_binary_actions_are_refused():
    env = DummyEnv(BOX_FLOAT32, gym.spaces.MultiBinary([2, 3]))
    with pytest.raises(RLBaseError, match=r"MultiBinary action spaces must be 1-D"):
        A2C("MlpPolicy", env)
