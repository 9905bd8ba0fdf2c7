"""The golden runs: every algorithm (and the variants whose code paths differ) trained briefly
with seed 0 in one fresh process; prints one JSON object ``{case: record}``.

    python tests/golden_worker.py [CASE ...]     # the records, as JSON on the last line
    python tests/golden_worker.py --record       # rewrite tests/golden.json

A record holds the sha256 of every array the model saves, each array's float64 sum (to say how
far apart two machines are), the timestep count and every logged value except wall-clock ones.
``tests/test_golden.py`` holds today's code to the committed records: a restructuring must give
the same bits; a deliberate change of a rule re-records the cases it changes, in a commit of its
own that says why.
"""

from __future__ import annotations

import csv
import json
import math
import os
import platform
import sys
import tempfile
from typing import Any

import numpy as np
from determinism_worker import digest  # sha256 over every array, by name

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden.json")

OFF = {"learning_starts": 50, "buffer_size": 1000, "batch_size": 32, "log_interval": 1}
SMALL_NET = {"num_layers": 1, "num_hidden": 16}

# case: (algorithm, env, total_timesteps, learn() arguments)
CASES: dict[str, tuple[str, str, int, dict[str, Any]]] = {
    "a2c": ("a2c", "CartPole-v1", 400, {"nsteps": 5, "log_interval": 10}),
    "a2c_continuous": ("a2c", "Pendulum-v1", 200, {"nsteps": 5, "log_interval": 10}),
    "acer": ("acer", "CartPole-v1", 400, {"replay_start": 20, "buffer_size_per_env": 200,
                                           "log_interval": 5}),
    "acktr": ("acktr", "CartPole-v1", 400, {"nsteps": 20, "log_interval": 2}),
    "ddpg": ("ddpg", "Pendulum-v1", 300, OFF),
    "ddpg_param_noise": ("ddpg", "Pendulum-v1", 300,
                         {**OFF, "noise_type": "adaptive-param_0.2",
                          "param_noise_adaption_interval": 20}),
    "td3": ("ddpg", "Pendulum-v1", 300, {**OFF, "twin_q": True, "policy_delay": 2,
                                         "target_noise": 0.2, "train_freq": 2}),
    "dqn": ("dqn", "CartPole-v1", 400, {**OFF, "best_model_interval": None,
                                        "target_update_interval": 50, "train_freq": 4}),
    "dqn_prioritized": ("dqn", "CartPole-v1", 400,
                        {**OFF, "best_model_interval": None, "prioritized_replay": True,
                         "target_update_interval": 50}),
    "dqn_her": ("dqn", "BitFlip", 300, {**OFF, "best_model_interval": None,
                                        "replay_buffer_class": "her", **SMALL_NET}),
    "es": ("es", "CartPole-v1", 2000, {"popsize": 4, "log_interval": 1}),
    "gail": ("gail", "CartPole-v1", 192, {"nsteps": 64, "vf_batch_size": 32, "g_step": 1,
                                          "num_layers": 1, "num_hidden": 8,
                                          "adversary_hidden_size": 8, "log_interval": 1}),
    "ppo": ("ppo", "CartPole-v1", 256, {"nsteps": 32, "nminibatches": 2, "noptepochs": 2,
                                        "log_interval": 1}),
    "ppo_continuous": ("ppo", "Pendulum-v1", 256, {"nsteps": 64, "nminibatches": 2,
                                                   "noptepochs": 2, "log_interval": 1}),
    "pqn": ("pqn", "CartPole-v1", 512, {"nsteps": 64, "nminibatches": 2, "noptepochs": 2,
                                        "log_interval": 1}),
    "qlearning": ("qlearning", "CliffWalking-v1", 2000, {}),
    "qrdqn": ("qrdqn", "CartPole-v1", 400, {**OFF, "target_update_interval": 50, "train_freq": 4,
                                            "n_quantiles": 5}),
    "sac": ("sac", "Pendulum-v1", 300, OFF),
    "trpo": ("trpo", "CartPole-v1", 256, {"nsteps": 64, "log_interval": 1}),
}

# logged columns that measure the machine, not the run
CLOCK = ("time/fps", "time/time_elapsed", "time/sps")


def _balancer(obs: np.ndarray) -> int:
    return int(obs[2] + 0.5 * obs[3] > 0)


def _env(name: str) -> Any:
    if name == "BitFlip":
        from rlbase.common.vec_env import DummyVecEnv
        from rlbase.envs import BitFlippingEnv

        return DummyVecEnv([lambda: BitFlippingEnv(3) for _ in range(2)])
    return name


def _logged(folder: str) -> list[dict[str, float]]:
    path = os.path.join(folder, "progress.csv")
    if not os.path.isfile(path):
        return []
    rows = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            kept = {}
            for key, value in sorted(row.items()):
                if key is None or key in CLOCK or value in ("", None):
                    continue
                try:
                    number = float(value)
                except ValueError:
                    continue
                kept[key] = number if math.isfinite(number) else str(number)
            rows.append(kept)
    return rows


def run_case(case: str, scratch: str) -> dict[str, Any]:
    from rlbase import registry
    from rlbase.common.logs import logger

    alg, env_name, steps, extra = CASES[case]
    extra = dict(extra)
    if alg == "gail":
        from rlbase import generate_expert_traj

        expert = os.path.join(scratch, "expert.npz")
        if not os.path.isfile(expert):
            generate_expert_traj(_balancer, "CartPole-v1", n_episodes=2, save_path=expert,
                                 seed=0)
        extra["expert_path"] = expert
    folder = os.path.join(scratch, case)
    learn = registry.get_algorithm(alg).learn
    with logger.scoped_configure(folder, format_strs=["csv"]):
        model = learn("mlp", _env(env_name), total_timesteps=steps, seed=0, **extra)
    arrays = model.get_parameters()
    return {"digest": digest(arrays),
            "sums": {k: float(np.asarray(v, dtype=np.float64).sum()) for k, v in
                     sorted(arrays.items()) if np.asarray(v).dtype.kind in "fiu"},
            "num_timesteps": int(model.num_timesteps),
            "logged": _logged(folder)}


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str]) -> None:
    record = "--record" in argv
    cases = [a for a in argv if not a.startswith("--")] or sorted(CASES)
    with tempfile.TemporaryDirectory() as scratch:
        out = {case: run_case(case, scratch) for case in cases}
    if record:
        previous: dict[str, Any] = {}
        if os.path.isfile(GOLDEN):
            with open(GOLDEN) as f:
                previous = json.load(f)["cases"]
        previous.update(out)
        with open(GOLDEN, "w") as f:
            json.dump({"cpu": cpu_model(), "cases": previous}, f, indent=1, sort_keys=True)
            f.write("\n")
    print(json.dumps({"cpu": cpu_model(), "cases": out}))


if __name__ == "__main__":
    main(sys.argv[1:])
