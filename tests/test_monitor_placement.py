"""A logged or evaluated return is the env's own reward sum: the VecMonitor sits below every
reward-changing wrapper (VecNormalize, reward scaling), or the chain is refused. CartPole pays
1 per step, so every episode's return must equal its length."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.envs.make import ensure_monitor, make_vec_env
from rlbase.common.errors import RLBaseError
from rlbase.common.logs import logger
from rlbase.common.loops.evaluation import Evaluator, run_episodes
from rlbase.common.vec_env import (
    DummyVecEnv,
    VecEnvWrapper,
    VecMonitor,
    VecNormalize,
    find_wrapper,
)


def cartpole() -> DummyVecEnv:
    venv = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)
    venv.seed(0)
    return venv


def episodes(venv, steps: int = 200) -> list[dict]:
    """The episode records of ``steps`` random steps."""
    rng = np.random.default_rng(0)
    venv.reset()
    found = []
    for _ in range(steps):
        infos = venv.step(rng.integers(0, 2, venv.num_envs))[4]
        found += [info["episode"] for info in infos if "episode" in info]
    assert found
    return found


def test_the_monitor_goes_below_a_users_vec_normalize():
    venv = ensure_monitor(VecNormalize(cartpole()))
    assert isinstance(venv, VecNormalize) and isinstance(venv.venv, VecMonitor)
    for episode in episodes(venv):
        assert episode["r"] == episode["l"]


def test_a_monitor_above_vec_normalize_is_refused():
    with pytest.raises(RLBaseError, match=r"VecMonitor sits above its VecNormalize.*"
                                          r"VecNormalize\(VecMonitor\(venv\)\)"):
        ensure_monitor(VecMonitor(VecNormalize(cartpole())))


class ClipRewards(VecEnvWrapper):
    """A user's own reward-changing wrapper, declared as such."""

    changes_rewards = True

    def step_wait(self):
        obs, rewards, terminated, truncated, infos = self.venv.step_wait()
        return obs, np.clip(rewards, -0.5, 0.5), terminated, truncated, infos


def test_a_users_reward_changing_wrapper_keeps_the_monitor_below_it():
    venv = ensure_monitor(ClipRewards(cartpole()))
    assert isinstance(venv.venv, VecMonitor)
    for episode in episodes(venv):
        assert episode["r"] == episode["l"]  # the env's 1 per step, not the clipped 0.5
    with pytest.raises(RLBaseError, match=r"VecMonitor sits above its ClipRewards"):
        ensure_monitor(VecMonitor(ClipRewards(cartpole())))


def test_a_monitor_below_vec_normalize_is_kept():
    venv = VecNormalize(VecMonitor(cartpole()))
    assert ensure_monitor(venv) is venv and isinstance(venv.venv, VecMonitor)


def test_reward_scale_trains_on_scaled_rewards_and_logs_the_envs_returns():
    venv = make_vec_env("CartPole-v1", num_env=2, seed=0, reward_scale=0.1)
    venv.reset()
    rewards = venv.step(np.zeros(2, dtype=np.int64))[1]
    np.testing.assert_allclose(rewards, [0.1, 0.1])
    for episode in episodes(venv):
        assert episode["r"] == episode["l"]


def test_learn_logs_true_returns_with_a_users_vec_normalize():
    from rlbase.ppo.ppo import learn

    venv = VecNormalize(cartpole())
    with logger.scoped_configure(format_strs=[]):
        learn("mlp", venv, total_timesteps=256, seed=0, nsteps=64, log_interval=10**9)
    monitor = find_wrapper(venv, VecMonitor)
    assert isinstance(monitor, VecMonitor) and monitor.episode_returns
    assert monitor.episode_returns == [float(n) for n in monitor.episode_lengths]


class NormalizingModel:
    """A model trained under VecNormalize that always pushes left: evaluation wraps the eval env
    in a reward-normalizing VecNormalize, as a model trained with normalization does."""

    num_timesteps = 0  # what Evaluator notes with each score

    def initial_states(self, n: int) -> None:
        return None

    def step(self, obs, state, mask, deterministic=True):
        return np.zeros(len(obs), dtype=np.int64), None, state, None

    def normalized_like_training(self, venv):
        return VecNormalize(venv)


def test_evaluation_without_a_monitor_reports_true_returns():
    model = NormalizingModel()
    returns, lengths = run_episodes(model, model.normalized_like_training(cartpole()), 4)
    assert returns == [float(n) for n in lengths]
    evaluator = Evaluator(cartpole(), n_episodes=4)
    score = evaluator.evaluate(model)
    assert evaluator.last is not None and score == evaluator.last[1]


def test_a_model_class_logs_true_returns_with_a_users_vec_normalize():
    import rlbase

    venv = VecNormalize(cartpole())
    rlbase.PPO("MlpPolicy", venv, seed=0, nsteps=64).learn(256)
    monitor = find_wrapper(venv, VecMonitor)
    assert isinstance(monitor, VecMonitor) and monitor.episode_returns
    assert monitor.episode_returns == [float(n) for n in monitor.episode_lengths]


def test_es_refuses_reward_scaling_it_would_not_apply():
    from rlbase.es.es import learn

    venv = make_vec_env("CartPole-v1", num_env=1, seed=0, reward_scale=2.0)
    with pytest.raises(RLBaseError, match=r"es does not take reward scaling"):
        learn("mlp", venv, total_timesteps=10, seed=0)
