"""Run by tests/test_es.py under ``mpiexec -n 2``; each rank dumps its state to OUT.

``train OUT``: train ES briefly (the ranks must end identical).
``resume OUT FOLDER``: checkpoint, resume with nothing left, resume and continue, and run
straight through (each rank must get its own generator back; resumed == straight).
"""

import sys

import numpy as np

from rlbase.common.envs.make import make_vec_env
from rlbase.common.mpi_util import mpi_rank, mpi_size
from rlbase.common.vec_env import VecMonitor, find_wrapper
from rlbase.es.es import learn


def train(out_dir: str) -> None:
    env = make_vec_env("CartPole-v1", num_env=2, seed=0)
    infos = []
    model = learn("mlp", env, total_timesteps=3000, seed=0, popsize=8, num_hidden=16,
                  center_episodes=2, log_interval=2,
                  callback=lambda m, info: infos.append(dict(info)))
    monitor = find_wrapper(env, VecMonitor)
    assert isinstance(monitor, VecMonitor)
    np.savez(f"{out_dir}/rank{mpi_rank()}_of_{mpi_size()}.npz", theta=model.theta,
             obs_mean=model.obs_rms.mean, obs_var=model.obs_rms.var,
             num_timesteps=model.num_timesteps,
             steps=np.diff([0, *(info["num_timesteps"] for info in infos)]),
             center=model.center_timesteps, monitored=len(monitor.episode_returns),
             episodes=infos[-1]["episodes"],
             episode_returns=[ep["r"] for ep in infos[-1]["ep_infos"]])


def resume(out_dir: str, folder: str) -> None:
    def run(total, seed, **kw):
        env = make_vec_env("CartPole-v1", num_env=2, seed=seed)
        return learn("mlp", env, total, seed=seed, popsize=8, num_hidden=8, center_episodes=2,
                     log_interval=2, action_noise=0.05, paired_starts=True,
                     noise_table_size=10_000, **kw)

    first = run(1500, 0, checkpoint_interval=1, checkpoint_path=folder)
    again = run(1500, 5, checkpoint_path=folder, resume=True)
    resumed = run(3000, 5, checkpoint_path=folder, resume=True)
    straight = run(3000, 0)
    np.savez(f"{out_dir}/resume_rank{mpi_rank()}.npz",
             first_rng=repr(first.rng.bit_generator.state),
             again_rng=repr(again.rng.bit_generator.state), first=first.theta,
             again=again.theta, resumed=resumed.theta, straight=straight.theta,
             steps=[resumed.num_timesteps, straight.num_timesteps])


if __name__ == "__main__":
    if sys.argv[1] == "train":
        train(sys.argv[2])
    else:
        resume(sys.argv[2], sys.argv[3])
