"""Train PPO (or A2C) on Atari Pong with DeepMind preprocessing.

    python examples/atari_pong.py --num_timesteps 10000000 --alg ppo   # hours on a CPU

``pip install -e .[atari]`` brings ale-py with its ROMs. ``make_vec_env`` on an Atari id applies
the DeepMind wrappers (no-op starts, frame skip 4 with max-pooling, 84x84 grayscale, episodic
life, fire on reset, sign-clipped rewards for training) and stacks 4 frames; frames stay uint8
until the cnn scales them inside the compiled call. The monitor counts whole games with their
unclipped score, which is what published tables report (``--log_path`` writes it to
monitor.csv for plotting). The same run from the command line:
``python -m rlbase.run --alg=ppo --env=PongNoFrameskip-v4 --num_timesteps=1e7 --num_env=8``.
"""

from __future__ import annotations

import argparse
import importlib

from rlbase.common.envs.make import make_vec_env
from rlbase.common.logs import logger
from rlbase.run import get_defaults


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--alg", default="ppo", choices=["ppo", "a2c"])
    parser.add_argument("--env", default="PongNoFrameskip-v4")
    parser.add_argument("--num_timesteps", type=float, default=10_000_000)
    parser.add_argument("--num_env", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log_path", default=None, help="folder for progress and monitor.csv")
    args = parser.parse_args(argv)

    logger.configure(args.log_path, ["stdout", "csv"] if args.log_path else ["stdout"])
    learn = importlib.import_module(f"rlbase.{args.alg}.{args.alg}").learn
    kwargs = get_defaults(args.alg, "atari")  # the algorithm's Atari settings (cnn policy)
    kwargs.pop("num_env", None)
    network = kwargs.pop("network", "cnn")
    if args.num_timesteps < 1e5 and args.alg == "ppo":  # a smoke run: short updates
        kwargs.update(nsteps=16, nminibatches=2, noptepochs=1)
    env = make_vec_env(args.env, "atari", args.num_env, args.seed, monitor_dir=args.log_path)
    model = learn(network=network, env=env, seed=args.seed,
                  total_timesteps=int(args.num_timesteps), **kwargs)
    env.close()
    print(f"{args.alg} on {args.env}: {model.num_timesteps} steps done")


if __name__ == "__main__":
    main()
