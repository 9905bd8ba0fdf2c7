"""Run by tests/test_ddpg.py under ``mpiexec -n 2``.

``python mpi_ddpg_worker.py OUT_DIR``: train briefly, dump this rank's parameters, statistics
and first observations. ``python mpi_ddpg_worker.py OUT_DIR die``: rank 1 raises mid-training
(the job must then exit with an error instead of hanging).
"""

import sys

import numpy as np

from rlbase.common.envs.make import make_vec_env
from rlbase.common.mpi_util import mpi_rank, mpi_size
from rlbase.ddpg.ddpg import learn

out_dir = sys.argv[1]
die = len(sys.argv) > 2 and sys.argv[2] == "die"


def callback(model, info):
    if die and mpi_rank() == 1 and info["num_timesteps"] >= 100:
        raise RuntimeError("worker 1 dies on purpose")


env = make_vec_env("Pendulum-v1", num_env=1, seed=0)
model = learn("mlp", env, seed=0, total_timesteps=300, train_freq=1, gradient_steps=1,
              batch_size=32, learning_starts=64, layer_sizes=(16, 16),
              noise_type="adaptive-param_0.2,normal_0.1", normalize_observations=True,
              normalize_returns=True, popart=True, twin_q=True, policy_delay=2,
              target_noise=0.2, param_noise_adaption_interval=10, callback=callback)
weights = np.concatenate([v.numpy().ravel() for v in model.synced_variables]
                         + [v.numpy().ravel() for v in model.target_actor.weights]
                         + [v.numpy().ravel() for v in model.returns.variables])
prefix = f"{out_dir}/rank{mpi_rank()}_of_{mpi_size()}"
np.save(f"{prefix}_weights.npy", weights)
np.save(f"{prefix}_obs_rms.npy", np.concatenate([model.obs_rms.mean, model.obs_rms.var]))
np.save(f"{prefix}_first_obs.npy", model.replay_buffer.obs[:5])
np.save(f"{prefix}_param_noise.npy", np.array([model.param_noise.current_stddev]))
