"""Stable-Baselines3's tests/test_utils.py, ported: the make_vec_env, Monitor and is_wrapped
parts (rlbase.common.envs.env_util). Left out: make_atari_env (rlbase applies the Atari
preprocessing in Baselines' make_vec_env, rlbase.common.envs.make, instead) and
test_env_auto_monitor_wrap (rlbase monitors a model's env with one VecMonitor, not a Monitor
per env). Plus Baselines' make_vec_env writing its monitor file into logger.get_dir()."""

import os
import shutil

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.envs.env_util import is_wrapped, make_vec_env, unwrap_wrapper
from rlbase.common.envs.make import ensure_monitor
from rlbase.common.envs.make import make_vec_env as baselines_make_vec_env
from rlbase.common.envs.monitor import Monitor, load_results
from rlbase.common.logs import logger
from rlbase.common.vec_env import DummyVecEnv, SubprocVecEnv


@pytest.mark.parametrize("env_id", ["CartPole-v1", lambda: gym.make("CartPole-v1")])
@pytest.mark.parametrize("n_envs", [1, 2])
@pytest.mark.parametrize("vec_env_cls", [None, SubprocVecEnv])
@pytest.mark.parametrize("wrapper_class", [None, gym.wrappers.RecordEpisodeStatistics])
def test_make_vec_env(env_id, n_envs, vec_env_cls, wrapper_class):
    env = make_vec_env(env_id, n_envs, vec_env_cls=vec_env_cls, wrapper_class=wrapper_class,
                       monitor_dir=None, seed=0)
    assert env.num_envs == n_envs
    if vec_env_cls is None:
        assert isinstance(env, DummyVecEnv)
        if wrapper_class is not None:
            assert isinstance(env.envs[0], wrapper_class)
        else:
            assert isinstance(env.envs[0], Monitor)
    else:
        assert isinstance(env, SubprocVecEnv)
    assert env.env_is_wrapped(Monitor) == [True] * n_envs
    env.close()


def test_make_vec_env_func_checker():
    """The env functions must return distinct envs."""
    env = gym.make("CartPole-v1")
    with pytest.raises(ValueError):
        make_vec_env(lambda: env, n_envs=2)
    env.close()


def test_vec_env_kwargs():
    env = make_vec_env("MountainCarContinuous-v0", n_envs=1, seed=0,
                       env_kwargs={"goal_velocity": 0.11})
    assert env.get_attr("goal_velocity")[0] == 0.11


def test_vec_env_wrapper_kwargs():
    # SB3 used its MaxAndSkipEnv(skip=3); any wrapper with a keyword shows the same.
    env = make_vec_env("MountainCarContinuous-v0", n_envs=1, seed=0,
                       wrapper_class=gym.wrappers.TimeLimit,
                       wrapper_kwargs={"max_episode_steps": 3})
    assert env.get_attr("_max_episode_steps")[0] == 3
    env.reset()
    for _ in range(3):
        _, _, _, truncated, _ = env.step(np.zeros((1, 1), np.float32))
    assert truncated[0]


def test_vec_env_monitor_kwargs():
    env = make_vec_env("MountainCarContinuous-v0", n_envs=1, seed=0,
                       monitor_kwargs={"allow_early_resets": False})
    assert env.get_attr("allow_early_resets")[0] is False

    env = make_vec_env("MountainCarContinuous-v0", n_envs=1, seed=0,
                       monitor_kwargs={"allow_early_resets": True})
    assert env.get_attr("allow_early_resets")[0] is True


def test_custom_vec_env(tmp_path):
    monitor_dir = tmp_path / "test_make_vec_env/"
    env = make_vec_env("CartPole-v1", n_envs=1, monitor_dir=monitor_dir, seed=0,
                       vec_env_cls=SubprocVecEnv, vec_env_kwargs={"start_method": None})
    assert env.num_envs == 1
    assert isinstance(env, SubprocVecEnv)
    assert os.path.isdir(monitor_dir)
    env.close()
    shutil.rmtree(monitor_dir)

    # DummyVecEnv takes no such keyword
    with pytest.raises(TypeError):
        make_vec_env("CartPole-v1", n_envs=1, vec_env_kwargs={"dummy": False})


def test_is_wrapped():
    env = gym.make("Pendulum-v1")
    env = gym.Wrapper(env)
    assert not is_wrapped(env, Monitor)
    monitor_env = Monitor(env)
    assert is_wrapped(monitor_env, Monitor)
    env = gym.Wrapper(monitor_env)
    assert is_wrapped(env, Monitor)
    assert unwrap_wrapper(env, Monitor) == monitor_env


