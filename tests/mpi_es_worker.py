"""Run by tests/test_es.py under ``mpiexec -n 2``: train ES briefly, dump this rank's state."""

import sys

import numpy as np

from rlbase.common.cmd_util import make_vec_env
from rlbase.common.mpi_util import mpi_rank, mpi_size
from rlbase.es.es import learn

out_dir = sys.argv[1]
env = make_vec_env("CartPole-v1", num_env=2, seed=0)
generations = []
model = learn("mlp", env, total_timesteps=3000, seed=0, popsize=8, num_hidden=16,
              eval_episodes=2, log_interval=2,
              callback=lambda m, info: generations.append(info["train_steps"]))
np.savez(f"{out_dir}/rank{mpi_rank()}_of_{mpi_size()}.npz", theta=model.theta,
         obs_mean=model.obs_rms.mean, obs_var=model.obs_rms.var,
         num_timesteps=model.num_timesteps, steps=np.array(generations))
