"""SB3's VecNormalize, evaluate_policy and VecFrameStack protocols (cases of SB3's
tests/test_vec_normalize.py and test_utils.py's evaluate_policy tests, as rlbase's own port),
with exact values on tiny envs: SB3's constructor names, attributes that act when set
(``training``, ``norm_obs``, ``norm_reward``), ``load(path, venv)``, and evaluation returning
the env's own reward sums behind normalization.

Not ported: ``sync_envs_normalization`` (rlbase's evaluation shares the training statistics
itself), ``norm_obs_keys`` (refused), pickling the wrapper (rlbase saves statistics with
``save``/``load``, no pickle), HER's dict-goal envs.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.common.vec_env import DummyVecEnv, VecFrameStack, VecNormalize
from rlbase.compat.sb3 import PPO


class ConstantRewardEnv(gym.Env):
    """Observations drawn from N(5, 2); reward ``reward`` per step; ``length`` steps."""

    def __init__(self, reward: float = -3.0, length: int = 7):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.reward, self.length, self.t = reward, length, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), self.reward, False, self.t >= self.length, {}

    def _obs(self):
        return self.np_random.normal(5.0, 2.0, size=2).astype(np.float32)


def make(n: int = 1, **kwargs) -> VecNormalize:
    venv = DummyVecEnv([lambda: ConstantRewardEnv(**kwargs) for _ in range(n)])
    venv.seed(0)
    return venv


def run(env: VecNormalize, steps: int) -> tuple[list, list, list]:
    env.reset()
    obs_out, rewards_out, raw_rewards = [], [], []
    for _ in range(steps):
        obs, rewards, _, _, _ = env.step(np.zeros((env.num_envs, 1), np.float32))
        obs_out.append(obs)
        rewards_out.append(rewards)
        raw_rewards.append(env.get_original_reward())
    return obs_out, rewards_out, raw_rewards


def test_sb3_constructor_names():
    env = VecNormalize(make(), norm_obs=True, norm_reward=False, clip_obs=10.0)
    assert env.norm_obs and not env.norm_reward and env.clip_obs == 10.0
    assert env.clip_reward == 10.0 and env.ret_rms is None and env.obs_rms is env.ob_rms
    obs, rewards, raw = run(env, 20)
    assert all(np.array_equal(r, np.full(1, -3.0)) for r in rewards)  # raw rewards out
    assert abs(float(np.mean(obs[-5:]))) < 2.0  # normalized observations
    with pytest.raises(RLBaseError, match="ob=True and norm_obs=True: give one"):
        VecNormalize(make(), ob=True, norm_obs=True)
    with pytest.raises(RLBaseError, match="norm_obs_keys"):
        VecNormalize(make(), norm_obs_keys=["a"])


def test_norm_reward_set_false_returns_the_raw_rewards():
    env = VecNormalize(make())
    _, scaled, raw = run(env, 10)
    assert not np.allclose(scaled[-1], raw[-1])  # scaled while norm_reward is on
    env.norm_reward = False
    _, rewards, raw = run(env, 10)
    assert all(np.array_equal(r, g) for r, g in zip(rewards, raw))
    assert np.array_equal(rewards[-1], np.full(1, -3.0, np.float32))
    env.norm_obs = False
    obs, _, _ = run(env, 3)
    assert np.array_equal(obs[-1], env.get_original_obs())
    assert env.observation_space == env.venv.observation_space
    no_returns = VecNormalize(make(), norm_reward=False)
    with pytest.raises(RLBaseError, match="norm_reward=True"):
        no_returns.norm_reward = True


def test_training_false_freezes_the_statistics():
    env = VecNormalize(make())
    run(env, 10)
    mean, var, ret_var = env.obs_rms.mean.copy(), env.obs_rms.var.copy(), env.ret_rms.var
    env.training = False
    run(env, 10)
    assert np.array_equal(env.obs_rms.mean, mean) and np.array_equal(env.obs_rms.var, var)
    assert env.ret_rms.var == ret_var


def test_unnormalize_inverts_normalize():
    env = VecNormalize(make(), clip_obs=1e6, clip_reward=1e6)
    run(env, 30)
    x = np.array([[4.0, 7.0]], np.float32)
    assert np.allclose(env.unnormalize_obs(env.normalize_obs(x)), x, atol=1e-5)
    r = np.array([-3.0], np.float32)
    assert np.allclose(env.unnormalize_reward(env.normalize_reward(r)), r, atol=1e-5)


def test_load_then_evaluate_gives_the_envs_own_return(tmp_path):
    """The SB3 recipe: VecNormalize.load(path, venv); training = False; norm_reward = False;
    evaluate_policy reports the env's own return (7 steps of -3: exactly -21)."""
    train_env = VecNormalize(make())
    model = PPO("MlpPolicy", train_env, n_steps=16, batch_size=16, n_epochs=1, seed=0,
                policy_kwargs=dict(net_arch=[8]))
    model.learn(64)
    path = str(tmp_path / "vec_normalize.pkl")
    train_env.save(path)
    env = VecNormalize.load(path, make())
    assert np.array_equal(env.obs_rms.mean, train_env.obs_rms.mean)
    env.training = False
    env.norm_reward = False
    mean, std = evaluate_policy(model, env, n_eval_episodes=3)
    assert (mean, std) == (-21.0, 0.0)
    # With rewards still scaled the return is the env's own too.
    env.norm_reward = True
    returns, lengths = evaluate_policy(model, env, n_eval_episodes=3,
                                       return_episode_rewards=True)
    assert returns == [-21.0] * 3 and lengths == [7] * 3


