"""Port of SB3's tests/test_callbacks.py (its main case, with SB3's budgets), plus exact checks
of the protocol: a callback written as SB3 documents it has its hooks called in SB3's order,
``_on_step`` once per vector step, sees the step's locals and stops training by returning
False, in on-policy and off-policy algorithms alike; EvalCallback's results reach the logger
and evaluations.npz.

Not ported: HER's case (rlbase has no HER), the success-rate case (EvalCallback records no
eval/success_rate), and the ``checkpoint_callback`` replay-buffer case for SAC is covered by a
DQN one.
"""

from __future__ import annotations

import csv
import os

import gymnasium as gym
import numpy as np
import pytest
from rlbase.logger import configure

from rlbase.common.envs.env_util import make_vec_env
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.callbacks import (
    BaseCallback,
    CallbackList,
    CheckpointCallback,
    EvalCallback,
    EveryNTimesteps,
    StopTrainingOnMaxEpisodes,
    StopTrainingOnNoModelImprovement,
    StopTrainingOnRewardThreshold,
)
from rlbase.compat.sb3 import A2C, DDPG, DQN, PPO, SAC, TD3

SMALL = dict(policy_kwargs=dict(net_arch=[32]))


def env_id(model_class) -> str:
    return "CartPole-v1" if model_class in (A2C, PPO, DQN) else "Pendulum-v1"


@pytest.mark.parametrize("model_class", [
    A2C, PPO, DQN,
    pytest.param(SAC, marks=pytest.mark.slow), pytest.param(TD3, marks=pytest.mark.slow),
    pytest.param(DDPG, marks=pytest.mark.slow)])
def test_callbacks(tmp_path, model_class):
    log_folder = str(tmp_path / "logs" / "callbacks")
    kwargs: dict = dict(SMALL)
    if model_class is PPO:
        kwargs.update(n_steps=256, batch_size=64)
    if model_class in (DQN, SAC, TD3, DDPG):
        kwargs.update(learning_starts=100)
    model = model_class("MlpPolicy", env_id(model_class), seed=0, **kwargs)
    checkpoint_callback = CheckpointCallback(save_freq=1000, save_path=log_folder)
    eval_env = gym.make(env_id(model_class))
    callback_on_best = StopTrainingOnRewardThreshold(reward_threshold=-1200, verbose=1)
    callback_no_model_improvement = StopTrainingOnNoModelImprovement(
        max_no_improvement_evals=2, min_evals=1, verbose=1)
    eval_callback = EvalCallback(eval_env, callback_on_new_best=callback_on_best,
                                 callback_after_eval=callback_no_model_improvement,
                                 best_model_save_path=log_folder, log_path=log_folder,
                                 eval_freq=100, warn=False)
    checkpoint_on_event = CheckpointCallback(save_freq=1, save_path=log_folder,
                                             name_prefix="event")
    event_callback = EveryNTimesteps(n_steps=500, callback=checkpoint_on_event)
    callback_max_episodes = StopTrainingOnMaxEpisodes(max_episodes=100, verbose=1)
    callback = CallbackList([checkpoint_callback, eval_callback, event_callback,
                             callback_max_episodes])
    model.learn(500, callback=callback)

    assert model.get_env().observation_space.contains(callback.locals["new_obs"][0])
    assert isinstance(callback.locals["dones"], np.ndarray)
    # The children saw the same step.
    assert checkpoint_callback.locals["new_obs"] is callback.locals["new_obs"]
    assert event_callback.locals["new_obs"] is callback.locals["new_obs"]
    assert checkpoint_on_event.locals["new_obs"] is callback.locals["new_obs"]
    # One env: a call per env step, and the callbacks' count is the model's.
    assert event_callback.num_timesteps == model.num_timesteps
    assert event_callback.n_calls == model.num_timesteps
    # Every reward beats -1200 on CartPole, so the first evaluation (call 100) stops it; on
    # Pendulum the threshold or the lack of improvement stop it, or the budget does.
    if model_class in (A2C, PPO, DQN):
        assert model.num_timesteps == 100 and eval_callback.evaluations_timesteps == [100]
    saved = np.load(os.path.join(log_folder, "evaluations.npz"))
    assert list(saved["timesteps"]) == eval_callback.evaluations_timesteps
    assert saved["results"].shape == (len(saved["timesteps"]), 5)
    assert os.path.isfile(os.path.join(log_folder, "best_model.zip"))

    model.learn(500, callback=None)
    model.learn(500, callback=[checkpoint_callback, eval_callback])
    model.learn(500, callback=lambda _locals, _globals: True)  # SB3's function form

    if model_class in (A2C, PPO):
        env = make_vec_env(env_id(model_class), n_envs=2, seed=0)
        model = model_class("MlpPolicy", env, seed=0, **kwargs)
        model.learn(500, callback=callback)


class Recorder(BaseCallback):
    """Records the hook calls and the count at each ``_on_step``."""

    def __init__(self, stop_at: int | None = None):
        super().__init__()
        self.events: list[str] = []
        self.counts: list[int] = []
        self.stop_at = stop_at

    def _init_callback(self) -> None:
        self.events.append("init")

    def _on_training_start(self) -> None:
        self.events.append("training_start")

    def _on_rollout_start(self) -> None:
        self.events.append("rollout_start")

    def _on_step(self) -> bool:
        self.events.append("step")
        self.counts.append(self.num_timesteps)
        for key in ("new_obs", "rewards", "dones", "infos", "actions", "self"):
            assert key in self.locals, key
        assert self.locals["self"] is self.model
        assert self.training_env is self.model.get_env()
        return self.stop_at is None or self.n_calls < self.stop_at

    def _on_rollout_end(self) -> None:
        self.events.append("rollout_end")

    def _on_training_end(self) -> None:
        self.events.append("training_end")


