"""One process of the determinism check: train every given algorithm with seed 0 on an env id,
a gymnasium env and a user's VecEnv, and continue a saved model after ``Cls.load(path, env,
seed=0)``; print one JSON line ``{alg: {kind: sha256 of every array the model holds}}``.

    python tests/determinism_worker.py SAVE_DIR LOAD_DIR ALG [ALG ...]
    python tests/determinism_worker.py --table [ALG ...]   # two processes, markdown table

The 'load' case saves its 'id' model to SAVE_DIR and loads LOAD_DIR's file of that name, so
two processes given the same LOAD_DIR continue the very same file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

import gymnasium as gym
import numpy as np

# (env id, learn()/class arguments keeping the run tiny); TD3 is DDPG's twin-critic options.
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "a2c": ("CartPole-v1", {"nsteps": 5}),
    "acer": ("CartPole-v1", {"replay_start": 20, "buffer_size": 200}),
    "ddpg": ("Pendulum-v1", {"learning_starts": 50, "buffer_size": 1000, "batch_size": 32}),
    "dqn": ("CartPole-v1", {"learning_starts": 50, "batch_size": 32,
                            "best_model_interval": None}),
    "es": ("CartPole-v1", {"popsize": 4}),
    "ppo": ("CartPole-v1", {"nsteps": 32, "nminibatches": 2, "noptepochs": 2}),
    "qlearning": ("CliffWalking-v1", {}),
    "sac": ("Pendulum-v1", {"learning_starts": 50, "buffer_size": 1000, "batch_size": 32}),
    "td3": ("Pendulum-v1", {"learning_starts": 50, "buffer_size": 1000, "batch_size": 32,
                            "twin_q": True, "policy_delay": 2, "target_noise": 0.2}),
}
CLASSES = {"a2c": "A2C", "acer": "ACER", "ddpg": "DDPG", "dqn": "DQN", "es": "ES",
           "ppo": "PPO", "qlearning": "QLearning", "sac": "SAC", "td3": "DDPG"}
STEPS = 200
KINDS = ("env id", "gym env", "user VecEnv", "after load")


def digest(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over every array, by name."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        h.update(name.encode())
        h.update(np.ascontiguousarray(arrays[name]).tobytes())
    return h.hexdigest()


def scramble_generators() -> None:
    """Put python's, numpy's and TensorFlow's global generators in a state of this process."""
    import random

    import tensorflow as tf

    entropy = int.from_bytes(os.urandom(4), "little") % 2**31
    random.seed(entropy)
    np.random.seed(entropy)
    tf.random.set_seed(entropy)


def run(alg: str, save_dir: str, load_dir: str) -> dict[str, str]:
    import rlbase
    from rlbase import registry
    from rlbase.common.logs import logger
    from rlbase.common.vec_env import DummyVecEnv

    env_id, extra = CASES[alg]
    learn = registry.get_algorithm("ddpg" if alg == "td3" else alg).learn
    envs = {"env id": env_id, "gym env": gym.make(env_id),
            "user VecEnv": DummyVecEnv([lambda: gym.make(env_id)])}
    out = {}
    with logger.scoped_configure(format_strs=[]):
        for kind, env in envs.items():
            model = learn("mlp", env, total_timesteps=STEPS, seed=0, log_interval=10**9,
                          **extra)
            out[kind] = digest(model.get_parameters())
            if kind == "env id":
                model.save(os.path.join(save_dir, f"{alg}.zip"))
        cls = getattr(rlbase, CLASSES[alg])
        scramble_generators()  # load(seed=0) alone must make the run repeat
        loaded = cls.load(os.path.join(load_dir, f"{alg}.zip"), env=env_id, seed=0)
        out["after load"] = digest(loaded.learn(STEPS).model.get_parameters())
    return out


def table(algs: list[str]) -> str:
    """Two fresh processes of this worker (the second continues the first's saved files) and
    the markdown table of which digests agree."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for name in ("first", "second"):
            os.makedirs(os.path.join(tmp, name))
            out = subprocess.run([sys.executable, __file__, os.path.join(tmp, name),
                                  os.path.join(tmp, "first"), *algs], capture_output=True,
                                 text=True, check=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    rows = ["| algorithm | " + " | ".join(KINDS) + " |", "|---" * (len(KINDS) + 1) + "|"]
    for alg in algs:
        same = ["same" if runs[0][alg][k] == runs[1][alg][k] else "**different**"
                for k in KINDS]
        rows.append(f"| {alg} | " + " | ".join(same) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        print(table(sys.argv[2:] or sorted(CASES)))
    else:
        save, load, *algs = sys.argv[1:]
        print(json.dumps({alg: run(alg, save, load) for alg in algs}), flush=True)
