"""A model saved by any path loads by every other path and acts the same (the one contract).

Save paths: the CLI (with the env type's defaults: networks and architecture the classes do not
choose), learn() from a script, a model class, and a CLI checkpoint. Load paths:
rlbase.registry.load, the class's load, learn(total_timesteps=0, load_path=...) and the CLI
(--num_timesteps=0 --load_path --play). Every pair is checked for every algorithm: the
deterministic actions on fixed observations must be equal.
"""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

import rlbase
from rlbase import registry
from rlbase.common.envs.make import make_vec_env
from rlbase.common.logs import logger

# (env id, CLI flags that keep the run short, extra class/learn() arguments)
CASES = {
    "a2c": ("CartPole-v1", ["--num_env=2"], {}),
    "ppo": ("CartPole-v1", ["--num_env=2", "--nsteps=16", "--noptepochs=1"],
            {"nsteps": 16, "nminibatches": 1, "noptepochs": 1}),
    "acer": ("CartPole-v1", ["--num_env=2", "--replay_start=20", "--buffer_size=200"],
             {"replay_start": 20, "buffer_size": 200}),
    "dqn": ("CartPole-v1", ["--learning_starts=50", "--best_model_interval=None"],
            {"learning_starts": 50}),
    "ddpg": ("Pendulum-v1", ["--learning_starts=50", "--buffer_size=1000"],
             {"learning_starts": 50, "buffer_size": 1000}),
    "sac": ("Pendulum-v1", ["--learning_starts=50", "--buffer_size=1000"],
            {"learning_starts": 50, "buffer_size": 1000}),
    "es": ("CartPole-v1", ["--num_env=2", "--popsize=4"], {"popsize": 4}),
    "qlearning": ("FrozenLake-v1", ["--num_env=1"], {}),
    "acktr": ("Pendulum-v1", ["--num_env=2", "--nsteps=8"], {"nsteps": 8}),
    "trpo": ("Pendulum-v1", ["--num_env=2", "--nsteps=8", "--vf_batch_size=8"],
             {"nsteps": 8, "vf_batch_size": 8}),
}
CLASSES = {"a2c": "A2C", "ppo": "PPO", "acer": "ACER", "dqn": "DQN", "ddpg": "DDPG",
           "sac": "SAC", "es": "ES", "qlearning": "QLearning", "acktr": "ACKTR",
           "trpo": "TRPO"}
STEPS = 200


def observations(env_id: str) -> np.ndarray:
    env = make_vec_env(env_id, num_env=1, seed=7)
    space = env.observation_space
    space.seed(3)
    return np.stack([space.sample() for _ in range(8)])


def actions(model, obs: np.ndarray) -> np.ndarray:
    return np.asarray(model.step(obs, None, None, deterministic=True)[0])


def save_all_ways(alg: str, folder: str) -> dict[str, str]:
    """The model files of the four save paths."""
    from rlbase.run import main

    env_id, flags, extra = CASES[alg]
    files = {"cli": os.path.join(folder, "cli.zip")}
    ckpt = os.path.join(folder, "ckpt")
    main([f"--alg={alg}", f"--env={env_id}", f"--num_timesteps={STEPS}", "--seed=0",
          f"--save_path={files['cli']}", f"--checkpoint_path={ckpt}",
          f"--checkpoint_interval={STEPS // 2}", "--no_progress", "--log_format=csv",
          f"--log_path={os.path.join(folder, 'log')}", *flags])
    files["checkpoint"] = sorted(glob.glob(os.path.join(ckpt, "checkpoint_*.zip")))[-1]
    learn = registry.get_algorithm(alg).learn
    with logger.scoped_configure(format_strs=[]):
        model = learn("mlp", env_id, total_timesteps=STEPS, seed=1, log_interval=10**9,
                      **extra)
    files["learn"] = os.path.join(folder, "learn.zip")
    model.save(files["learn"])
    cls = getattr(rlbase, CLASSES[alg])
    policy = "TabularPolicy" if alg == "qlearning" else "MlpPolicy"
    obj = cls(policy, env_id, seed=2, **extra).learn(STEPS)
    files["class"] = os.path.join(folder, "class.zip")
    obj.save(files["class"])
    return files


def load_all_ways(alg: str, path: str) -> dict[str, object]:
    """The same file loaded by the four load paths (the CLI's through its play run)."""
    from rlbase.run import main

    env_id, flags, _ = CASES[alg]
    cls = getattr(rlbase, CLASSES[alg])
    with logger.scoped_configure(format_strs=[]):
        by_learn = registry.get_algorithm(alg).learn("mlp", env_id, total_timesteps=0,
                                                     load_path=path)
    by_cli = main([f"--alg={alg}", f"--env={env_id}", "--num_timesteps=0",
                   f"--load_path={path}", "--play", "--play_episodes=1", "--no_progress",
                   *[f for f in flags if f.startswith("--num_env")]])
    return {"registry": registry.load(path), "class": cls.load(path, env=env_id),
            "learn": by_learn, "cli": by_cli}


# (TRPO's and ACKTR's files: tests/baselines/test_serialization.py and the resume tests.)
@pytest.mark.parametrize("alg", [a if a in ("a2c", "qlearning") else
                                 pytest.param(a, marks=pytest.mark.slow) for a in CASES])
def test_every_save_path_loads_by_every_load_path(alg, tmp_path):
    files = save_all_ways(alg, str(tmp_path))
    obs = observations(CASES[alg][0])
    for saved_by, path in files.items():
        reference = actions(registry.load(path), obs)
        for loaded_by, model in load_all_ways(alg, path).items():
            np.testing.assert_array_equal(actions(model, obs), reference,
                                          err_msg=f"{alg}: saved by {saved_by}, "
                                                  f"loaded by {loaded_by}")
            assert model.num_timesteps == registry.load(path).num_timesteps
