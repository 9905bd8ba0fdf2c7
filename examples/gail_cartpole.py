"""Imitation with GAIL: train a PPO expert, record 10 of its episodes, imitate them.

    python examples/gail_cartpole.py                    # the figures in docs/algorithms/gail.md
    python examples/gail_cartpole.py --env Pendulum-v1 \
        --expert_model logs/ppo/Pendulum-v1_1/Pendulum-v1.zip --expert_episodes 50 \
        --num_timesteps 6e5 --normalize --num_hidden 100
    (the expert from: rlbase train --algo ppo --env Pendulum-v1 --seed 0 -f logs)

1. PPO learns the task (the zoo's settings for the env, as ``rlbase train --algo ppo`` uses).
2. ``generate_expert_traj`` records its deterministic episodes into an .npz file.
3. ``rlbase.gail.gail.learn`` imitates them: the env's rewards are never learned from.
4. Both are evaluated on the same 10 episode seeds.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import gymnasium as gym
import numpy as np

from rlbase import generate_expert_traj
from rlbase.common.envs.make import make_vec_env
from rlbase.common.vec_env.vec_normalize import VecNormalize
from rlbase.compat.sb3 import PPO
from rlbase.gail.gail import learn

# rl-baselines3-zoo's PPO rows (rlbase/hyperparams/ppo.yml), in rlbase's names
PPO_SETTINGS = {
    "CartPole-v1": dict(n_envs=8, normalize=False, nsteps=32, nminibatches=1, noptepochs=20,
                        gamma=0.98, lam=0.8, lr=1e-3, ent_coef=0.0),
    "Pendulum-v1": dict(n_envs=4, normalize=True, nsteps=1024, nminibatches=32, noptepochs=10,
                        gamma=0.9, lam=0.95, lr=1e-3, ent_coef=0.0),
}


def evaluate(act, env_id: str, episodes: int = 10) -> float:
    """Mean return of ``act(obs) -> action`` over episodes seeded 1000, 1001, ..."""
    env = gym.make(env_id)
    returns = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=1000 + episode)
        done, total = False, 0.0
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--env", default="CartPole-v1", choices=sorted(PPO_SETTINGS))
    parser.add_argument("--expert_timesteps", type=float, default=1e5)
    parser.add_argument("--expert_episodes", type=int, default=10)
    parser.add_argument("--num_timesteps", type=float, default=1e5, help="GAIL's env steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--expert_model", default=None, help="a saved PPO model to record "
                        "instead of training one")
    parser.add_argument("--normalize", action="store_true",
                        help="GAIL's env normalizes observations (VecNormalize)")
    parser.add_argument("--num_hidden", type=int, default=64, help="GAIL's policy width")
    args = parser.parse_args(argv)

    if args.expert_model:
        expert = PPO.load(args.expert_model)
    else:
        settings = dict(PPO_SETTINGS[args.env])
        env = make_vec_env(args.env, num_env=settings.pop("n_envs"), seed=args.seed)
        if settings.pop("normalize"):
            env = VecNormalize(env)
        expert = PPO("MlpPolicy", env, seed=args.seed, **settings)
        expert.learn(int(args.expert_timesteps))
    path = os.path.join(tempfile.mkdtemp(), f"{args.env}_expert.npz")
    data = generate_expert_traj(expert, args.env, n_episodes=args.expert_episodes,
                                save_path=path, seed=args.seed)
    expert_norm = expert.model.normalization if expert.model is not None else None

    def expert_act(obs: np.ndarray) -> np.ndarray:
        seen = obs if expert_norm is None else expert_norm.normalize_obs(obs)
        return expert.predict(seen, deterministic=True)[0]

    print(f"expert: {data['episode_returns'].mean():.1f} over {args.expert_episodes} "
          f"recorded episodes; evaluation {evaluate(expert_act, args.env):.1f}")

    gail_env = make_vec_env(args.env, num_env=1, seed=args.seed)
    if args.normalize:  # the rewards are never learned from: only observations
        gail_env = VecNormalize(gail_env, norm_reward=False)
    model = learn("mlp", gail_env, total_timesteps=int(args.num_timesteps), seed=args.seed,
                  expert_path=path, num_hidden=args.num_hidden, num_layers=2)
    normalization = model.normalization
    low, high = (model.action_space.low, model.action_space.high) \
        if isinstance(model.action_space, gym.spaces.Box) else (None, None)

    def act(obs: np.ndarray) -> np.ndarray:
        seen = obs if normalization is None else normalization.normalize_obs(obs)
        action = model.step(seen[None], deterministic=True)[0][0]
        return action if low is None else np.clip(action, low, high)

    print(f"gail evaluation: {evaluate(act, args.env):.1f}")


if __name__ == "__main__":
    main()
