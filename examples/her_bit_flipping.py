"""DQN with Hindsight Experience Replay on the bit-flipping env (the HER paper's sanity
check), against DQN alone: ``python examples/her_bit_flipping.py --n_bits 15``.

Settings are Stable-Baselines3's DQN+HER bit-flipping test (tests/test_her.py,
test_performance_her), with the learning rate lowered to 5e-4 for long runs (its 2e-3 learned
15 bits by 20k steps here, then diverged after 50k): 2 envs, one gradient step per env step,
32 transitions per step, target copy every 100 steps, epsilon down to 0.02 over 10% of the
run, a 64-64 ReLU MLP without dueling or double Q (SB3's DQN), n_sampled_goal 5 with the
'future' strategy.
Prints the greedy policy's success rate over 50 test episodes.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from rlbase.common.vec_env import DummyVecEnv
from rlbase.dqn.dqn import learn
from rlbase.envs import BitFlippingEnv


def success_rate(model: Any, n_bits: int, episodes: int, seed: int) -> float:
    """The share of ``episodes`` greedy test episodes that reach the goal."""
    env = BitFlippingEnv(n_bits)
    wins = 0
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        while True:
            batch = {k: np.asarray(v)[None] for k, v in obs.items()}
            action = int(model.step(batch, deterministic=True)[0][0])
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                wins += bool(info["is_success"])
                break
    return wins / episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n_bits", type=int, default=15)
    parser.add_argument("--timesteps", type=float, default=1e5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no_her", action="store_true", help="DQN alone")
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--double_q", action="store_true", help="double Q-learning targets")
    args = parser.parse_args()
    n_bits = args.n_bits
    env = DummyVecEnv([lambda: BitFlippingEnv(n_bits) for _ in range(2)])
    her = {} if args.no_her else {
        "replay_buffer_class": "her",
        "replay_buffer_kwargs": {"n_sampled_goal": 5, "goal_selection_strategy": "future"}}
    model = learn("mlp", env, total_timesteps=int(args.timesteps), seed=args.seed, lr=args.lr,
                  buffer_size=int(1e5), learning_starts=20, batch_size=32, train_freq=1,
                  gradient_steps=1, target_update_interval=100, exploration_fraction=0.1,
                  exploration_final_eps=0.02, double_q=args.double_q, dueling=False, hiddens=(),
                  best_model_interval=None, log_interval=200, num_layers=2, num_hidden=64,
                  activation="relu",
                  **her)
    rate = success_rate(model, n_bits, 50, seed=10_000)
    print(f"n_bits={n_bits} her={not args.no_her} timesteps={int(args.timesteps)} "
          f"lr={args.lr} double_q={args.double_q} seed={args.seed}: test success rate "
          f"{rate:.2f} over 50 episodes")


if __name__ == "__main__":
    main()
