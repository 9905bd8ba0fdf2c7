"""DDPG (or TD3) on Pendulum with 2 MPI workers that average their gradients.

    mpiexec -n 2 python examples/ddpg_mpi.py --num_timesteps 20000
    mpiexec -n 2 python examples/ddpg_mpi.py --td3

Each worker steps its own env (seeded apart: seed + 10000 * rank) and fills its own replay
buffer; every gradient step is averaged over the workers, so the networks stay identical
(rlbase checks this every 2000 steps). Rank 0 logs and saves. ``pip install -e .[mpi]`` brings
mpi4py and the ``mpich`` wheel; no system MPI is needed. Without mpiexec the same script runs
single-process. The same thing from the command line:
``mpiexec -n 2 python -m rlbase.run --alg=ddpg --env=Pendulum-v1 --num_timesteps=2e4``.
"""

from __future__ import annotations

import argparse
import os
import tempfile

from rlbase.common.envs.make import make_vec_env
from rlbase.common.logs import logger
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.common.mpi_util import mpi_rank, mpi_size
from rlbase.ddpg.ddpg import learn


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_timesteps", type=float, default=20_000,
                        help="env steps per worker")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--td3", action="store_true", help="twin critics, delayed actor, "
                                                          "target smoothing")
    args = parser.parse_args(argv)
    steps = int(args.num_timesteps)
    rank = mpi_rank()
    logger.configure(format_strs=["stdout"] if rank == 0 else [])
    td3 = dict(twin_q=True, policy_delay=2, target_noise=0.2) if args.td3 else {}
    env = make_vec_env("Pendulum-v1", num_env=1, seed=args.seed)
    # The rl-zoo Pendulum settings (rlbase/hyperparams/ddpg.yml), with fewer random steps at the
    # start when the budget is small.
    model = learn("mlp", env, seed=args.seed, total_timesteps=steps, layer_sizes=(400, 300),
                  activation="relu", actor_lr=1e-3, critic_lr=1e-3, gamma=0.98,
                  buffer_size=200_000, learning_starts=min(10_000, steps // 2),
                  noise_type="normal_0.1", train_freq=1, gradient_steps=1,
                  batch_size=256 if steps >= 2000 else 32, tau=0.005, critic_l2_reg=0.0,
                  normalize_observations=False, **td3)
    env.close()
    if rank == 0:
        path = os.path.join(tempfile.mkdtemp(), "ddpg_pendulum.zip")
        model.save(path)
        mean, std = evaluate_policy(model, make_vec_env("Pendulum-v1", seed=123), 5)
        print(f"{mpi_size()} worker(s), {steps} steps each: evaluation return {mean:.1f} "
              f"+- {std:.1f}; saved {path}")


if __name__ == "__main__":
    main()
