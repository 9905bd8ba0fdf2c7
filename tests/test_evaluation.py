"""Every evaluation path sees observations normalized exactly as training sees them at that
moment: the training VecNormalize's statistics are shared with evaluation, never copied."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from rlbase import PPO, registry
from rlbase.common.envs.make import make_vec_env
from rlbase.common.logs import logger
from rlbase.common.loops.callbacks import EvalCallback
from rlbase.common.loops.evaluation import Evaluator, evaluate_policy, run_episodes
from rlbase.common.vec_env import DummyVecEnv, VecNormalize, find_wrapper

PROBE = np.array([[0.5, -1.0, 0.1, 2.0]], np.float32)


def normalized(venv) -> VecNormalize:
    wrapper = find_wrapper(venv, VecNormalize)
    assert isinstance(wrapper, VecNormalize)
    return wrapper


def train(alg: str, env, steps: int, **kwargs):
    with logger.scoped_configure(format_strs=[]):
        return registry.get_algorithm(alg).learn("mlp", env, total_timesteps=steps, seed=0,
                                                 log_interval=10**9, **kwargs)


@pytest.mark.parametrize("alg,kwargs", [
    ("ppo", dict(nsteps=32, nminibatches=2, noptepochs=1)),
    ("dqn", dict(learning_starts=50, best_model_interval=None)),
    ("ddpg", dict(learning_starts=50, buffer_size=500)),
])
def test_evaluation_follows_the_training_statistics_live(alg, kwargs):
    env_id = "Pendulum-v1" if alg == "ddpg" else "CartPole-v1"
    probe = PROBE[:, :3] if alg == "ddpg" else PROBE
    train_env = VecNormalize(make_vec_env(env_id, num_env=2, seed=0))
    model = train(alg, train_env, 128, **kwargs)
    eval_env = model.normalized_like_training(make_vec_env(env_id, seed=1))
    follower = normalized(eval_env)
    assert follower is not normalized(train_env) and not follower.training
    np.testing.assert_array_equal(follower.normalize_obs(probe),
                                  normalized(train_env).normalize_obs(probe))
    before = follower.normalize_obs(probe)
    train_env.reset()
    for _ in range(20):  # training moves the statistics...
        train_env.step(np.array([train_env.action_space.sample() for _ in range(2)]))
    after = follower.normalize_obs(probe)  # ...and the evaluation env sees it at once
    assert not np.allclose(before, after)
    np.testing.assert_array_equal(after, normalized(train_env).normalize_obs(probe))


def test_a_loaded_model_normalizes_with_the_saved_statistics(tmp_path):
    train_env = VecNormalize(make_vec_env("CartPole-v1", num_env=2, seed=0))
    model = train("dqn", train_env, 128, learning_starts=50, best_model_interval=None)
    path = str(tmp_path / "dqn.zip")
    model.save(path)
    expected = normalized(train_env).normalize_obs(PROBE)
    loaded = registry.load(path)
    play_env = loaded.normalized_like_training(make_vec_env("CartPole-v1", seed=2))
    np.testing.assert_array_equal(normalized(play_env).normalize_obs(PROBE), expected)


def test_evaluator_evaluate_policy_and_the_classes_normalize(monkeypatch):
    model = PPO("MlpPolicy", VecNormalize(make_vec_env("CartPole-v1", num_env=2, seed=0)),
                n_steps=32, seed=0)
    model.learn(64)
    seen = []
    real_step = model.model.step

    def spy(obs, *args, **kwargs):
        seen.append(np.asarray(obs).copy())
        return real_step(obs, *args, **kwargs)

    monkeypatch.setattr(model.model, "step", spy)
    raw = make_vec_env("CartPole-v1", seed=3)
    evaluate_policy(model, raw, n_eval_episodes=1)
    model.test(1, env=make_vec_env("CartPole-v1", seed=3))
    Evaluator(make_vec_env("CartPole-v1", seed=3), 1).evaluate(model.model)
    # Every path fed the policy normalized observations (clipped to +-10, centered), never the
    # raw first CartPole observation of that seed.
    first_raw = make_vec_env("CartPole-v1", seed=3).reset()
    stats = model.model.normalization
    assert stats is not None
    for obs in seen[:1]:
        np.testing.assert_allclose(obs, stats.normalize_obs(first_raw), rtol=1e-6)
    assert len(seen) > 3


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "5"])
def test_evaluate_policy_refuses_a_bad_episode_count(bad):
    from rlbase.common.errors import RLBaseError

    model = PPO("MlpPolicy", "CartPole-v1", nsteps=8, seed=0)
    with pytest.raises(RLBaseError, match="n_eval_episodes must be a positive integer"):
        evaluate_policy(model, "CartPole-v1", n_eval_episodes=bad)


class _AlternatingGoalEnv(gym.Env):
    """One-step episodes whose is_success alternates 1, 0, 0, 1, 0, 0, ... (a third succeed)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.episodes = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        success = self.episodes % 3 == 0
        self.episodes += 1
        return np.zeros(1, np.float32), 1.0, True, False, {"is_success": success}


class _ConstantPolicy:
    def initial_states(self, n):
        return None

    def step(self, obs, state, mask, deterministic=True):
        return np.zeros(len(obs), np.int64), None, None, None


def test_eval_success_rate_from_the_episodes_is_success(tmp_path):
    """6 episodes: the 1st and 4th succeed -> 1/3, in run_episodes, the loop's Evaluator
    (eval/success_rate) and EvalCallback (logged, and saved as evaluations.npz's successes)."""
    successes: list[float] = []
    returns, _ = run_episodes(_ConstantPolicy(), DummyVecEnv([_AlternatingGoalEnv]), 6,
                              successes=successes)
    assert returns == [1.0] * 6 and successes == [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]

    model = PPO("MlpPolicy", DummyVecEnv([_AlternatingGoalEnv]), n_steps=8, batch_size=8,
                seed=0)
    evaluator = Evaluator(DummyVecEnv([_AlternatingGoalEnv]), 6)
    evaluator.evaluate(model)
    assert evaluator.last_success_rate == pytest.approx(1 / 3)
    callback = EvalCallback(DummyVecEnv([_AlternatingGoalEnv]), n_eval_episodes=3,
                            eval_freq=8, log_path=str(tmp_path), verbose=0)
    with logger.scoped_configure(format_strs=[]):
        model.set_logger(logger.configure(str(tmp_path), ["csv"]))
        model.learn(16, callback=callback)
    saved = np.load(tmp_path / "evaluations.npz")
    np.testing.assert_array_equal(saved["successes"], [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    rows = (tmp_path / "progress.csv").read_text()
    assert "eval/success_rate" in rows.splitlines()[0]
