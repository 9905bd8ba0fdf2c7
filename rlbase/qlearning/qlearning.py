"""Tabular Q-learning (Watkins) for Discrete actions, on Discrete or discretized Box states.

No TensorFlow: the Q-table is a numpy array ``[num_states, num_actions]`` updated one
transition at a time. Box observations (MountainCar-v0) are cut into ``grid_size`` equal bins
per dimension between the space's bounds.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Callable

import gymnasium as gym
import numpy as np

from rlbase.common import logger
from rlbase.common.checkpoint import Checkpointer, generator_state, set_generator_state
from rlbase.common.cmd_util import as_vec_env
from rlbase.common.errors import RLBaseError
from rlbase.common.misc_util import safemean
from rlbase.common.schedules import make_schedule
from rlbase.common.serialization import check_spaces, load_file, save_file, space_to_json
from rlbase.common.signals import stop_requested
from rlbase.common.vec_env import VecEnv

ALGORITHM = "qlearning"
MAX_TABLE_ENTRIES = 50_000_000  # 200 MB of float32: beyond this a table is a mistake


class StateIndexer:
    """Maps observations to row numbers of the Q-table.

    space: the observation space (Discrete, MultiDiscrete, or Box with finite bounds).
    grid_size: bins per Box dimension.
    """

    def __init__(self, space: gym.Space, grid_size: int):
        self.space = space
        if isinstance(space, gym.spaces.Discrete):
            self.num_states = int(space.n)
            self._index = lambda obs: np.asarray(obs, np.int64).reshape(-1) - int(space.start)
        elif isinstance(space, gym.spaces.MultiDiscrete):
            dims = tuple(int(n) for n in space.nvec.ravel())
            starts = np.asarray(space.start).ravel()
            self.num_states = int(np.prod(dims))
            self._index = lambda obs: np.ravel_multi_index(
                (np.asarray(obs, np.int64).reshape(len(obs), -1) - starts).T, dims)
        elif isinstance(space, gym.spaces.Box):
            if isinstance(grid_size, bool) or not isinstance(grid_size, (int, np.integer)) \
                    or grid_size < 1:
                raise RLBaseError(f"grid_size must be a positive integer, got {grid_size!r}")
            low, high = space.low.astype(np.float64).ravel(), space.high.astype(
                np.float64).ravel()
            if not (np.isfinite(low).all() and np.isfinite(high).all()):
                raise RLBaseError(f"qlearning cannot discretize {space}: its bounds are not "
                                  "all finite; wrap the env to clip its observations, or use "
                                  "dqn")
            self.num_states = int(grid_size) ** low.size
            self.low, self.width = low, (high - low) / grid_size
            self.dims = (int(grid_size),) * low.size
            self._index = self._box_index
        else:
            raise RLBaseError(f"qlearning needs a Discrete, MultiDiscrete or Box observation "
                              f"space, got {space}")

    def _box_index(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, np.float64).reshape(len(obs), -1)
        bins = np.floor((obs - self.low) / np.where(self.width > 0, self.width, 1.0))
        bins = np.clip(bins, 0, self.dims[0] - 1).astype(np.int64)
        return np.ravel_multi_index(bins.T, self.dims)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """Row numbers ``[B]`` for a batch of observations."""
        return self._index(obs)


class Model:
    """A Q-table and the policies it defines.

    ob_space / ac_space: the env's single observation and (Discrete) action spaces.
    grid_size: bins per Box observation dimension.
    seed: seed of the generator that breaks ties and draws exploratory actions.
    """

    def __init__(self, ob_space: gym.Space, ac_space: gym.Space, grid_size: int = 20,
                 seed: int | None = None, hyperparameters: dict[str, Any] | None = None):
        if not isinstance(ac_space, gym.spaces.Discrete):
            raise RLBaseError(f"qlearning needs a Discrete action space, got {ac_space}; for "
                              f"{type(ac_space).__name__} actions use a2c, ppo or ddpg")
        self.ob_space, self.ac_space, self.grid_size = ob_space, ac_space, grid_size
        self.states = StateIndexer(ob_space, grid_size)
        entries = self.states.num_states * int(ac_space.n)
        if entries > MAX_TABLE_ENTRIES:
            raise RLBaseError(f"a Q-table for {ob_space} with grid_size={grid_size} would "
                              f"have {entries} entries (at most {MAX_TABLE_ENTRIES}); use a "
                              "smaller grid_size or dqn")
        self.q_table = np.zeros((self.states.num_states, int(ac_space.n)), np.float64)
        self.rng = np.random.default_rng(seed)
        self.epsilon = 0.0
        self.num_timesteps = 0
        self.hyperparameters = dict(hyperparameters or {})

    def greedy(self, rows: np.ndarray) -> np.ndarray:
        """The best action of each row, ties broken at random (an untried table is not
        biased towards action 0)."""
        q = self.q_table[rows]
        best = q == q.max(axis=1, keepdims=True)
        scores = self.rng.random(q.shape) * best
        return scores.argmax(axis=1)

    def act(self, rows: np.ndarray, epsilon: float) -> np.ndarray:
        actions = self.greedy(rows)
        explore = self.rng.random(len(rows)) < epsilon
        if explore.any():
            actions = np.where(explore, self.rng.integers(0, self.q_table.shape[1], len(rows)),
                               actions)
        return actions

    def step(self, obs: np.ndarray, state: Any = None, mask: Any = None,
             deterministic: bool = False) -> tuple[np.ndarray, np.ndarray, Any, None]:
        """(actions, Q-value of the greedy action, state, None); epsilon-greedy with the
        current ``model.epsilon`` (ties broken at random) unless deterministic."""
        rows = self.states(obs)
        if deterministic:  # the same observation always gets the same action (lowest on ties)
            actions = self.q_table[rows].argmax(axis=1)
        else:
            actions = self.act(rows, self.epsilon)
        values = self.q_table[rows].max(axis=1)
        return actions + int(self.ac_space.start), values, state, None

    def initial_state(self, batch: int) -> np.ndarray:
        return np.zeros((batch, 0), np.float32)

    def update(self, rows: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
               next_rows: np.ndarray, terminated: np.ndarray, lr: float, gamma: float) -> None:
        """One Q-learning step per transition, in order (envs may share a state)."""
        q = self.q_table
        for s, a, r, s2, term in zip(rows, actions, rewards, next_rows, terminated):
            target = r if term else r + gamma * q[s2].max()
            q[s, a] += lr * (target - q[s, a])

    def save(self, path: str, extra_arrays: dict[str, np.ndarray] | None = None,
             extra_metadata: dict[str, Any] | None = None) -> None:
        """Write the Q-table and metadata in rlbase's model-file format (atomically);
        checkpoints add their own arrays and metadata."""
        metadata = {"algorithm": ALGORITHM, "observation_space": space_to_json(self.ob_space),
                    "action_space": space_to_json(self.ac_space), "grid_size": self.grid_size,
                    "hyperparameters": self.hyperparameters,
                    "num_timesteps": int(self.num_timesteps), **(extra_metadata or {})}
        save_file(path, metadata, {"q_table": self.q_table, **(extra_arrays or {})})

    def load(self, path: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Load a file written by :meth:`save` for the same spaces and grid; returns its
        metadata and arrays."""
        metadata, arrays, _ = load_file(path)
        if metadata.get("algorithm") != ALGORITHM:
            raise RLBaseError(f"model file {path} holds a '{metadata.get('algorithm')}' "
                              f"model, not '{ALGORITHM}'")
        check_spaces(metadata, self.ob_space, self.ac_space)
        table = arrays.get("q_table")
        if table is None or table.shape != self.q_table.shape:
            raise RLBaseError(f"model file {path}: its Q-table has shape "
                              f"{None if table is None else table.shape}, this env needs "
                              f"{self.q_table.shape} (grid_size={self.grid_size})")
        self.q_table = table.astype(np.float64)
        self.num_timesteps = int(metadata.get("num_timesteps", 0))
        return metadata, arrays


