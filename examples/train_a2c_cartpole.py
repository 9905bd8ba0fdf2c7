"""Train A2C on CartPole from a script, save it, load it back and evaluate it.

    python examples/train_a2c_cartpole.py --num_timesteps 200000
"""

from __future__ import annotations

import argparse
import os
import tempfile

from rlbase.a2c.a2c import learn
from rlbase.common.envs.make import make_vec_env
from rlbase.common.logs import logger
from rlbase.common.loops.evaluation import evaluate_policy


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_timesteps", "--timesteps", dest="timesteps", type=float,
                        default=200_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    logger.configure(format_strs=["stdout"])
    env = make_vec_env("CartPole-v1", num_env=8, seed=args.seed)
    model = learn("mlp", env, seed=args.seed, total_timesteps=int(args.timesteps), ent_coef=0.0,
                  value_network="copy", lrschedule="constant", log_interval=500)
    path = os.path.join(tempfile.mkdtemp(), "a2c_cartpole.zip")
    model.save(path)

    # Continue from the saved file for a few more steps (loads weights and optimizer state).
    resumed = learn("mlp", env, seed=args.seed + 1, total_timesteps=min(1000, int(args.timesteps)),
                    ent_coef=0.0,
                    value_network="copy", load_path=path, log_interval=10**9)
    mean, std = evaluate_policy(resumed, make_vec_env("CartPole-v1", seed=123), 10)
    print(f"saved to {path}; evaluation return {mean:.1f} +- {std:.1f}")


if __name__ == "__main__":
    main()
