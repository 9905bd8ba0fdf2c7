"""A uniform-random policy's mean return on an env: the 'random' end of a normalized score.

    python examples/bench_results/mujoco-v5/random_returns.py Humanoid-v5 --episodes=1000 --seed=0

Writes random_<env>.json beside this script: every episode's return and length, their mean,
standard deviation and standard error, and what produced them (seeds, versions, provenance).
Episode i resets with seed + i; actions come from the action space seeded with ``seed``.
"""

from __future__ import annotations

import argparse
import json
import os

import gymnasium as gym
import numpy as np

from rlbase.bench import provenance


def random_returns(env_id: str, episodes: int, seed: int) -> tuple[list[float], list[int]]:
    env = gym.make(env_id)
    env.action_space.seed(seed)
    returns, lengths = [], []
    for i in range(episodes):
        env.reset(seed=seed + i)
        total, steps, done = 0.0, 0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total += float(reward)
            steps += 1
            done = terminated or truncated
        returns.append(total)
        lengths.append(steps)
    env.close()
    return returns, lengths


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("env")
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = provenance.start()
    returns, lengths = random_returns(args.env, args.episodes, args.seed)
    values = np.array(returns)
    record = {"env": args.env, "policy": "uniform random actions", "episodes": args.episodes,
              "seed": args.seed, "mean": float(values.mean()), "std": float(values.std()),
              "stderr": float(values.std(ddof=1) / np.sqrt(len(values))),
              "returns": returns, "lengths": lengths,
              "provenance": provenance.finish(started, int(sum(lengths)), args.env)}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        f"random_{args.env.replace('/', '-')}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    print(f"{args.env}: mean return of a random policy over {args.episodes} episodes "
          f"{record['mean']:.2f} (std {record['std']:.2f}, stderr {record['stderr']:.2f}); "
          f"wrote {path}")


if __name__ == "__main__":
    main()