# --- beyond SB3's file ------------------------------------------------------------------------


def _run(venv, steps):
    venv.reset()
    for _ in range(steps):
        venv.step(np.array([venv.action_space.sample() for _ in range(venv.num_envs)]))


def test_make_vec_env_monitor_files_and_seeds(tmp_path):
    env = make_vec_env("CartPole-v1", n_envs=2, seed=7, start_index=3, monitor_dir=tmp_path)
    obs = env.reset()
    # Env i is reset with seed + i; files are named by rank (start_index + i).
    for i in range(2):
        assert np.array_equal(obs[i], gym.make("CartPole-v1").reset(seed=7 + i)[0])
    assert sorted(os.listdir(tmp_path)) == ["3.monitor.csv", "4.monitor.csv"]
    for _ in range(60):
        env.step(np.array([0, 0]))
    returns = [r for rets in env.get_attr("episode_returns") for r in rets]
    env.close()
    assert returns and sorted(load_results(tmp_path)["r"]) == sorted(returns)


def test_make_vec_env_refuses_bad_input():
    with pytest.raises(ValueError, match="n_envs must be a positive integer, got 0"):
        make_vec_env("CartPole-v1", n_envs=0)
    with pytest.raises(ValueError, match="unknown env id 'CartPol-v1'"):
        make_vec_env("CartPol-v1")


def test_subproc_start_method_and_context_are_one_setting():
    with pytest.raises(ValueError, match="they are one setting"):
        SubprocVecEnv([lambda: gym.make("CartPole-v1")], context="spawn", start_method="fork")


def test_env_monitors_with_files_get_a_vec_monitor_without_one(tmp_path):
    """An algorithm's VecMonitor over envs that write their own monitor files keeps statistics
    only: a second writer of ``0.monitor.csv`` in the same folder would destroy it."""
    venv = ensure_monitor(make_vec_env("CartPole-v1", n_envs=2, seed=0, monitor_dir=tmp_path),
                          str(tmp_path))
    assert venv.filename is None
    _run(venv, 100)
    venv.close()
    assert sorted(os.listdir(tmp_path)) == ["0.monitor.csv", "1.monitor.csv"]
    assert sorted(load_results(tmp_path)["r"]) == sorted(venv.episode_returns)
    # Without files of their own, the VecMonitor writes one.
    folder = tmp_path / "vec"
    venv = ensure_monitor(make_vec_env("CartPole-v1", n_envs=2, seed=0), str(folder))
    assert venv.filename == str(folder / "0.monitor.csv")
    venv.close()


def test_baselines_make_vec_env_monitors_into_the_logger_dir(tmp_path):
    """Baselines: logger.configure(dir), then make_vec_env(...) writes <dir>/<rank>.monitor.csv."""
    with logger.scoped_configure(str(tmp_path), ["csv"]):
        venv = baselines_make_vec_env("CartPole-v1", num_env=2, seed=0)
        no_file = baselines_make_vec_env("CartPole-v1", num_env=1, seed=0, monitor_dir=None)
    assert no_file.filename is None
    assert venv.filename == str(tmp_path / "0.monitor.csv")
    _run(venv, 50)
    venv.close()
    assert len(load_results(tmp_path)) == len(venv.episode_returns) > 0
    # No logger folder configured: no file.
    with logger.using(logger.DEFAULT):
        assert baselines_make_vec_env("CartPole-v1", num_env=1).filename is None


@pytest.mark.parametrize("vec_env_cls", [DummyVecEnv, SubprocVecEnv])
def test_get_set_attr_and_env_method_with_indices(vec_env_cls):
    env = make_vec_env("CartPole-v1", n_envs=3, seed=0, vec_env_cls=vec_env_cls)
    env.set_attr("allow_early_resets", False, indices=[0, 2])
    assert env.get_attr("allow_early_resets") == [False, True, False]
    assert env.get_attr("allow_early_resets", indices=1) == [True]
    env.reset()
    assert env.env_method("get_total_steps", indices=[2]) == [0]
    env.step(np.array([0, 0, 0]))
    assert env.env_method("get_total_steps") == [1, 1, 1]
    assert env.env_is_wrapped(gym.wrappers.TimeLimit, indices=[0]) == [True]
    with pytest.raises(ValueError, match="env index 3 out of range for 3 envs"):
        env.get_attr("allow_early_resets", indices=[3])
    env.close()
