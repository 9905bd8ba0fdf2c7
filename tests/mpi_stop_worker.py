"""Run by tests/test_signals.py under ``mpiexec -n 2``: rank 1 alone asks PPO to stop at its
second update; both ranks must stop after that same update (not hang in the next one)."""

import sys

from rlbase.common.envs.make import make_vec_env
from rlbase.common.mpi_util import mpi_rank
from rlbase.ppo.ppo import learn


def stop_on_rank_1(model, info):
    return not (mpi_rank() == 1 and info["iteration"] == 2)


env = make_vec_env("CartPole-v1", num_env=1, seed=0)
model = learn("mlp", env, total_timesteps=64 * 50, seed=0, nsteps=64, nminibatches=1,
              noptepochs=1, log_interval=10**9, callback=stop_on_rank_1)
print(f"rank {mpi_rank()} stopped at {model.num_timesteps}", flush=True)
sys.exit(0)
