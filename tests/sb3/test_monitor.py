"""Stable-Baselines3's tests/test_monitor.py, ported: Monitor's statistics and file,
appending, load_results / get_monitor_files, and the errors Monitor raises (rlbase's
messages). Plus: an env whose reset takes no seed or options, and VecMonitor's file still
being the same format."""

import json
import os
import uuid
import warnings

import gymnasium as gym
import numpy as np
import pandas
import pytest

from rlbase.common.envs.monitor import (
    LoadMonitorResultsError,
    Monitor,
    get_monitor_files,
    load_results,
)
from rlbase.common.vec_env import DummyVecEnv, VecMonitor

DEMO_MONITOR = """#{"t_start": 1771532779.9940808, "env_id": "Pendulum-v1"}
r,l,t
-1463.466035,200,1.622209"""

EMPTY_MONITOR = """#{"t_start": 1771532779.9920808, "env_id": "Pendulum-v1"}
r,l,t"""


def test_monitor(tmp_path):
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    monitor_file = os.path.join(str(tmp_path), f"rlbase-test-{uuid.uuid4()}.monitor.csv")
    monitor_env = Monitor(env, monitor_file)
    monitor_env.reset()
    total_steps = 1000
    ep_rewards, ep_lengths = [], []
    ep_len, ep_reward = 0, 0
    for _ in range(total_steps):
        _, reward, terminated, truncated, info = monitor_env.step(monitor_env.action_space.sample())
        ep_len += 1
        ep_reward += reward
        if terminated or truncated:
            assert info["episode"]["r"] == ep_reward and info["episode"]["l"] == ep_len
            ep_rewards.append(ep_reward)
            ep_lengths.append(ep_len)
            monitor_env.reset()
            ep_len, ep_reward = 0, 0

    monitor_env.close()
    assert monitor_env.get_total_steps() == total_steps
    assert sum(ep_lengths) == sum(monitor_env.get_episode_lengths())
    assert sum(monitor_env.get_episode_rewards()) == sum(ep_rewards)
    assert len(monitor_env.get_episode_times()) == len(ep_rewards)

    with open(monitor_file) as file_handler:
        first_line = file_handler.readline()
        assert first_line.startswith("#")
        metadata = json.loads(first_line[1:])
        assert metadata["env_id"] == "CartPole-v1"
        assert set(metadata.keys()) == {"env_id", "t_start"}, "Incorrect keys in monitor metadata"
        table = pandas.read_csv(file_handler, index_col=None)
        assert set(table.keys()) == {"l", "t", "r"}, "Incorrect keys in monitor logline"
        assert list(table["l"]) == ep_lengths
    os.remove(monitor_file)

    # Missing folders are created
    monitor_dir = os.path.join(str(tmp_path), "missing-dir")
    monitor_file = os.path.join(monitor_dir, f"rlbase-test-{uuid.uuid4()}.monitor.csv")
    assert os.path.exists(monitor_dir) is False
    _ = Monitor(env, monitor_file)
    assert os.path.exists(monitor_dir) is True
    os.remove(monitor_file)
    os.rmdir(monitor_dir)


def test_monitor_load_results(tmp_path):
    original_tmp_path = tmp_path
    tmp_path = str(tmp_path)
    env1 = gym.make("CartPole-v1")
    env1.reset(seed=0)
    with pytest.raises(LoadMonitorResultsError):
        load_results(tmp_path)

    monitor_file1 = os.path.join(tmp_path, f"rlbase-test-{uuid.uuid4()}.monitor.csv")
    monitor_env1 = Monitor(env1, monitor_file1)

    monitor_files = get_monitor_files(tmp_path)
    assert len(monitor_files) == 1
    assert monitor_file1 in monitor_files

    monitor_env1.reset()
    episode_count1 = 0
    for _ in range(1000):
        _, _, terminated, truncated, _ = monitor_env1.step(monitor_env1.action_space.sample())
        if terminated or truncated:
            episode_count1 += 1
            monitor_env1.reset()

    results_size1 = len(load_results(tmp_path).index)
    assert results_size1 == episode_count1

    env2 = gym.make("CartPole-v1")
    env2.reset(seed=0)
    monitor_file2 = os.path.join(tmp_path, f"rlbase-test-{uuid.uuid4()}.monitor.csv")
    monitor_env2 = Monitor(env2, monitor_file2)
    monitor_files = get_monitor_files(tmp_path)
    assert len(monitor_files) == 2
    assert monitor_file1 in monitor_files
    assert monitor_file2 in monitor_files

    episode_count2 = 0
    for _ in range(2):
        # Appending to the existing file
        monitor_env2 = Monitor(env2, monitor_file2, override_existing=False)
        monitor_env2.reset()
        for _ in range(1000):
            _, _, terminated, truncated, _ = monitor_env2.step(monitor_env2.action_space.sample())
            if terminated or truncated:
                episode_count2 += 1
                monitor_env2.reset()

    results = load_results(tmp_path)
    assert len(results.index) == results_size1 + episode_count2
    assert list(results["t"]) == sorted(results["t"])

    empty_monitor = original_tmp_path / "demo" / "empty_monitor.csv"
    empty_monitor.parent.mkdir()

    empty_monitor.write_text(EMPTY_MONITOR)
    empty_df = load_results(empty_monitor.parent)
    assert empty_df.empty
    assert list(empty_df.columns) == ["index", "r", "l", "t"]

    # Empty and non-empty files together: no warning (SB3 GH#2213)
    (empty_monitor.parent / "0.monitor.csv").write_text(DEMO_MONITOR)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        df = load_results(empty_monitor.parent)
    assert len(record) == 0
    assert list(df.columns) == ["index", "r", "l", "t"]
    assert len(df) == 1
    # t counts from the earliest file's t_start: 1.622209 + (…40808 - …20808)
    assert df["t"][0] == pytest.approx(1.622209 + 0.002, abs=1e-6)
    assert df["r"][0] == -1463.466035