def test_evaluate_policy_sb3_signature():
    env = make(2)
    model = PPO("MlpPolicy", env, n_steps=8, batch_size=16, seed=0,
                policy_kwargs=dict(net_arch=[8]))
    calls: list[tuple[int, bool]] = []

    def callback(locals_, _globals):
        calls.append((locals_["i"], locals_["done"]))
        assert "info" in locals_ and "episode_rewards" in locals_

    returns, lengths = evaluate_policy(model, env, n_eval_episodes=4, callback=callback,
                                       return_episode_rewards=True, warn=False)
    assert returns == [-21.0] * 4 and lengths == [7] * 4
    # Two episodes of 7 steps per env, a call per env per step.
    assert len(calls) == 2 * 7 * 2 and sum(done for _, done in calls) == 4
    assert evaluate_policy(model, env, 2, True, reward_threshold=-21.0) == (-21.0, 0.0)
    with pytest.raises(AssertionError, match="Mean reward below threshold"):
        evaluate_policy(model, env, n_eval_episodes=2, reward_threshold=-20.0)


def test_vec_frame_stack_sb3_signature():
    image = gym.spaces.Box(0, 255, (3, 8, 8), np.uint8)

    class ImageEnv(gym.Env):
        observation_space = image
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            return image.sample(), {}

        def step(self, action):
            return image.sample(), 0.0, False, False, {}

    stacked = VecFrameStack(DummyVecEnv([ImageEnv]), n_stack=4, channels_order=None)
    assert stacked.observation_space.shape == (12, 8, 8)  # CHW detected: channels first
    last = VecFrameStack(DummyVecEnv([lambda: ConstantRewardEnv()]), 3, channels_order=None)
    assert last.observation_space.shape == (6,)
    with pytest.raises(RLBaseError, match="exactly one"):
        VecFrameStack(DummyVecEnv([ImageEnv]), 4, n_stack=4)


def test_statistics_assigned_as_in_sb3_are_shared():
    """``eval_env.obs_rms = train_env.obs_rms`` (SB3's idiom): the evaluation env then
    normalizes with the training env's own, live statistics; ret_rms likewise."""
    from rlbase.common.running_mean_std import RunningMeanStd

    train = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")]))
    evaluation = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")]), training=False)
    evaluation.obs_rms = train.obs_rms
    evaluation.ret_rms = train.ret_rms
    assert evaluation.obs_rms is train.obs_rms and evaluation.ret_rms is train.ret_rms
    train.reset()
    for _ in range(5):
        train.step(np.zeros(1, np.int64))
    obs = np.array([[0.1, -0.2, 0.03, 0.4]], np.float32)
    expected = np.clip((obs - train.obs_rms.mean) / np.sqrt(train.obs_rms.var + 1e-8),
                       -10, 10)
    np.testing.assert_allclose(evaluation.normalize_obs(obs), expected, rtol=1e-6)
    with pytest.raises(RLBaseError, match=r"obs_rms must be a RunningMeanStd of shape \(4,\)"):
        evaluation.obs_rms = RunningMeanStd(shape=(3,))
    with pytest.raises(RLBaseError, match="ret_rms must be a scalar RunningMeanStd"):
        evaluation.ret_rms = train.obs_rms


@pytest.mark.parametrize("training, norm_obs, norm_reward", [(False, True, False),
                                                             (True, False, True),
                                                             (False, False, False)])
def test_save_and_load_keep_the_switches(tmp_path, training, norm_obs, norm_reward):
    """SB3's load gives back the wrapper as saved (it is pickled): training, norm_obs and
    norm_reward included; rlbase's file keeps them beside the statistics."""
    env = VecNormalize(make())
    env.training, env.norm_obs, env.norm_reward = training, norm_obs, norm_reward
    path = str(tmp_path / "vec_normalize.pkl")
    env.save(path)
    loaded = VecNormalize.load(path, make())
    assert (loaded.training, loaded.norm_obs, loaded.norm_reward) == \
        (training, norm_obs, norm_reward)
    assert VecNormalize.load(path, make(), training=True).training  # an explicit override
