"""Evolution strategies (Salimans et al. 2017, "Evolution Strategies as a Scalable
Alternative to Reinforcement Learning").

Each generation scores mirrored perturbations theta +- sigma*eps of the policy's parameters
by full episodes, turns the returns into fitness (centered ranks by default) and moves theta
with Adam along sum_i (f+_i - f-_i) eps_i, with weight decay. Under ``mpiexec -n N`` every
rank scores a share of the population and the ranks exchange only noise-table offsets,
returns, episode lengths and observation sums; each then applies the same update to its own
copy of theta, so the parameters stay identical without being sent.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from rlbase.common import logger
from rlbase.common.checkpoint import Checkpointer, generator_state, set_generator_state
from rlbase.common.cmd_util import as_vec_env
from rlbase.common.errors import NonFiniteError, RLBaseError
from rlbase.common.misc_util import env_seed, set_global_seeds
from rlbase.common.mpi_util import get_comm
from rlbase.common.running_mean_std import RunningMeanStd
from rlbase.common.signals import stop_requested
from rlbase.common.vec_env import VecEnv
from rlbase.es.model import ALGORITHM, ESModel
from rlbase.es.noise_table import NoiseTable, default_size
from rlbase.es.optimizer import FITNESS_SHAPINGS, Adam, ascent_step, es_gradient, shape_fitness
from rlbase.es.policy import ESPolicy
from rlbase.es.rollout import EpisodeRunner, gym_envs


def share(total: int, rank: int, size: int) -> int:
    """Rank ``rank``'s share of ``total`` items split as evenly as possible over ``size``."""
    return total // size + (rank < total % size)


