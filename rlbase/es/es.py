"""Evolution strategies (Salimans et al. 2017, "Evolution Strategies as a Scalable
Alternative to Reinforcement Learning").

Each generation scores mirrored perturbations theta +- sigma*eps of the policy's parameters
by full episodes, turns the returns into fitness (centered ranks by default) and moves theta
with Adam along sum_i (f+_i - f-_i) eps_i, with weight decay (rlbase/es/generation.py). Under
``mpiexec -n N`` every rank scores a share of the population and the ranks exchange only
noise-table offsets and results, so theta stays identical on every rank without being sent.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.loops.learning import config_signature, start_learning
from rlbase.common.loops.training_loop import LoopOptions, TrainingLoop
from rlbase.common.misc_util import env_seed
from rlbase.common.mpi_util import get_comm
from rlbase.common.vec_env import VecEnv, VecMonitor, find_wrapper
from rlbase.es.config import CONFIG
from rlbase.es.generation import play_center, run_generation, share
from rlbase.es.model import Model, build_model
from rlbase.es.rollout import EpisodeRunner, gym_envs

__all__ = ["learn", "share", "train"]

ALGORITHM = "es"
# What must stay finite (the generation step also names a non-finite return or update).
LOSSES = ("population_return_mean", "update_norm")


@config_signature(CONFIG, notes={
    "network": "a registered mlp-type network name or builder (num_layers=0: a linear policy)",
    "env": "a VecEnv whose gymnasium envs ES steps itself, one slot per env (a gymnasium env or "
           "an env id is wrapped); more envs = more episodes scored side by side per process. "
           "Its VecMonitor records every perturbed episode (monitor.csv in the log folder)",
    "total_timesteps": "env steps of perturbed episodes to train for, summed over MPI ranks "
                       "(the generation that crosses it finishes; unperturbed episodes are not "
                       "counted)",
    "seed": "seed of the initial weights, the noise table, the perturbations and the envs",
    "eval_env": "an env (or env id, seeded with seed + 1000) to evaluate the unperturbed "
                "policy on, instead of center_episodes on the training envs",
    "callback": "called after every generation as callback(model, info); returning False "
                "stops (under MPI every rank stops after that generation)",
    "load_path": "continue from this saved model (parameters, observation statistics, Adam "
                 "state; its network and normalize_observations are used)",
    "checkpoint_path": "the checkpoints' folder (None: <log dir>/checkpoints); also written to "
                       "at Ctrl-C when given",
    "resume": "continue from the newest checkpoint in checkpoint_path on every rank "
              "(total_timesteps counts the whole run; the saved noise table is rebuilt, so "
              "noise_table_size is ignored)",
    "**network_kwargs": "passed to the network builder (num_layers, num_hidden, "
                        "activation...)"})
def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = 1_000_000,
          seed: int | None = None, **kwargs: Any) -> Model:
    """Train a policy with evolution strategies and return the :class:`~rlbase.es.model.Model`.
    A checkpoint holds the model file plus every rank's generator, the noise-table seed and
    size and the loop's counters; under MPI only rank 0 writes it."""
    if isinstance(total_timesteps, bool) or not isinstance(total_timesteps, (int, np.integer)) \
            or total_timesteps < 0:
        raise RLBaseError(f"total_timesteps must be an integer >= 0, got {total_timesteps!r}")
    if kwargs.get("eval_episodes") == 0:
        # ES's eval_episodes once meant the unperturbed episodes at each log.
        raise RLBaseError("eval_episodes counts episodes per evaluation on eval_env; the "
                          "unperturbed policy's episodes at each log row are center_episodes "
                          "(center_episodes=0 turns them off)")
    model, env, options = start_learning(CONFIG, build_model, network, env, total_timesteps,
                                         seed, kwargs)
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run ES generations on ``model`` for ``total_timesteps`` more env steps of perturbed
    episodes (with ``resume``: up to that many in all). Under MPI every rank calls this
    together; only rank 0 writes checkpoints."""
    config = model.config
    comm = get_comm()
    ranks = 1 if comm is None else comm.Get_size()
    loop = TrainingLoop(model, env, total_timesteps, options, loss_names=LOSSES,
                        writer=model.rank == 0, seed=config.seed, comm=comm)
    if comm is not None and ranks > 1:
        # One noise table and rank 0's parameters on every rank (the only time a parameter
        # vector travels). Rank 0 writes no checkpoint before the first gather, so every rank
        # has restored the same one.
        model.noise_seed, model.theta = comm.bcast((model.noise_seed, model.theta), root=0)
    model.optimizer.lr = config.lr
    envs = gym_envs(env)
    monitor = find_wrapper(env, VecMonitor)
    runner = EpisodeRunner(envs, model.policy,
                           [env_seed(config.seed, i, model.rank) for i in range(len(envs))],
                           config.max_episode_steps, config.action_noise, model.rng,
                           monitor.record_episode if isinstance(monitor, VecMonitor) else None)
    center = config.center_episodes if options.eval_env is None else 0
    while loop.running():
        generation = run_generation(model, runner, comm)
        for ret, length in zip(generation.returns, generation.lengths):
            loop.episodes.add(ret, length)
        logs = play_center(model, runner, center, comm) \
            if center and loop.log_due(generation.steps) else None
        if loop.end_iteration(generation.steps, generation.stats, logs):
            break
    return model
