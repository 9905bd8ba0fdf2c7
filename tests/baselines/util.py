"""Helpers of Baselines' tests (baselines/common/tests/util.py and test_with_mpi.py) for
rlbase's API.

Differences from Baselines: no TF graphs or sessions (``learn`` seeds TensorFlow itself);
VecEnvs return ``(obs, rewards, terminated, truncated, infos)`` and an episode is done when
either flag is set; seeding goes through ``venv.seed(s)`` (the envs' next reset);
``smoketest`` returns the finished process so that callers can check its exit status
(Baselines' ignored it).
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Callable

import numpy as np
import pytest

from rlbase.common.vec_env import DummyVecEnv

N_TRIALS = 10000
N_EPISODES = 100
TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_DIR = os.path.dirname(TESTS_DIR)


def _act(model: Any, obs: np.ndarray, state: Any) -> tuple[np.ndarray, Any]:
    """One stochastic step, the recurrent state carried (Baselines passed M=[False])."""
    if state is None:
        return model.step(obs)[0], None
    actions, _, state, _ = model.step(obs, state, np.zeros(len(obs), bool))
    return actions, state


def simple_test(env_fn: Callable, learn_fn: Callable, min_reward_fraction: float,
                n_trials: int = N_TRIALS) -> float:
    """Train on one env seeded 0, then step the learnt policy ``n_trials`` times; the summed
    reward must exceed ``min_reward_fraction * n_trials``."""
    np.random.seed(0)
    env = DummyVecEnv([env_fn])
    env.seed(0)
    model = learn_fn(env)
    total, done, state, obs = 0.0, True, None, None
    for _ in range(n_trials):
        if done:
            obs = env.reset()
            state = model.initial_state
        actions, state = _act(model, obs, state)
        obs, rewards, terminated, truncated, _ = env.step(actions)
        done = bool(terminated[0] or truncated[0])
        total += float(rewards[0])
    env.close()
    print(f"reward in {n_trials} trials: {total}")
    assert total > min_reward_fraction * n_trials, (
        f"summed reward {total} is not above {min_reward_fraction} x {n_trials} trials")
    return total


def reward_per_episode_test(env_fn: Callable, learn_fn: Callable, min_avg_reward: float,
                            n_trials: int = N_EPISODES, seed: int | None = None) -> float:
    """Train, then play ``n_trials`` episodes; their mean return must exceed
    ``min_avg_reward``."""
    env = DummyVecEnv([env_fn])
    env.seed(seed)
    model = learn_fn(env)
    _, _, rewards = rollout(env, model, n_trials)
    env.close()
    average = sum(sum(r) for r in rewards) / n_trials
    print(f"average return over {n_trials} episodes: {average}")
    assert average > min_avg_reward, (
        f"average return over {n_trials} episodes ({average}) is not above {min_avg_reward}")
    return average


def rollout(env: Any, model: Any, n_trials: int) -> tuple[list, list, list]:
    """Play ``n_trials`` episodes of env 0: (observations, actions, rewards) per episode."""
    observations, actions, rewards = [], [], []
    for _ in range(n_trials):
        obs = env.reset()
        state = model.initial_state
        episode: tuple[list, list, list] = ([], [], [])
        while True:
            action, state = _act(model, obs, state)
            obs, rew, terminated, truncated, _ = env.step(action)
            episode[0].append(obs)
            episode[1].append(action)
            episode[2].append(float(rew[0]))
            if terminated[0] or truncated[0]:
                break
        observations.append(episode[0])
        actions.append(episode[1])
        rewards.append(episode[2])
    return observations, actions, rewards


def smoketest(argstr: str, log_dir: str | None = None, timeout: float = 600,
              **kwargs: Any) -> subprocess.CompletedProcess:
    """Run ``python -m rlbase.run <argstr> --key=value...`` logging into ``log_dir`` (None: a
    new temporary folder)."""
    args = [sys.executable, "-m", "rlbase.run", *argstr.split()]
    args += [f"--{key}={value}" for key, value in kwargs.items()]
    env = dict(os.environ, RLBASE_LOGDIR=log_dir or tempfile.mkdtemp())
    return subprocess.run(args, env=env, cwd=REPO_DIR, capture_output=True, text=True,
                          timeout=timeout)


def _mpiexec() -> str | None:
    """mpiexec on the PATH, else the one installed beside this Python (the mpich wheel)."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return shutil.which("mpiexec") or (beside if os.path.isfile(beside) else None)


def with_mpi(nproc: int = 2, timeout: float = 30, skip_if_no_mpi: bool = True) -> Callable:
    """Run the decorated test in ``nproc`` MPI processes (``mpiexec``); it fails when any
    process fails or the run takes more than ``timeout`` seconds."""

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> None:
            import cloudpickle

            payload = base64.b64encode(cloudpickle.dumps(lambda: fn(*args, **kwargs)))
            path = os.pathsep.join([TESTS_DIR, os.environ.get("PYTHONPATH", "")])
            subprocess.check_call(
                [_mpiexec() or "mpiexec", "-n", str(nproc), sys.executable, "-m",
                 "baselines.util", payload.decode()],
                env=dict(os.environ, PYTHONPATH=path), timeout=timeout)

        if not skip_if_no_mpi:
            return run
        missing = importlib.util.find_spec("mpi4py") is None or _mpiexec() is None
        return pytest.mark.skipif(missing, reason="mpi4py or mpiexec is not installed")(run)

    return decorate


if __name__ == "__main__":  # the process side of with_mpi
    import cloudpickle

    body = cloudpickle.loads(base64.b64decode(sys.argv[1]))
    body()
