"""Baselines' deepq/experiments/train_cartpole.py on rlbase, with only the documented renames:
gymnasium for gym (CartPole-v0 is CartPole-v1 with a 200-step limit), ``rlbase.dqn.dqn`` for
``baselines.deepq``, the network first in ``learn`` (both by keyword here), ``log_interval``
for ``print_freq``, and Baselines' ``gamma=1.0`` written out (rlbase's default is 0.99).
The callback is Baselines' own: named ``(lcl, _glb)``, it returns True to stop training.

    python examples/train_cartpole.py       # then: python examples/enjoy_cartpole.py
"""

from __future__ import annotations

import argparse

import gymnasium as gym

from rlbase.compat.baselines import deepq


def callback(lcl, _glb):
    # stop training if reward exceeds 199
    is_solved = lcl['t'] > 100 and sum(lcl['episode_rewards'][-101:-1]) / 100 >= 199
    return is_solved


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_timesteps", type=int, default=100000)
    parser.add_argument("--save_path", default="cartpole_model.pkl")
    args = parser.parse_args()

    env = gym.make("CartPole-v1", max_episode_steps=200)
    act = deepq.learn(
        network='mlp',
        env=env,
        lr=1e-3,
        total_timesteps=args.num_timesteps,
        buffer_size=50000,
        exploration_fraction=0.1,
        exploration_final_eps=0.02,
        gamma=1.0,
        log_interval=10,
        callback=callback
    )
    print(f"Saving model to {args.save_path}")
    act.save(args.save_path)


if __name__ == '__main__':
    main()