def test_an_sb3_callback_hears_every_vector_step_of_an_on_policy_rollout():
    model = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=4,
                batch_size=8, n_epochs=1, seed=0, **SMALL)
    recorder = Recorder()
    model.learn(16, callback=recorder)
    # 16 env steps of 2 envs: two rollouts of 4 vector steps, a call per vector step.
    rollout = ["rollout_start"] + ["step"] * 4 + ["rollout_end"]
    assert recorder.events == ["init", "training_start"] + rollout * 2 + ["training_end"]
    assert recorder.n_calls == 8
    assert recorder.counts == [2, 4, 6, 8, 10, 12, 14, 16]
    assert model.num_timesteps == 16


def test_an_sb3_callback_stops_an_on_policy_run_mid_rollout():
    model = A2C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=5,
                seed=0, **SMALL)
    recorder = Recorder(stop_at=3)
    model.learn(1000, callback=recorder)
    # SB3's collect_rollouts returns at once: 3 vector steps taken, no update, no rollout end.
    assert recorder.n_calls == 3 and model.num_timesteps == 6
    assert recorder.events[-2:] == ["step", "training_end"]
    assert "rollout_end" not in recorder.events


@pytest.mark.parametrize("model_class,kwargs", [
    (DQN, dict(learning_starts=4)),
    (SAC, dict(learning_starts=4, batch_size=8)),
])
def test_an_sb3_callback_hears_every_vector_step_off_policy_and_stops(model_class, kwargs):
    env = make_vec_env(env_id(model_class), n_envs=2, seed=0)
    model = model_class("MlpPolicy", env, seed=0, **kwargs, **SMALL)
    recorder = Recorder()
    model.learn(20, callback=recorder)
    assert recorder.n_calls == 10 and recorder.counts == list(range(2, 21, 2))
    assert recorder.events[:2] == ["init", "training_start"]
    assert recorder.events[2:-1] == ["rollout_start", "step", "rollout_end"] * 10
    stopper = Recorder(stop_at=4)
    model.learn(100, callback=stopper)
    assert stopper.n_calls == 4 and model.num_timesteps == 8


def test_frequencies_count_calls_not_env_steps(tmp_path):
    # SB3: save_freq counts calls; with 4 envs a call is 4 env steps.
    model = A2C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=4, seed=0), n_steps=5,
                seed=0, **SMALL)
    checkpoint = CheckpointCallback(save_freq=10, save_path=str(tmp_path), name_prefix="a2c")
    model.learn(200, callback=checkpoint)
    assert sorted(os.listdir(tmp_path)) == [f"a2c_{n}_steps.zip" for n in (120, 160, 200, 40, 80)]


def test_eval_callback_results_reach_the_logger(tmp_path):
    model = DQN("MlpPolicy", "CartPole-v1", learning_starts=10, seed=0, **SMALL)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    evaluation = EvalCallback(gym.make("CartPole-v1"), n_eval_episodes=2, eval_freq=50,
                              log_path=str(tmp_path), verbose=0)
    model.learn(150, callback=evaluation)
    with open(tmp_path / "progress.csv") as f:
        rows = [row for row in csv.DictReader(f) if row.get("eval/mean_reward")]
    assert [int(row["time/total_timesteps"]) for row in rows] == [50, 100, 150]
    means = [float(np.mean(r)) for r in evaluation.evaluations_results]
    assert [float(row["eval/mean_reward"]) for row in rows] == pytest.approx(means)
    assert evaluation.last_mean_reward == pytest.approx(means[-1])


def test_stop_callbacks_need_an_eval_callback_parent():
    model = A2C("MlpPolicy", "CartPole-v1", seed=0, **SMALL)
    with pytest.raises(RLBaseError, match="must be used with an EvalCallback"):
        model.learn(10, callback=StopTrainingOnRewardThreshold(100))
    with pytest.raises(RLBaseError, match="positive integer"):
        EvalCallback(gym.make("CartPole-v1"), eval_freq=0)
    with pytest.raises(RLBaseError, match="for the model classes"):
        from rlbase.a2c.a2c import learn

        learn("mlp", "CartPole-v1", total_timesteps=10, callback=Recorder())


def test_checkpoint_saves_the_replay_buffer(tmp_path):
    model = DQN("MlpPolicy", "CartPole-v1", learning_starts=10, seed=0, **SMALL)
    model.learn(40, callback=CheckpointCallback(20, str(tmp_path), save_replay_buffer=True))
    assert sorted(os.listdir(tmp_path)) == [
        "rl_model_20_steps.zip", "rl_model_40_steps.zip", "rl_model_replay_buffer_20_steps.pkl",
        "rl_model_replay_buffer_40_steps.pkl"]


def test_sb3_callbacks_are_refused_under_mpi():
    # A rank stopping mid-rollout would leave the other ranks waiting: refused in one line.
    from rlbase.common.loops.training_loop import LoopOptions, TrainingLoop

    class TwoRanks:
        def Get_size(self) -> int:
            return 2

    model = A2C("MlpPolicy", "CartPole-v1", seed=0, **SMALL)
    with pytest.raises(RLBaseError, match="under mpiexec write callback"):
        TrainingLoop(model.model, model.get_env(), 10, LoopOptions(hooks=Recorder()),
                     comm=TwoRanks())
