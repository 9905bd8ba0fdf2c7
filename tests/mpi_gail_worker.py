"""Run by tests/test_gail.py under ``mpiexec -n 2``: imitate briefly, dump this rank's policy
and discriminator weights (statistics included)."""

import sys

import numpy as np

from rlbase import generate_expert_traj
from rlbase.common.envs.make import make_vec_env
from rlbase.common.mpi_util import mpi_rank, mpi_size
from rlbase.gail.gail import learn

out_dir = sys.argv[1]
expert = f"{out_dir}/expert{mpi_rank()}.npz"
generate_expert_traj(lambda obs: int(obs[2] + 0.5 * obs[3] > 0), "CartPole-v1", n_episodes=1,
                     save_path=expert, seed=0)
env = make_vec_env("CartPole-v1", num_env=2, seed=0)
model = learn("mlp", env, total_timesteps=512, seed=0, expert_path=expert, nsteps=64,
              vf_batch_size=32, g_step=1, d_step=2, num_hidden=16, adversary_hidden_size=8,
              log_interval=10**9)
weights = [v.numpy().ravel() for v in model.policy.trainable_variables]
weights += [v.numpy().ravel() for v in model.discriminator.weights]
np.save(f"{out_dir}/rank{mpi_rank()}_of_{mpi_size()}.npy", np.concatenate(weights))
