"""Callbacks of the model classes' learn(): stop, checkpoint, evaluate, reward threshold."""

from __future__ import annotations

import os

import numpy as np
import pytest
from identity_envs import DiscreteIdentityEnv

from rlbase import A2C, QLearning
from rlbase.common.errors import RLBaseError
from rlbase.compat.sb3.callbacks import (
    CheckpointCallback,
    EvalCallback,
    StopTrainingOnRewardThreshold,
)


def qmodel() -> QLearning:
    # Cheap (no TensorFlow) and called back after every env step.
    return QLearning("TabularPolicy", DiscreteIdentityEnv(n=3, episode_len=10), seed=0)


def test_callable_returning_false_stops():
    model = qmodel()
    seen = []

    def stop_at_50(m, info):
        seen.append(info["num_timesteps"])
        assert m is model
        return info["num_timesteps"] < 50

    model.learn(1000, callback=stop_at_50)
    assert model.num_timesteps == 50 and seen[-1] == 50


def test_callable_stops_an_on_policy_learner_after_its_update():
    model = A2C("MlpPolicy", "CartPole-v1", nsteps=5, policy_kwargs={"num_hidden": 8})
    model.learn(10000, callback=lambda m, info: info["num_timesteps"] < 20)
    assert model.num_timesteps == 20


def test_checkpoint_every_n_steps(tmp_path):
    model = qmodel()
    ckpt = CheckpointCallback(save_freq=100, save_path=str(tmp_path), name_prefix="q")
    model.learn(350, callback=ckpt)
    names = sorted(os.listdir(tmp_path))
    assert names == [f"q_{n}_steps.zip" for n in (100, 200, 300)]
    # Each is a whole model at its step count.
    assert QLearning.load(str(tmp_path / "q_200_steps.zip")).num_timesteps == 200
    with pytest.raises(RLBaseError, match="positive integer"):
        CheckpointCallback(save_freq=0, save_path=str(tmp_path))


def test_eval_keeps_the_best_model(tmp_path):
    model = qmodel()
    env = DiscreteIdentityEnv(n=3, episode_len=10)
    # The identity Q-table scores the best return, 10; at step 150 a table that always picks
    # a wrong action (return 0) replaces it: the best model stays the one from step 100.
    model.load_parameters({"q_table": np.eye(3)})

    def spoil(m, info):
        if info["num_timesteps"] == 150:
            m.load_parameters({"q_table": 5.0 * (1.0 - np.eye(3))})

    best_dir = str(tmp_path / "best")
    evaluation = EvalCallback(env, n_eval_episodes=2, eval_freq=100,
                              best_model_save_path=best_dir)
    model.learn(250, callback=[spoil, evaluation])
    assert evaluation.evaluations_timesteps == [100, 200]
    assert evaluation.evaluations_results == [[10.0, 10.0], [0.0, 0.0]]
    assert evaluation.best_mean_reward == 10.0
    best = QLearning.load(os.path.join(best_dir, "best_model.zip"))
    assert best.num_timesteps == 100
    assert best.test(2, env=env) == (10.0, 0.0)


def test_stop_on_reward_threshold():
    model = qmodel()
    env = DiscreteIdentityEnv(n=3, episode_len=10)
    model.load_parameters({"q_table": np.eye(3)})  # scores 10 from the start
    model.model.epsilon = 0.0
    stop = StopTrainingOnRewardThreshold(reward_threshold=9.5)
    model.learn(1000, callback=EvalCallback(env, n_eval_episodes=1, eval_freq=60,
                                            callback_on_new_best=stop))
    assert model.num_timesteps == 60
    # Below the threshold it does not stop.
    model = qmodel()
    never = StopTrainingOnRewardThreshold(reward_threshold=11)
    model.learn(200, callback=EvalCallback(env, n_eval_episodes=1, eval_freq=60,
                                           callback_on_new_best=never))
    assert model.num_timesteps == 200


def test_bad_callback():
    with pytest.raises(RLBaseError, match="callback must be"):
        qmodel().learn(10, callback=5)
