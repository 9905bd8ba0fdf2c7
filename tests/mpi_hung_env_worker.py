"""Run by tests/test_signals.py under ``mpiexec -n 2 python mpi_hung_env_worker.py ALG``
(ppo: the on-policy loop; ddpg: the off-policy loop): rank 1's env worker hangs in step() at
its 100th env step and a stop request reaches rank 1 alone (what a SIGTERM to that rank does);
rank 0's env is healthy. Both ranks must stop after the same rollout (PPO, without an update)
or env step (DDPG, without training on it): rank 1 cannot finish it, and rank 0 left alone
would wait forever in the next gradient average."""

import os
import sys
import threading
import time

import fault_envs  # noqa: F401 - registers FaultyHang-v0
import gymnasium as gym

from rlbase.common.loops.signals import request_stop
from rlbase.common.mpi_util import mpi_rank
from rlbase.common.vec_env import SubprocVecEnv, VecMonitor
from rlbase.ddpg.ddpg import learn as ddpg_learn
from rlbase.ppo.ppo import learn as ppo_learn

rank = mpi_rank()
mark = os.environ["RLBASE_TEST_HANG_MARK"] + f".{rank}"
os.environ["RLBASE_TEST_HANG_MARK"] = mark


def stop_once_hung() -> None:
    while not os.path.exists(mark):
        time.sleep(0.05)
    time.sleep(0.5)
    request_stop()


alg = sys.argv[1]
# Rank 1's env hangs at its 100th step (PPO: in the second rollout of 64); rank 0's never does.
at = 100 if rank == 1 else 10**9
env_id = "FaultyHang-v0" if alg == "ppo" else "FaultyHangBox-v0"
env = VecMonitor(SubprocVecEnv([lambda: gym.make(env_id, at=at)], timeout=600))
if rank == 1:
    threading.Thread(target=stop_once_hung, daemon=True).start()
if alg == "ppo":
    model = ppo_learn("mlp", env, total_timesteps=64 * 50, seed=0, nsteps=64, nminibatches=1,
                      noptepochs=1, log_interval=10**9)
else:
    model = ddpg_learn("mlp", env, total_timesteps=10**4, seed=0, learning_starts=10,
                       batch_size=8, layer_sizes=[8], log_interval=10**9)
print(f"rank {rank} stopped at {model.num_timesteps}", flush=True)
env.close()
sys.exit(0)
