"""Behaviour cloning, then reinforcement learning: pretrain PPO on expert data, then train it.

    python examples/behaviour_cloning.py --num_timesteps 20000

1. Record expert episodes with ``generate_expert_traj`` (here a hand-written CartPole
   controller; a trained model works too) into an .npz file.
2. ``ExpertDataset`` splits them into training and validation minibatches.
3. ``model.pretrain(dataset)`` fits the policy to the expert's actions (supervised).
4. ``model.learn(n)`` continues with PPO from the cloned policy.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

from rlbase import PPO
from rlbase.common.envs.make import make_vec_env
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.compat.sb3 import ExpertDataset, generate_expert_traj


def expert(obs: np.ndarray) -> int:
    """Push the cart towards where the pole is falling (angle plus angular velocity)."""
    return int(obs[2] + 0.5 * obs[3] > 0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_timesteps", type=float, default=20_000, help="RL steps after BC")
    parser.add_argument("--expert_episodes", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    path = os.path.join(tempfile.mkdtemp(), "cartpole_expert.npz")
    data = generate_expert_traj(expert, "CartPole-v1", n_episodes=args.expert_episodes,
                                save_path=path, seed=args.seed)
    print(f"expert: mean return {data['episode_returns'].mean():.1f} over "
          f"{len(data['episode_returns'])} episodes, {len(data['obs'])} samples")
    dataset = ExpertDataset(path, batch_size=64, seed=args.seed)

    env = make_vec_env("CartPole-v1", num_env=8, seed=args.seed)
    eval_env = make_vec_env("CartPole-v1", seed=123)
    model = PPO("MlpPolicy", env, seed=args.seed, nsteps=32, nminibatches=1, noptepochs=20,
                gamma=0.98, lam=0.8, lr=1e-3)
    print(f"before: {evaluate_policy(model, eval_env, 5)[0]:.1f}")
    model.pretrain(dataset, n_epochs=args.epochs, learning_rate=1e-3)
    print(f"after behaviour cloning: {evaluate_policy(model, eval_env, 5)[0]:.1f}")
    model.learn(int(args.num_timesteps))
    print(f"after {int(args.num_timesteps)} PPO steps: "
          f"{evaluate_policy(model, eval_env, 5)[0]:.1f}")


if __name__ == "__main__":
    main()
