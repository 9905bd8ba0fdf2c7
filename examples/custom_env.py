"""Train on your own gymnasium env: write it, register it, train and evaluate.

    python examples/custom_env.py --num_timesteps 30000

Any ``gymnasium.Env`` works: pass an instance, an env id, or a VecEnv to ``learn()``.
Registering it with ``gymnasium.register`` also makes it usable from the command line
(``python -m rlbase.run --env=Corridor-v0`` after importing the module that registers it).
Return ``terminated=True`` when the task ends and ``truncated=True`` when only time ran
out (a ``max_episode_steps`` limit): rlbase bootstraps truncated episodes and not terminated
ones, so mixing them up biases the value estimates.
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

from rlbase.a2c.a2c import learn
from rlbase.common.envs.make import make_vec_env
from rlbase.common.logs import logger
from rlbase.common.loops.evaluation import evaluate_policy


class Corridor(gym.Env):
    """Walk from cell 0 to the last cell of a corridor; each step costs 0.01, the goal pays 1.

    Observation: the position scaled to [0, 1]. Actions: 0 left, 1 right.
    """

    def __init__(self, length: int = 10):
        self.length = length
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.pos = 0

    def _obs(self) -> np.ndarray:
        return np.array([self.pos / (self.length - 1)], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)  # seeds self.np_random
        self.pos = int(self.np_random.integers(0, self.length // 2))
        return self._obs(), {}

    def step(self, action: int):
        self.pos = int(np.clip(self.pos + (1 if action == 1 else -1), 0, self.length - 1))
        terminated = self.pos == self.length - 1
        reward = 1.0 if terminated else -0.01
        return self._obs(), reward, terminated, False, {}


gym.register("Corridor-v0", entry_point=Corridor, max_episode_steps=100)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_timesteps", type=float, default=30_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    logger.configure(format_strs=["stdout"])
    env = make_vec_env("Corridor-v0", num_env=4, seed=args.seed)
    model = learn("mlp", env, seed=args.seed, total_timesteps=int(args.num_timesteps),
                  lrschedule="constant", log_interval=500)
    env.close()
    mean, _ = evaluate_policy(model, make_vec_env("Corridor-v0", seed=123), 10)
    # The best return is 1 - 0.01 * (steps - 1); a random walk mostly times out near -1.
    print(f"A2C on Corridor-v0: evaluation return {mean:.2f} (best possible about 0.9)")


if __name__ == "__main__":
    main()