def _check(popsize: int, noise_stdev: float, lr: float, l2coeff: float,
           episodes_per_batch: int, eval_episodes: int, fitness_shaping: str,
           antithetic: bool, action_noise: float, max_episode_steps: int | None,
           log_interval: int, total_timesteps: int) -> None:
    def integer(value: Any) -> bool:
        return not isinstance(value, bool) and isinstance(value, (int, np.integer))

    for name, value, low in (("popsize", popsize, 1), ("episodes_per_batch",
                             episodes_per_batch, 1), ("eval_episodes", eval_episodes, 0),
                             ("log_interval", log_interval, 1),
                             ("total_timesteps", total_timesteps, 1)):
        if not integer(value) or value < low:
            raise RLBaseError(f"{name} must be an integer >= {low}, got {value!r}")
    if antithetic and popsize % 2:
        raise RLBaseError(f"popsize must be even with antithetic=True (mirrored pairs), got "
                          f"{popsize}")
    for name, value in (("noise_stdev", noise_stdev), ("lr", lr)):
        if not isinstance(value, (int, float)) or not value > 0:
            raise RLBaseError(f"{name} must be a positive number, got {value!r}")
    for name, value in (("l2coeff", l2coeff), ("action_noise", action_noise)):
        if not isinstance(value, (int, float)) or not value >= 0:
            raise RLBaseError(f"{name} must be a number >= 0, got {value!r}")
    if fitness_shaping not in FITNESS_SHAPINGS:
        raise RLBaseError(f"unknown fitness_shaping '{fitness_shaping}'; use one of "
                          f"{', '.join(FITNESS_SHAPINGS)}")
    if max_episode_steps is not None and (not integer(max_episode_steps)
                                          or max_episode_steps < 1):
        raise RLBaseError(f"max_episode_steps must be a positive integer or None, got "
                          f"{max_episode_steps!r}")


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int,
          seed: int | None = None, popsize: int = 40, noise_stdev: float = 0.02,
          lr: float = 0.01, l2coeff: float = 0.005, episodes_per_batch: int = 1,
          eval_episodes: int = 5, fitness_shaping: str = "centered_rank",
          antithetic: bool = True, observation_normalization: bool = True,
          action_noise: float = 0.0, max_episode_steps: int | None = None,
          paired_starts: bool = True,
          noise_table_size: int | None = None, log_interval: int = 10,
          callback: Callable[[ESModel, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_interval: int = 0,
          checkpoint_path: str | None = None, resume: bool = False,
          **network_kwargs: Any) -> ESModel:
    """Train a policy with evolution strategies and return the :class:`ESModel`.

    network: a registered mlp-type network name or builder (num_layers=0: a linear policy).
    env: a VecEnv whose gymnasium envs ES steps itself, one slot per env (a gymnasium env or
        an env id is wrapped); more envs = more episodes scored side by side per process.
    total_timesteps: env steps of perturbed episodes to train for, summed over MPI ranks
        (the generation that crosses it finishes; evaluation episodes are counted apart).
    seed: seed of the initial weights, the noise table, the perturbations and the envs.
    popsize: perturbed parameter vectors per generation, over all ranks (even when
        antithetic: popsize / 2 mirrored pairs).
    noise_stdev: sigma, the scale of the parameter perturbations.
    lr: Adam's learning rate.
    l2coeff: weight decay: l2coeff * theta is added to the (negated) ES gradient.
    episodes_per_batch: episodes each perturbed vector is scored on; its fitness is their
        mean return (more than 1 helps on envs with noisy returns).
    eval_episodes: episodes of the unperturbed policy run at each log (0: none); their
        steps are reported as time/eval_timesteps, not counted in total_timesteps.
    fitness_shaping: 'centered_rank' (ranks scaled to [-0.5, 0.5]), 'normalize' (zero
        mean, unit std) or 'none' (raw returns).
    antithetic: mirrored sampling, theta + sigma*eps and theta - sigma*eps.
    observation_normalization: normalize observations by running statistics gathered from
        the rollouts (updated between generations, clipped to +-5).
    action_noise: std of Gaussian noise added to the network outputs (logits or the Box
        mean before squashing) in perturbed episodes.
    max_episode_steps: cut episodes at this length (None: the env's own time limit).
    paired_starts: the two episodes of a mirrored pair start from the same state (same reset
        seed): common random numbers, so f+ - f- measures the perturbation rather than the
        luck of the start (a large effect on Pendulum, whose start angle decides much of the
        return). Only with antithetic=True.
    noise_table_size: entries of the shared noise table (None: max(2**20, 32 * params)).
    log_interval: log (and evaluate) every this many generations.
    callback: called after every generation as ``callback(model, info)``; False stops.
    load_path: continue from this saved model (parameters, statistics, Adam state).
    checkpoint_interval: every this many env steps (checked after each generation) write a
        resumable checkpoint (parameters, Adam state, observation statistics, generation and
        step counters, noise-table seed and size, every rank's and the global RNG states) to
        checkpoint_path (None: <log dir>/checkpoints) as checkpoint_<steps>.zip (0: never).
        Under MPI only rank 0 writes.
    checkpoint_path: the folder of those checkpoints (also written to at Ctrl-C when given).
    resume: continue from the newest of those checkpoints on every rank (total_timesteps counts
        the whole run; the saved noise table is rebuilt, so noise_table_size is ignored).
    **network_kwargs: passed to the network builder (num_layers, num_hidden, activation...).
    """
    hyperparameters = {k: v for k, v in locals().items()
                       if k not in ("env", "callback", "network_kwargs", "load_path",
                                    "resume")}
    _check(popsize, noise_stdev, lr, l2coeff, episodes_per_batch, eval_episodes,
           fitness_shaping, antithetic, action_noise, max_episode_steps, log_interval,
           total_timesteps)
    comm = get_comm()
    rank, size = (0, 1) if comm is None else (comm.Get_rank(), comm.Get_size())
    checkpointer = Checkpointer(ALGORITHM, checkpoint_path, checkpoint_interval,
                                writer=rank == 0)
    set_global_seeds(seed)
    env = as_vec_env(env, seed)
    envs = gym_envs(env)
    policy = ESPolicy(env.observation_space, env.action_space, network, network_kwargs)
    theta = policy.get_flat()
    # All ranks draw from one noise table and start from rank 0's parameters (the only time
    # a parameter vector travels).
    table_seed = seed if seed is not None else int(np.random.SeedSequence().entropy % 2**31)
    if comm is not None and size > 1:
        table_seed = comm.bcast(table_seed, root=0)
        theta = comm.bcast(theta, root=0)
    table_size = noise_table_size or default_size(policy.dim)
    model = ESModel(policy, theta, RunningMeanStd(shape=(policy.ob_dim,)),
                    Adam(policy.dim, lr), hyperparameters)
    if load_path is not None:
        model.load(load_path)
        model.optimizer.lr = lr
    rng = np.random.default_rng(None if seed is None else [seed, rank, 0xE5])
    steps, eval_steps, generation = 0, 0, 0
    # Every rank reads the same file: rank 0 writes its first checkpoint only after the first
    # collective, so no rank can see a newer one.
    resumed = checkpointer.restore(model) if resume else None
    if resumed is not None:
        steps, eval_steps, generation, table_seed, table_size = _restore_loop(
            resumed[0], rng, rank, size)
    noise = NoiseTable(table_seed, table_size)
    model.rng, model.generation = rng, generation
    seeds = [env_seed(seed, i, rank) for i in range(len(envs))]
    runner = EpisodeRunner(envs, policy, seeds, max_episode_steps, action_noise, rng)

    npairs = popsize // 2 if antithetic else popsize
    signs_per_dir = np.array([1, -1] if antithetic else [1])
    tstart = time.perf_counter()
    while steps < total_timesteps:
        generation += 1
        model.generation = generation
        dirs = noise.sample_index(rng, policy.dim, share(npairs, rank, size))
        # Tasks: each direction's signs, each repeated episodes_per_batch times; then the
        # unperturbed evaluation episodes (sign 0) at log time.
        reps = len(signs_per_dir) * episodes_per_batch
        indices = np.repeat(dirs, reps)
        signs = np.tile(np.repeat(signs_per_dir, episodes_per_batch), len(dirs))
        do_log = generation % log_interval == 0
        n_eval = share(eval_episodes, rank, size) if do_log else 0
        indices = np.concatenate([indices, np.full(n_eval, -1)])
        signs = np.concatenate([signs, np.zeros(n_eval, np.int64)])
        reset_seeds = None
        if paired_starts and antithetic:  # [dir, episode] seeds, shared by + and -
            pair_seeds = rng.integers(0, 2**31 - 1, size=(len(dirs), episodes_per_batch))
            # Evaluation episodes get fresh seeds too: an env's stream after reset(seed=s)
            # is a function of s, so two envs last reset with a pair's seed would continue
            # identically.
            reset_seeds = np.concatenate([np.tile(pair_seeds, (1, 2)).ravel(),
                                          rng.integers(0, 2**31 - 1, size=n_eval)])
        results = runner.run(model.theta, noise, noise_stdev, indices, signs, reset_seeds)
        n_train = len(dirs) * reps
        local = (dirs, results.returns[:n_train].reshape(len(dirs), len(signs_per_dir),
                                                         episodes_per_batch).mean(axis=2),
                 results.lengths[:n_train], results.returns[n_train:],
                 results.lengths[n_train:], results.obs_sum, results.obs_sumsq,
                 results.obs_count, generator_state(rng), stop_requested())
        # The generators' states (for rank 0's checkpoints) and stop requests travel with the
        # results: every rank then stops after the same generation.
        gathered = [local] if comm is None or size == 1 else _allgather(comm, local)
        stats = _update(model, noise, gathered, fitness_shaping, antithetic, l2coeff,
                        observation_normalization, generation)
        steps += stats["train_steps"]
        eval_steps += stats["eval_steps"]
        model.num_timesteps += stats["train_steps"]
        elapsed = max(time.perf_counter() - tstart, 1e-9)
        info = {"num_timesteps": model.num_timesteps, "total_timesteps": total_timesteps,
                "generation": generation, "fps": (steps + eval_steps) / elapsed, **stats}
        if do_log:
            _log(info, steps, eval_steps)
        stop = any(g[9] for g in gathered)
        stop = (callback is not None and callback(model, info) is False) or stop
        if checkpointer.due(model.num_timesteps) or (stop and checkpointer.active):
            path = checkpointer.save(model, {
                "steps": steps, "eval_steps": eval_steps, "generation": generation,
                "noise_table": {"seed": noise.seed, "size": noise.size},
                "rngs": [g[8] for g in gathered]})
            logger.log(f"Checkpoint at generation {generation}: {path}")
        if stop:
            break
    return model


def _restore_loop(loop: dict[str, Any], rng: np.random.Generator, rank: int, size: int
                  ) -> tuple[int, int, int, int, int]:
    """Put a checkpoint's loop state into ``rng``; returns (steps, eval_steps, generation,
    noise-table seed, noise-table size)."""
    try:
        steps, eval_steps, generation = (int(loop[k]) for k in ("steps", "eval_steps",
                                                                 "generation"))
        table_seed, table_size = int(loop["noise_table"]["seed"]), int(loop["noise_table"]["size"])
        rngs = list(loop["rngs"])
    except (KeyError, TypeError, ValueError) as exc:
        raise RLBaseError(f"ES checkpoint has a malformed loop state ({type(exc).__name__}: "
                          f"{exc})") from None
    if len(rngs) == size:
        set_generator_state(rng, rngs[rank])
    else:
        # Another number of ranks: the run goes on correctly, but its perturbations are not
        # the ones the saved run would have drawn. The global generator was just restored
        # alike on every rank, so this is reproducible and still distinct per rank.
        fresh = np.random.default_rng([int(np.random.randint(2**31)), rank, generation])
        rng.bit_generator.state = fresh.bit_generator.state
        logger.log(f"checkpoint written by {len(rngs)} ranks, resumed on {size}: the "
                   "perturbation streams start afresh")
    return steps, eval_steps, generation, table_seed, table_size


def _allgather(comm: Any, local: tuple) -> list[tuple]:
    """Every rank's results, in rank order. Ranks that finish early wait in a sleeping poll
    rather than inside MPI, which spins: on a machine with fewer free cores than ranks a
    spinning rank takes CPU time from the ranks still running episodes."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(2e-4)
    return comm.allgather(local)


def _update(model: ESModel, noise: NoiseTable, gathered: list[tuple], fitness_shaping: str,
            antithetic: bool, l2coeff: float, observation_normalization: bool,
            generation: int) -> dict[str, Any]:
    """One ES step from every rank's results, identical on all ranks (same lists, same
    order, same arithmetic)."""
    policy = model.policy
    dirs = np.concatenate([g[0] for g in gathered])
    returns = np.concatenate([g[1] for g in gathered])  # [n, 2] (antithetic) or [n, 1]
    train_steps = int(sum(g[2].sum() for g in gathered))
    eval_returns = np.concatenate([g[3] for g in gathered])
    eval_steps = int(sum(g[4].sum() for g in gathered))
    if not np.all(np.isfinite(returns)):
        raise NonFiniteError(f"es: an episode return became {returns[~np.isfinite(returns)][0]}"
                             f" at generation {generation}")
    if not all(np.all(np.isfinite(g[6])) for g in gathered):
        raise NonFiniteError(f"es: an env returned a non-finite observation at generation "
                             f"{generation}")
    fitness = shape_fitness(returns, fitness_shaping)
    grad = es_gradient(noise, dirs, fitness if antithetic else fitness[:, 0], policy.dim,
                       antithetic)
    delta = ascent_step(model.optimizer, model.theta, grad, l2coeff)
    if not np.all(np.isfinite(delta)):
        raise NonFiniteError(f"es: the parameter update became non-finite at generation "
                             f"{generation} (Adam step {model.optimizer.t})")
    model.theta = (model.theta + delta).astype(np.float32)
    if observation_normalization:
        count = sum(g[7] for g in gathered)
        if count > 0:
            mean = sum(g[5] for g in gathered) / count
            var = np.maximum(sum(g[6] for g in gathered) / count - np.square(mean), 0.0)
            model.obs_rms.update_from_moments(mean, var, count)
            model.sync_obs_stats()
    lengths = np.concatenate([g[2] for g in gathered])
    return {"train_steps": train_steps, "eval_steps": eval_steps,
            "return_mean": float(returns.mean()), "return_max": float(returns.max()),
            "return_min": float(returns.min()), "episode_len_mean": float(lengths.mean()),
            "eval_return_mean": float(eval_returns.mean()) if eval_returns.size else None,
            "update_norm": float(np.linalg.norm(delta)),
            "param_norm": float(np.linalg.norm(model.theta))}


def _log(info: dict[str, Any], steps: int, eval_steps: int) -> None:
    logger.record_tabular("time/total_timesteps", info["num_timesteps"])
    logger.record_tabular("time/eval_timesteps", eval_steps)
    logger.record_tabular("time/generations", info["generation"])
    logger.record_tabular("time/fps", int(info["fps"]))
    logger.record_tabular("es/return_mean", info["return_mean"])
    logger.record_tabular("es/return_max", info["return_max"])
    logger.record_tabular("es/return_min", info["return_min"])
    logger.record_tabular("es/episode_len_mean", info["episode_len_mean"])
    if info["eval_return_mean"] is not None:
        logger.record_tabular("eval/return_mean", info["eval_return_mean"])
    logger.record_tabular("train/update_norm", info["update_norm"])
    logger.record_tabular("train/param_norm", info["param_norm"])
    logger.dump_tabular()

