"""Run by tests/test_trpo.py under ``mpiexec -n 2``: train briefly, dump this rank's weights
and the update's trace count."""

import sys

import numpy as np

from rlbase.common.envs.make import make_vec_env
from rlbase.common.mpi_util import mpi_rank, mpi_size
from rlbase.trpo.trpo import learn

out_dir = sys.argv[1]
env = make_vec_env("Pendulum-v1", num_env=2, seed=0)
model = learn("mlp", env, total_timesteps=512, seed=0, nsteps=64, vf_batch_size=32,
              num_hidden=16, log_interval=10**9)
weights = np.concatenate([v.numpy().ravel() for v in model.policy.trainable_variables])
traces = model._train.function.experimental_get_tracing_count()
np.save(f"{out_dir}/rank{mpi_rank()}_of_{mpi_size()}.npy", np.append(weights, traces))
