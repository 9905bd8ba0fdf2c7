"""Every evaluation path sees observations normalized exactly as training sees them at that
moment: the training VecNormalize's statistics are shared with evaluation, never copied."""

from __future__ import annotations

import numpy as np
import pytest

from rlbase import PPO, registry
from rlbase.common import logger
from rlbase.common.cmd_util import make_vec_env
from rlbase.common.evaluation import Evaluator, evaluate_policy
from rlbase.common.vec_env import VecNormalize, find_wrapper

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
