"""``python -m rlbase.bench env-limit --env=ID [--num_env=N] [--num_timesteps=T]``: the speed
limit a training run on this machine cannot pass, the vectorized env alone.

The env is built exactly as ``python -m rlbase.run`` builds it (``make_vec_env`` with the env
type's wrappers: for Atari the DeepMind preprocessing on the ``ale`` path, with episode
monitoring), then stepped with uniformly random actions and no network, for ``num_timesteps``
env steps summed over the envs. Printed as one JSON line: steps/s and microseconds per
vectorized step. A training run's steps/s beside this figure shows how much of its time is
the learner's.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from rlbase.common.arg_types import timesteps_arg
from rlbase.common.envs.make import make_vec_env
from rlbase.common.errors import RLBaseError


def measure(env_id: str, num_env: int, num_timesteps: int, vec_env: str = "auto",
            seed: int = 0) -> dict[str, Any]:
    """Random-action steps/s of ``num_env`` copies of ``env_id`` as the CLI makes them."""
    if num_timesteps < num_env:
        raise RLBaseError(f"num_timesteps must be at least num_env ({num_env}), got "
                          f"{num_timesteps}")
    env = make_vec_env(env_id, num_env=num_env, seed=seed, vec_env=vec_env, monitor_dir=None)
    try:
        env.action_space.seed(seed)
        env.reset()
        iterations = num_timesteps // num_env
        actions = [np.stack([env.action_space.sample() for _ in range(num_env)])
                   for _ in range(min(iterations, 1000))]
        start = time.perf_counter()
        for i in range(iterations):
            env.step(actions[i % len(actions)])
        seconds = time.perf_counter() - start
    finally:
        env.close()
    steps = iterations * num_env
    return {"env": env_id, "num_env": num_env, "vec_env": type(env.unwrapped).__name__,
            "timesteps": steps, "seconds": round(seconds, 3),
            "steps_per_s": round(steps / seconds), "us_per_vector_step":
            round(seconds / iterations * 1e6, 1)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m rlbase.bench env-limit",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", required=True)
    parser.add_argument("--num_env", type=int, default=1)
    parser.add_argument("--num_timesteps", type=timesteps_arg, default=20_000)
    parser.add_argument("--vec_env", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    result = measure(args.env, args.num_env, args.num_timesteps, args.vec_env, args.seed)
    print(json.dumps(result))
    return result
