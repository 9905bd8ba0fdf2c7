"""Register your own network with ``@register`` and train PPO with it, by name.

    python examples/custom_network.py --num_timesteps 100000

A network builder is a function returning a Keras layer that maps a batch of (flattened)
observations to a latent vector; rlbase puts the policy and value heads on top. Once
registered, the name works everywhere a network name does: ``learn("residual_mlp", ...)``,
``PPO("residual_mlp", env)`` and, if the module defining it is imported,
``python -m rlbase.run --network=residual_mlp``. Keyword arguments of the builder
(``width`` here) are passed through ``learn(..., width=32)`` or ``--width=32``.
"""

from __future__ import annotations

import argparse

import keras

from rlbase.common.envs.make import make_vec_env
from rlbase.common.logs import logger
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.common.networks.registry import register
from rlbase.ppo.ppo import learn


class ResidualMLP(keras.layers.Layer):
    """A projection then ``blocks`` residual tanh blocks of ``width`` units."""

    def __init__(self, width: int, blocks: int, **kwargs):
        super().__init__(**kwargs)
        self.inp = keras.layers.Dense(width, activation="tanh")
        self.blocks = [keras.layers.Dense(width, activation="tanh") for _ in range(blocks)]

    def call(self, x):
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h)  # the skip connection keeps gradients flowing through depth
        return h


@register("residual_mlp")
def residual_mlp(width: int = 64, blocks: int = 2) -> keras.layers.Layer:
    """The builder: its keyword arguments become learn()/CLI arguments."""
    return ResidualMLP(width, blocks)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_timesteps", type=float, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    logger.configure(format_strs=["stdout"])
    env = make_vec_env("CartPole-v1", num_env=8, seed=args.seed)
    # The rl-zoo CartPole PPO settings, with our network (width 32) instead of the MLP.
    model = learn("residual_mlp", env, seed=args.seed, total_timesteps=int(args.num_timesteps),
                  nsteps=32, nminibatches=1, noptepochs=20, gamma=0.98, lam=0.8, lr=1e-3,
                  log_interval=50, width=32)
    env.close()
    mean, std = evaluate_policy(model, make_vec_env("CartPole-v1", seed=123), 5)
    print(f"residual_mlp PPO on CartPole-v1: evaluation return {mean:.1f} +- {std:.1f}")


if __name__ == "__main__":
    main()