def learn(env: VecEnv | Any, total_timesteps: int = 100000, network: Any = None,
          seed: int | None = None, lr: float | Callable[[float], float] = 0.1,
          lrschedule: str = "constant", gamma: float = 0.99, epsilon: float = 1.0,
          epsilon_decay: float | None = None, epsilon_min: float = 0.01, grid_size: int = 20,
          print_freq: int | None = 1000, load_path: str | None = None,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          checkpoint_interval: int = 0, checkpoint_path: str | None = None,
          resume: bool = False) -> Model:
    """Train a Q-table with one-step Q-learning and return the :class:`Model`.

    env: a VecEnv with Discrete actions (a gymnasium env or an env id is wrapped).
    total_timesteps: env steps to train for, summed over envs.
    network: ignored (the command line passes one to every algorithm).
    seed: seed of the envs, the exploration and tie-breaking (None: unseeded).
    lr: step size of the update ``Q += lr * (target - Q)``, or a function of the fraction of
        training remaining (1 -> 0).
    lrschedule: how a float lr changes: constant, linear (to 0 at the end: averages out the
        noise of stochastic envs such as slippery FrozenLake), middle_drop, ...
    gamma: discount factor.
    epsilon: initial exploration rate of the epsilon-greedy behaviour.
    epsilon_decay: epsilon is multiplied by this after every env step (None: the rate that
        reaches epsilon_min half-way through training). Per step, not per episode, so that
        envs with long early episodes (Taxi: 200 steps) still stop exploring in time.
    epsilon_min: epsilon never falls below this.
    grid_size: bins per dimension of a Box observation.
    print_freq: log every this many finished episodes (None: never).
    load_path: start from this saved Q-table.
    callback: called after every vector env step as ``callback(model, info)``; False stops.
    checkpoint_interval: every this many env steps write a resumable checkpoint (Q-table,
        exploration rate, counters, RNG states) to checkpoint_path (None: <log dir>/checkpoints)
        as checkpoint_<steps>.zip (0: never).
    checkpoint_path: the checkpoints' folder.
    resume: continue from the newest of those checkpoints (total_timesteps counts the whole
        run, including the steps done before the checkpoint).
    """
    hyperparameters = {k: v if v is None or isinstance(v, (int, float, str)) else repr(v)
                       for k, v in locals().items()
                       if k in ("lr", "lrschedule", "gamma", "epsilon", "epsilon_decay",
                                "epsilon_min", "grid_size", "total_timesteps", "seed")}
    if epsilon_decay is None:
        epsilon_decay = (min(epsilon_min / epsilon, 1.0) if epsilon > 0 else 1.0) ** (
            2.0 / max(total_timesteps, 1))
    lr_fn = make_schedule(lr if callable(lr) else lrschedule, None if callable(lr) else lr)
    if not callable(lr) and not 0 < lr <= 1 or not 0 <= gamma <= 1 or \
            not 0 < epsilon_decay <= 1:
        raise RLBaseError(f"need 0 < lr <= 1, 0 <= gamma <= 1 and 0 < epsilon_decay <= 1, got "
                          f"lr={lr!r}, gamma={gamma!r}, epsilon_decay={epsilon_decay!r}")
    env = as_vec_env(env, seed)
    model = Model(env.observation_space, env.action_space, grid_size, seed, hyperparameters)
    if load_path is not None:
        model.load(load_path)
    start = int(env.action_space.start)
    ep_returns: deque[float] = deque(maxlen=100)
    running = np.zeros(env.num_envs)
    episodes, t, tstart = 0, 0, time.perf_counter()
    obs = env.reset()
    model.epsilon = epsilon
    checkpointer = Checkpointer(ALGORITHM, checkpoint_path, checkpoint_interval)
    resumed = checkpointer.restore(model) if resume else None
    if resumed is not None:
        loop, _ = resumed
        t, episodes, model.epsilon = model.num_timesteps, int(loop["episodes"]), loop["epsilon"]
        ep_returns.extend(loop["ep_returns"])
        set_generator_state(model.rng, loop["rng"])
    while t < total_timesteps:
        rows = model.states(obs)
        actions = model.act(rows, model.epsilon)
        new_obs, rewards, terminated, truncated, infos = env.step(actions + start)
        done = np.logical_or(terminated, truncated)
        next_rows = model.states(new_obs)
        for i in np.flatnonzero(done):  # bootstrap a truncation from the true last state
            final = infos[i].get("final_observation")
            if final is not None:
                next_rows[i] = model.states(np.asarray(final)[None])[0]
        model.update(rows, actions, rewards, next_rows, terminated,
                     lr_fn(1.0 - t / total_timesteps), gamma)
        obs = new_obs
        t += env.num_envs
        model.num_timesteps += env.num_envs
        model.epsilon = max(epsilon_min, model.epsilon * epsilon_decay ** env.num_envs)
        running += rewards
        for i in np.flatnonzero(done):
            episode = infos[i].get("episode")
            ep_returns.append(float(episode["r"]) if episode is not None else running[i])
            running[i] = 0.0
            episodes += 1
            if print_freq and episodes % print_freq == 0:
                logger.record_tabular("time/total_timesteps", t)
                logger.record_tabular("time/episodes", episodes)
                logger.record_tabular("time/fps", int(t / (time.perf_counter() - tstart)))
                logger.record_tabular("rollout/ep_rew_mean", safemean(ep_returns))
                logger.record_tabular("rollout/exploration_rate", model.epsilon)
                logger.dump_tabular()
        stop = False
        if callback is not None:
            info = {"num_timesteps": model.num_timesteps, "total_timesteps": total_timesteps,
                    "episodes": episodes, "exploration": model.epsilon}
            stop = callback(model, info) is False
        stop = stop or stop_requested()
        if checkpointer.due(model.num_timesteps) or (stop and checkpointer.active):
            checkpointer.save(model, {"episodes": episodes, "epsilon": model.epsilon,
                                      "ep_returns": list(ep_returns),
                                      "rng": generator_state(model.rng)})
        if stop:
            break
    return model
