"""Run by tests/test_ppo.py under ``mpiexec -n 2``: train briefly, dump this rank's weights."""

import sys

import numpy as np

from rlbase.common.envs.make import make_vec_env
from rlbase.common.mpi_util import mpi_rank, mpi_size
from rlbase.ppo.ppo import learn

out_dir = sys.argv[1]
target_kl = float(sys.argv[2]) if len(sys.argv) > 2 else None
env = make_vec_env("CartPole-v1", num_env=2, seed=0)
model = learn("mlp", env, total_timesteps=512, seed=0, nsteps=64, nminibatches=4,
              noptepochs=2, target_kl=target_kl, log_interval=10**9)
weights = np.concatenate([v.numpy().ravel() for v in model.policy.trainable_variables])
np.save(f"{out_dir}/rank{mpi_rank()}_of_{mpi_size()}.npy", weights)
