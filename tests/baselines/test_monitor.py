"""Port of baselines/bench/test_monitor.py.

Deliberate difference: Baselines' ``bench.Monitor`` wrapped one gym env; rlbase monitors a
VecEnv (``VecMonitor``, the same monitor.csv format), so the env is a one-env DummyVecEnv and
``step`` takes a batch of actions. Seeding is ``venv.seed(0)`` (gymnasium's reset(seed=0)).
"""

import json

import gymnasium as gym
import pytest

from rlbase.common.vec_env import DummyVecEnv, VecMonitor


def test_monitor(tmp_path):
    pandas = pytest.importorskip("pandas")
    venv = DummyVecEnv([lambda: gym.make("CartPole-v1")])
    venv.seed(0)
    path = str(tmp_path / "baselines-test.monitor.csv")
    monitored = VecMonitor(venv, path)
    monitored.reset()
    for _ in range(1000):
        monitored.step([0])  # ended episodes reset themselves (gymnasium's autoreset)
    monitored.close()

    with open(path) as f:
        first = f.readline()
        assert first.startswith("#")
        metadata = json.loads(first[1:])
        assert metadata["env_id"] == "CartPole-v1"
        assert set(metadata) == {"env_id", "t_start"}, "unexpected monitor metadata keys"
        rows = pandas.read_csv(f, index_col=None)
    assert set(rows.keys()) == {"l", "t", "r"}, "unexpected monitor columns"
