"""Baselines' deepq/experiments/enjoy_cartpole.py on rlbase: play the model that
train_cartpole.py saved, forever as Baselines did (``--episodes N`` stops after N). The renames
are train_cartpole.py's, plus gymnasium's API: ``render_mode="human"`` at ``make`` (it draws
every step), ``reset`` returning ``(obs, info)`` and ``step`` five values. ``act(obs[None])``
is Baselines' call: the model returned by ``learn`` is its ``act``.

    python examples/enjoy_cartpole.py [--episodes 3] [--no_render]
"""

from __future__ import annotations

import argparse

import gymnasium as gym

from rlbase.compat.baselines import deepq


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--load_path", default="cartpole_model.pkl")
    parser.add_argument("--episodes", type=int, default=None, help="(default: forever)")
    parser.add_argument("--no_render", action="store_true")
    args = parser.parse_args()

    env = gym.make("CartPole-v1", max_episode_steps=200,
                   render_mode=None if args.no_render else "human")
    act = deepq.learn(network='mlp', env=env, total_timesteps=0, load_path=args.load_path)

    played = 0
    while args.episodes is None or played < args.episodes:
        (obs, _), done = env.reset(), False
        episode_rew = 0.0
        while not done:
            obs, rew, terminated, truncated, _ = env.step(act(obs[None])[0])
            done = terminated or truncated
            episode_rew += rew
        print("Episode reward", episode_rew)
        played += 1


if __name__ == '__main__':
    main()
