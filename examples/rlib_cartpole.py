"""rlib's API on rlbase: train PPO on CartPole the rlib way, test it, plot its curves and
record a video of every model saved at the testing iterations.

    python examples/rlib_cartpole.py --num_timesteps 100000
"""

from __future__ import annotations

import argparse
import importlib.util

from rlbase.compat.rlib import PPO


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_timesteps", "--timesteps", dest="timesteps", type=float,
                        default=100_000)
    parser.add_argument("--save_folder", default="ppo_cartpole")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    timesteps = int(args.timesteps)
    ppo = PPO({'id': 'CartPole-v1'}, {'hidden_sizes': [64, 64], 'activation': 'tanh'},
              {'hidden_sizes': [64, 64], 'activation': 'tanh'}, num_envs=8,
              num_steps_per_iter=128, num_updates_per_iter=4, batch_size=256,
              total_timesteps=timesteps, test_every=max(timesteps // 5, 1),
              num_test_agents=5, save_folder=args.save_folder, seed=args.seed)
    ppo.train()
    mean, std = ppo.test(num_episodes=10, seed=123)
    ppo.save_plots()
    if importlib.util.find_spec("imageio_ffmpeg") is not None:
        ppo.save_videos()
    print(f"results in {ppo.save_folder}; test return {mean:.1f} +- {std:.1f}")


if __name__ == "__main__":
    main()
