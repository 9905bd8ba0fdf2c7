"""One ES generation: score this rank's share of the population, gather every rank's results
and update theta identically on every rank; and the unperturbed policy's episodes.

Under ``mpiexec -n N`` the ranks exchange only noise-table offsets, returns, episode lengths,
observation sums and generator states; each applies the same update (same lists, same order,
same arithmetic) to its own copy of theta, so the parameters stay identical without being
sent.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import numpy as np

from rlbase.common.errors import NonFiniteError
from rlbase.common.io.checkpoint import generator_state
from rlbase.es.model import Model
from rlbase.es.noise_table import NoiseTable
from rlbase.es.optimizer import ascent_step, es_gradient, shape_fitness
from rlbase.es.rollout import EpisodeRunner

CENTER_TAG = 0xCE  # mixed into the seed of the unperturbed episodes' reset seeds


class Generation(NamedTuple):
    """What one generation gave, the same on every rank."""

    steps: int                 # env steps of the perturbed episodes, all ranks
    returns: np.ndarray        # every perturbed episode's return, ranks in order
    lengths: np.ndarray        # and its length
    stats: dict[str, float]    # train/ statistics


def share(total: int, rank: int, size: int) -> int:
    """Rank ``rank``'s share of ``total`` items split as evenly as possible over ``size``."""
    return total // size + (rank < total % size)


def allgather(comm: Any, local: Any) -> list[Any]:
    """Every rank's ``local``, in rank order. Ranks that finish early wait in a sleeping poll
    rather than inside MPI, which spins: on a machine with fewer free cores than ranks a
    spinning rank takes CPU time from the ranks still running episodes."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(2e-4)
    return comm.allgather(local)


def run_generation(model: Model, runner: EpisodeRunner, comm: Any) -> Generation:
    """Score this rank's mirrored perturbations by whole episodes, then update ``model``."""
    config = model.config
    policy, rng, noise = model.policy, model.rng, model.noise_table()
    size = 1 if comm is None else comm.Get_size()
    antithetic, per_vector = config.antithetic, config.episodes_per_batch
    npairs = config.popsize // 2 if antithetic else config.popsize
    signs_per_dir = np.array([1, -1] if antithetic else [1])
    dirs = noise.sample_index(rng, policy.dim, share(npairs, model.rank, size))
    # Tasks: each direction's signs, each repeated episodes_per_batch times.
    indices = np.repeat(dirs, len(signs_per_dir) * per_vector)
    signs = np.tile(np.repeat(signs_per_dir, per_vector), len(dirs))
    reset_seeds = None
    if config.paired_starts and antithetic:  # [dir, episode] seeds, shared by + and -
        pair_seeds = rng.integers(0, 2**31 - 1, size=(len(dirs), per_vector))
        reset_seeds = np.tile(pair_seeds, (1, 2)).ravel()
    results = runner.run(model.theta, noise, config.noise_stdev, indices, signs, reset_seeds)
    # The generator's state travels with the results: rank 0's checkpoints hold every rank's.
    local = (dirs, results.returns, results.lengths, results.obs_sum, results.obs_sumsq,
             results.obs_count, generator_state(rng))
    gathered = [local] if size == 1 else allgather(comm, local)
    model.generator_states = [g[6] for g in gathered]
    return update(model, noise, gathered, len(signs_per_dir), per_vector)


def update(model: Model, noise: NoiseTable, gathered: list[tuple], nsigns: int,
           per_vector: int) -> Generation:
    """One ES step from every rank's results, identical on all ranks."""
    config = model.config
    policy, generation = model.policy, model.generation + 1
    dirs, episode_returns, episode_lengths = (np.concatenate([g[k] for g in gathered])
                                              for k in range(3))
    # [directions, signs]: a vector's fitness is the mean return of its episodes.
    returns = episode_returns.reshape(len(dirs), nsigns, per_vector).mean(axis=2)
    if not np.all(np.isfinite(returns)):
        raise NonFiniteError(f"es: an episode return became {returns[~np.isfinite(returns)][0]}"
                             f" at generation {generation}")
    if not all(np.all(np.isfinite(g[4])) for g in gathered):
        raise NonFiniteError(f"es: an env returned a non-finite observation at generation "
                             f"{generation}")
    antithetic = nsigns == 2
    fitness = shape_fitness(returns, config.fitness_shaping)
    grad = es_gradient(noise, dirs, fitness if antithetic else fitness[:, 0], policy.dim,
                       antithetic)
    delta = ascent_step(model.optimizer, model.theta, grad, config.l2coeff)
    if not np.all(np.isfinite(delta)):
        raise NonFiniteError(f"es: the parameter update became non-finite at generation "
                             f"{generation} (Adam step {model.optimizer.t})")
    model.theta = (model.theta + delta).astype(np.float32)
    if model.normalize_observations:
        count = sum(g[5] for g in gathered)
        if count > 0:
            mean = sum(g[3] for g in gathered) / count
            var = np.maximum(sum(g[4] for g in gathered) / count - np.square(mean), 0.0)
            model.obs_rms.update_from_moments(mean, var, count)
            model.sync_obs_stats()
    stats = {"population_return_mean": float(returns.mean()),
             "population_return_max": float(returns.max()),
             "population_return_min": float(returns.min()),
             "update_norm": float(np.linalg.norm(delta)),
             "param_norm": float(np.linalg.norm(model.theta)),
             "learning_rate": float(model.optimizer.lr)}
    return Generation(int(episode_lengths.sum()), episode_returns, episode_lengths, stats)


def play_center(model: Model, runner: EpisodeRunner, episodes: int, comm: Any
                ) -> dict[str, float]:
    """Play the unperturbed policy (theta itself) ``episodes`` times, shared over the ranks,
    on the training envs; returns the log entries (the same on every rank)."""
    size = 1 if comm is None else comm.Get_size()
    n = share(episodes, model.rank, size)
    # Reset seeds from a generator of their own: the training generator's stream must not
    # depend on which generations are logged (a resumed run replays the uninterrupted one).
    seeds = np.random.default_rng([model.noise_seed, model.rank, model.generation,
                                   CENTER_TAG]).integers(0, 2**31 - 1, size=n)
    results = runner.run(model.theta, model.noise_table(), 0.0, np.full(n, -1),
                         np.zeros(n, np.int64), seeds)
    local = (results.returns, results.lengths)
    gathered = [local] if size == 1 else allgather(comm, local)
    returns = np.concatenate([g[0] for g in gathered])
    lengths = np.concatenate([g[1] for g in gathered])
    model.center_timesteps += int(lengths.sum())
    return {"eval/mean_reward": float(returns.mean()),
            "eval/mean_ep_length": float(lengths.mean()),
            "time/center_timesteps": model.center_timesteps}
