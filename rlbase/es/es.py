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
from rlbase.common.learning import Alias, start_learning
from rlbase.common.loop import LoopOptions, TrainingLoop
from rlbase.common.misc_util import env_seed
from rlbase.common.mpi_util import get_comm
from rlbase.common.vec_env import VecEnv, VecMonitor, find_wrapper
from rlbase.es.generation import play_center, run_generation, share
from rlbase.es.model import Model, build_model
from rlbase.es.rollout import EpisodeRunner, gym_envs

__all__ = ["ALIASES", "learn", "share", "train"]

ALGORITHM = "es"
# No deprecated spellings: ES's old eval_episodes (the unperturbed episodes) is now
# center_episodes, and learn() says so when eval_episodes=0 asks for none.
ALIASES: dict[str, Alias] = {}
# What must stay finite (the generation step also names a non-finite return or update).
LOSSES = ("population_return_mean", "update_norm")


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = 1_000_000,
          seed: int | None = None, popsize: int = 40, noise_stdev: float = 0.02,
          lr: float = 0.01, l2coeff: float = 0.005, episodes_per_batch: int = 1,
          center_episodes: int = 5, fitness_shaping: str = "centered_rank",
          antithetic: bool = True, observation_normalization: bool = True,
          action_noise: float = 0.0, max_episode_steps: int | None = None,
          paired_starts: bool = True, noise_table_size: int | None = None,
          log_interval: int = 10, eval_env: VecEnv | Any | None = None, eval_freq: int = 0,
          eval_episodes: int = 5,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_interval: int = 0,
          checkpoint_path: str | None = None, resume: bool = False,
          **network_kwargs: Any) -> Model:
    """Train a policy with evolution strategies and return the :class:`~rlbase.es.model.Model`.

    network: a registered mlp-type network name or builder (num_layers=0: a linear policy).
    env: a VecEnv whose gymnasium envs ES steps itself, one slot per env (a gymnasium env or
        an env id is wrapped); more envs = more episodes scored side by side per process.
        Its VecMonitor records every perturbed episode (monitor.csv in the log folder).
    total_timesteps: env steps of perturbed episodes to train for, summed over MPI ranks
        (the generation that crosses it finishes; unperturbed episodes are not counted).
    seed: seed of the initial weights, the noise table, the perturbations and the envs.
    popsize: perturbed parameter vectors per generation, over all ranks (even when
        antithetic: popsize / 2 mirrored pairs).
    noise_stdev: sigma, the scale of the parameter perturbations.
    lr: Adam's learning rate.
    l2coeff: weight decay: l2coeff * theta is added to the (negated) ES gradient.
    episodes_per_batch: episodes each perturbed vector is scored on; its fitness is their
        mean return (more than 1 helps on envs with noisy returns).
    center_episodes: episodes of the unperturbed policy (theta itself) played on the training
        envs, shared over MPI ranks, for every log row when no eval_env is given (0: none);
        logged as eval/mean_reward and eval/mean_ep_length, their steps as
        time/center_timesteps (not counted in total_timesteps).
    fitness_shaping: 'centered_rank' (ranks scaled to [-0.5, 0.5]), 'normalize' (zero
        mean, unit std) or 'none' (raw returns).
    antithetic: mirrored sampling, theta + sigma*eps and theta - sigma*eps.
    observation_normalization: normalize observations by running statistics gathered from
        the perturbed episodes (updated between generations, the variance floored at 1e-2 as
        in Salimans et al.'s code, clipped to +-5).
    action_noise: std of Gaussian noise added to the network outputs (logits or the Box
        mean before squashing) in perturbed episodes.
    max_episode_steps: cut episodes at this length (None: the env's own time limit).
    paired_starts: the two episodes of a mirrored pair start from the same state (same reset
        seed): common random numbers, so f+ - f- measures the perturbation rather than the
        luck of the start (a large effect on Pendulum, whose start angle decides much of the
        return). Only with antithetic=True.
    noise_table_size: entries of the shared noise table (None: max(2**20, 32 * params)).
    log_interval: log every this many generations (and after the first and the last).
    eval_env: an env (or env id, seeded with seed + 1000) to evaluate the unperturbed policy
        on, instead of center_episodes on the training envs.
    eval_freq: evaluate every this many env steps (0: at every log row when eval_env is
        given); logged as eval/mean_reward, the best model written to
        <log dir>/best_model.zip.
    eval_episodes: episodes per evaluation on eval_env.
    callback: called after every generation as ``callback(model, info)``; returning False
        stops (under MPI every rank stops after that generation).
    load_path: continue from this saved model (parameters, observation statistics, Adam
        state; its network and observation_normalization are used).
    checkpoint_interval: write a resumable checkpoint (the model file plus every rank's
        generator, the noise-table seed and size and the loop's counters) every this many
        env steps, checked after each generation (0: never). Under MPI only rank 0 writes.
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints); also written to
        at Ctrl-C when given.
    resume: continue from the newest checkpoint in checkpoint_path on every rank
        (total_timesteps counts the whole run; the saved noise table is rebuilt, so
        noise_table_size is ignored).
    **network_kwargs: passed to the network builder (num_layers, num_hidden, activation...).
    """
    if isinstance(total_timesteps, bool) or not isinstance(total_timesteps, (int, np.integer)) \
            or total_timesteps < 0:
        raise RLBaseError(f"total_timesteps must be an integer >= 0, got {total_timesteps!r}")
    if eval_episodes == 0:
        # ES's eval_episodes once meant the unperturbed episodes at each log.
        raise RLBaseError("eval_episodes counts episodes per evaluation on eval_env; the "
                          "unperturbed policy's episodes at each log row are center_episodes "
                          "(center_episodes=0 turns them off)")
    model, env, options = start_learning(ALGORITHM, build_model, locals(), ALIASES,
                                         architecture=Model.architecture)
    assert isinstance(model, Model)  # what build_model built (start_learning's type is wider)
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run ES generations on ``model`` for ``total_timesteps`` more env steps of perturbed
    episodes (with ``resume``: up to that many in all). Under MPI every rank calls this
    together; only rank 0 writes checkpoints."""
    hp = model.hyperparameters
    comm = get_comm()
    ranks = 1 if comm is None else comm.Get_size()
    loop = TrainingLoop(model, env, total_timesteps, options, loss_names=LOSSES,
                        writer=model.rank == 0, seed=hp.get("seed"), comm=comm)
    if comm is not None and ranks > 1:
        # One noise table and rank 0's parameters on every rank (the only time a parameter
        # vector travels). Rank 0 writes no checkpoint before the first gather, so every rank
        # has restored the same one.
        model.noise_seed, model.theta = comm.bcast((model.noise_seed, model.theta), root=0)
    model.optimizer.lr = float(hp["lr"])
    envs = gym_envs(env)
    monitor = find_wrapper(env, VecMonitor)
    runner = EpisodeRunner(envs, model.policy,
                           [env_seed(hp.get("seed"), i, model.rank) for i in range(len(envs))],
                           hp["max_episode_steps"], float(hp["action_noise"]), model.rng,
                           monitor.record_episode if isinstance(monitor, VecMonitor) else None)
    center = int(hp["center_episodes"]) if options.eval_env is None else 0
    while loop.running():
        generation = run_generation(model, runner, comm)
        for ret, length in zip(generation.returns, generation.lengths):
            loop.episodes.add(ret, length)
        logs = play_center(model, runner, center, comm) \
            if center and loop.log_due(generation.steps) else None
        if loop.end_iteration(generation.steps, generation.stats, logs):
            break
    return model