def test_monitor_error_cases():
    env = gym.make("CartPole-v1")
    env.reset(seed=0)

    with pytest.raises(RuntimeError, match="reset\\(\\) before the episode ended"):
        monitor_env = Monitor(env, allow_early_resets=False)
        monitor_env.reset()
        monitor_env.step(monitor_env.action_space.sample())
        monitor_env.reset()

    env2 = gym.make("CartPole-v1")
    env2.reset(seed=0)
    with pytest.raises(ValueError, match="needs the keyword argument 'test_key'"):
        monitor_env2 = Monitor(env2, reset_keywords=("test_key",))
        monitor_env2.reset()

    # CartPole takes no test_key: options is a reset keyword it takes
    monitor_env2 = Monitor(env2, reset_keywords=("options",))
    monitor_env2.reset(options={"ok": 1})

    env3 = gym.make("CartPole-v1")
    env3.reset(seed=0)
    with pytest.raises(RuntimeError, match="call reset\\(\\) first"):
        monitor_env3 = Monitor(env3)
        monitor_env3.step(monitor_env3.action_space.sample())


def test_monitor_info_and_reset_keywords_columns(tmp_path):
    class Counting(gym.Env):
        observation_space = gym.spaces.Discrete(2)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            self.steps = 0
            return 0, {}

        def step(self, action):
            self.steps += 1
            return 0, 1.5, self.steps == 3, False, {"score": 10 * self.steps}

    env = Monitor(Counting(), str(tmp_path / "k"), reset_keywords=("options",),
                  info_keywords=("score",))
    env.reset(options={"level": 2})
    for _ in range(3):
        _, _, _, _, info = env.step(0)
    env.close()
    assert info["episode"]["score"] == 30 and info["episode"]["options"] == {"level": 2}
    lines = (tmp_path / "k.monitor.csv").read_text().splitlines()
    assert lines[1] == "r,l,t,options,score"
    assert lines[2].startswith("4.5,3,") and lines[2].endswith(",{'level': 2},30")


class NoArgumentReset(gym.Env):
    """An env written before gymnasium 0.26: reset takes neither seed nor options."""

    observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self):
        self.steps = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.steps += 1
        obs = np.full(1, self.np_random.uniform(-1, 1), np.float32)
        return obs, 1.0, self.steps == 2, False, {}


def test_monitor_and_dummy_vec_env_take_a_reset_without_arguments():
    venv = DummyVecEnv([lambda: Monitor(NoArgumentReset())])
    venv.seed(3)
    venv.reset()
    first = venv.step(np.array([0]))[0]
    _, rewards, terminated, _, infos = venv.step(np.array([0]))
    assert terminated[0] and infos[0]["episode"]["r"] == 2.0
    # The seed reached the env's np_random, as gymnasium's Env.reset(seed=3) would.
    again = DummyVecEnv([NoArgumentReset])
    again.seed(3)
    again.reset()
    assert np.array_equal(again.step(np.array([0]))[0], first)


def test_vec_monitor_writes_the_same_format(tmp_path):
    venv = VecMonitor(DummyVecEnv([lambda: gym.make("CartPole-v1")]), str(tmp_path / "v"))
    venv.seed(0)
    venv.reset()
    while not venv.episode_returns:
        venv.step(np.array([0]))
    venv.close()
    results = load_results(tmp_path)
    assert list(results.columns) == ["index", "r", "l", "t"]
    assert list(results["r"]) == venv.episode_returns
