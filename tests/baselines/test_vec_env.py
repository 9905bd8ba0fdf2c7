"""Port of baselines/common/vec_env/test_vec_env.py: SubprocVecEnv (and ShmemVecEnv, its
alias in rlbase) give exactly what DummyVecEnv gives, with and without ``in_series``, and
SubprocVecEnv works inside MPI processes.

Deliberate differences (gymnasium's API): ``step_wait`` returns
``(obs, rewards, terminated, truncated, infos)``, so four arrays are compared, then the infos
(which hold ``final_observation`` arrays when an episode ends); SimpleEnv's episodes end by
``terminated``.
"""

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.vec_env import DummyVecEnv, ShmemVecEnv, SubprocVecEnv

from .util import with_mpi


def _same_info(info1: dict, info2: dict) -> bool:
    if info1.keys() != info2.keys():
        return False
    return all(np.array_equal(info1[k], info2[k]) for k in info1)


def assert_venvs_equal(venv1, venv2, num_steps):
    """Step both VecEnvs with the same random actions and require identical results."""
    assert venv1.num_envs == venv2.num_envs
    for attr in ("observation_space", "action_space"):
        space1, space2 = getattr(venv1, attr), getattr(venv2, attr)
        assert space1.shape == space2.shape and space1.dtype == space2.dtype, attr
    try:
        obs1, obs2 = venv1.reset(), venv2.reset()
        assert np.shape(obs1) == np.shape(obs2)
        assert np.shape(obs1) == (venv1.num_envs, *venv1.observation_space.shape)
        assert np.allclose(obs1, obs2)
        venv1.action_space.seed(1337)
        for _ in range(num_steps):
            actions = np.array([venv1.action_space.sample() for _ in range(venv1.num_envs)])
            for venv in (venv1, venv2):
                venv.step_async(actions)
            out1, out2 = venv1.step_wait(), venv2.step_wait()
            for part1, part2 in zip(out1[:4], out2[:4]):
                assert np.shape(part1) == np.shape(part2)
                assert np.allclose(part1, part2)
            assert len(out1[4]) == len(out2[4])
            assert all(_same_info(a, b) for a, b in zip(out1[4], out2[4]))
    finally:
        venv1.close()
        venv2.close()


def _env_fns(num_envs, shape, dtype):
    return [(lambda seed=seed: SimpleEnv(seed, shape, dtype)) for seed in range(num_envs)]


@pytest.mark.parametrize("klass", (ShmemVecEnv, SubprocVecEnv),
                         ids=("ShmemVecEnv", "SubprocVecEnv"))
@pytest.mark.parametrize("dtype", ("uint8", "float32"))
def test_vec_env(klass, dtype):
    """A multiprocess VecEnv behaves like DummyVecEnv (the simpler one to trust)."""
    fns = _env_fns(3, (3, 8), dtype)
    assert_venvs_equal(DummyVecEnv(fns), klass(fns), num_steps=100)


@pytest.mark.parametrize("dtype", ("uint8", "float32"))
@pytest.mark.parametrize("num_envs_in_series", (3, 4, 6))
def test_sync_sampling(dtype, num_envs_in_series):
    """SubprocVecEnv with envs in series behaves like DummyVecEnv."""
    fns = _env_fns(12, (3, 8), dtype)
    assert_venvs_equal(DummyVecEnv(fns), SubprocVecEnv(fns, in_series=num_envs_in_series),
                       num_steps=100)


@pytest.mark.parametrize("dtype", ("uint8", "float32"))
@pytest.mark.parametrize("num_envs_in_series", (3, 4, 6))
def test_sync_sampling_sanity(dtype, num_envs_in_series):
    """SubprocVecEnv with envs in series behaves like SubprocVecEnv without."""
    fns = _env_fns(12, (3, 8), dtype)
    assert_venvs_equal(SubprocVecEnv(fns), SubprocVecEnv(fns, in_series=num_envs_in_series),
                       num_steps=100)


class SimpleEnv(gym.Env):
    """Fixed start observation drawn from ``seed``; each action is added to the observation;
    the episode lasts ``seed + 1`` steps and pays ``step / length``."""

    def __init__(self, seed, shape, dtype):
        np.random.seed(seed)
        self._dtype = dtype
        self._start_obs = np.array(np.random.randint(0, 0x100, size=shape), dtype=dtype)
        self._max_steps = seed + 1
        self._cur_obs = None
        self._cur_step = 0
        # high is 0xFF: a Box includes its upper bound, randint excludes it
        self.action_space = gym.spaces.Box(low=0, high=0xFF, shape=shape, dtype=dtype)
        self.observation_space = self.action_space

    def step(self, action):
        self._cur_obs += np.array(action, dtype=self._dtype)
        self._cur_step += 1
        reward = self._cur_step / self._max_steps
        ended = self._cur_step >= self._max_steps
        return self._cur_obs, reward, ended, False, {"foo": "bar" + str(reward)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._cur_obs = self._start_obs
        self._cur_step = 0
        return self._cur_obs, {}

    def render(self):
        raise NotImplementedError


@with_mpi()
def test_mpi_with_subprocvecenv():
    shape = (2, 3, 4)
    nenv = 1
    venv = SubprocVecEnv([lambda: SimpleEnv(0, shape, "float32")] * nenv)
    ob = venv.reset()
    venv.close()
    assert ob.shape == (nenv, *shape)
