"""PPO with and without action masks on tests/envs/masked_grid.py, rlbase or sb3-contrib.

    python examples/bench_results/action_masking/grid.py --lib=rlbase
    /tmp/sb3env/bin/python examples/bench_results/action_masking/grid.py --lib=sb3

Each seed trains for --steps env steps (4 envs, 128 steps each per rollout, 4 minibatches of
128, 4 epochs, ent_coef 0.01, the libraries' other PPO defaults), then plays 10 episodes
greedily (masked where training was). Prints one JSON line per run: library, masks, seed,
the evaluation return, and the training's wall-clock seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests"))

from envs.masked_grid import MaskedGridEnv  # noqa: E402  (the tests' env, found by path)


def rlbase_run(masks: bool, seed: int, steps: int) -> tuple[float, float]:
    from rlbase.common.loops.evaluation import evaluate_policy
    from rlbase.common.vec_env import DummyVecEnv
    from rlbase.ppo import ppo

    start = time.perf_counter()
    model = ppo.learn("mlp", DummyVecEnv([MaskedGridEnv] * 4), total_timesteps=steps,
                      seed=seed, nsteps=128, nminibatches=4, noptepochs=4, ent_coef=0.01,
                      action_masks=masks, log_interval=10**9)
    seconds = time.perf_counter() - start
    return evaluate_policy(model, DummyVecEnv([MaskedGridEnv]), 10)[0], seconds


def sb3_run(masks: bool, seed: int, steps: int) -> tuple[float, float]:
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.evaluation import evaluate_policy
    from stable_baselines3.common.env_util import make_vec_env

    start = time.perf_counter()
    model = MaskablePPO("MlpPolicy", make_vec_env(MaskedGridEnv, 4, seed=seed), n_steps=128,
                        batch_size=128, n_epochs=4, ent_coef=0.01, seed=seed, device="cpu")
    model.learn(steps, use_masking=masks)
    seconds = time.perf_counter() - start
    env = make_vec_env(MaskedGridEnv, 1, seed=seed + 1000)
    return evaluate_policy(model, env, 10, use_masking=masks)[0], seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lib", choices=("rlbase", "sb3"), default="rlbase")
    parser.add_argument("--steps", type=int, default=8192)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--masks", choices=("both", "on", "off"), default="both")
    args = parser.parse_args()
    run = rlbase_run if args.lib == "rlbase" else sb3_run
    settings = {"both": (True, False), "on": (True,), "off": (False,)}[args.masks]
    for masks in settings:
        for seed in range(args.seeds):
            ret, seconds = run(masks, seed, args.steps)
            print(json.dumps({"lib": args.lib, "masks": masks, "seed": seed,
                              "steps": args.steps, "eval_return": round(float(ret), 3),
                              "train_seconds": round(seconds, 1)}), flush=True)


if __name__ == "__main__":
    main()
