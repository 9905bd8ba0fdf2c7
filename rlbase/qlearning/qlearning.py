"""Tabular Q-learning (Watkins) for Discrete actions, on Discrete or discretized Box states."""

from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

from rlbase.common.learning import Alias, start_learning
from rlbase.common.loop import LoopOptions, TrainingLoop
from rlbase.common.schedules import make_schedule
from rlbase.common.transitions import final_observations, target_dones
from rlbase.common.vec_env import VecEnv
from rlbase.qlearning.model import Model, build_model

ALGORITHM = "qlearning"


def _log_interval(value: Any, arguments: dict[str, Any], num_envs: int) -> int:
    # print_freq=None (or 0) never logged: now a row is written only at the end.
    return int(value) if value else sys.maxsize


ALIASES = {"print_freq": Alias("log_interval", _log_interval)}


def learn(network: Any, env: VecEnv | Any, total_timesteps: int = 100000,
          seed: int | None = None, lr: float | Callable[[float], float] = 0.1,
          lrschedule: str = "constant", gamma: float = 0.99, epsilon: float = 1.0,
          epsilon_decay: float | None = None, epsilon_min: float = 0.01, grid_size: int = 20,
          log_interval: int = 1000, eval_env: VecEnv | Any | None = None, eval_freq: int = 0,
          eval_episodes: int = 5,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_interval: int = 0,
          checkpoint_path: str | None = None, resume: bool = False,
          **network_kwargs: Any) -> Model:
    """Train a Q-table with one-step Q-learning and return the :class:`Model`.

    network: ignored: a Q-table has no network (None or 'tabular'; the command line passes
        one to every algorithm).
    env: a VecEnv with Discrete actions (a gymnasium env or an env id is wrapped).
    total_timesteps: env steps to train for, summed over envs.
    seed: seed of the envs, the exploration and tie-breaking (None: unseeded).
    lr: step size of the update ``Q += lr * (target - Q)``, or a function of the fraction of
        training remaining (1 -> 0).
    lrschedule: how a float lr changes: constant, linear (to 0 at the end: averages out the
        noise of stochastic envs such as slippery FrozenLake), middle_drop, ...
    gamma: discount factor (1: a time-limit truncation ends the return; see
        rlbase.common.transitions).
    epsilon: initial exploration rate of the epsilon-greedy behaviour.
    epsilon_decay: epsilon is multiplied by this after every env step (None: the rate that
        reaches epsilon_min half-way through training). Per step, not per episode, so that
        envs with long early episodes (Taxi: 200 steps) still stop exploring in time.
    epsilon_min: epsilon never falls below this.
    grid_size: bins per dimension of a Box observation.
    log_interval: log every this many finished episodes.
    eval_env: an env (or env id, seeded with seed + 1000) to evaluate the greedy policy on.
    eval_freq: evaluate every this many env steps (0: at every log row when eval_env is
        given); logged as eval/mean_reward, the best model written to
        <log dir>/best_model.zip.
    eval_episodes: episodes per evaluation.
    callback: called after every vector env step as ``callback(model, info)``; returning
        False stops.
    load_path: continue from this saved Q-table (its grid_size and exploration rate are
        used).
    checkpoint_interval: write a resumable checkpoint (Q-table, exploration rate, counters,
        generators) every this many env steps (0: never).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints).
    resume: continue from the newest checkpoint in checkpoint_path (total_timesteps counts
        the whole run, including the steps done before the checkpoint).
    **network_kwargs: none are taken (a Q-table has no network); deprecated spellings
        (print_freq) arrive here.
    """
    model, env, options = start_learning(ALGORITHM, build_model, locals(), ALIASES,
                                         architecture=Model.architecture)
    return train(model, env, total_timesteps, options)


def default_decay(epsilon: float, epsilon_min: float, steps: int) -> float:
    """The per-step factor that takes ``epsilon`` to ``epsilon_min`` in half of ``steps``."""
    ratio = min(epsilon_min / epsilon, 1.0) if epsilon > 0 else 1.0
    return ratio ** (2.0 / max(steps, 1))


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run Q-learning on ``model`` for ``total_timesteps`` more env steps (with ``resume``: up
    to that many in all), continuing from the model's exploration rate."""
    hp = model.hyperparameters
    loop = TrainingLoop(model, env, total_timesteps, options, log_unit="episodes",
                        seed=hp.get("seed"))
    decay = hp.get("epsilon_decay") or default_decay(hp["epsilon"], hp["epsilon_min"],
                                                     loop.target - loop.start)
    lr = hp["lr"]
    lr_fn = make_schedule(lr if callable(lr) else hp["lrschedule"], None if callable(lr) else lr)
    gamma, num_envs, start = hp["gamma"], env.num_envs, model.action_start
    obs = env.reset()
    while loop.running():
        rows = model.states(obs)
        actions = model.act(rows, model.epsilon)
        new_obs, rewards, terminated, truncated, infos = env.step(actions + start)
        loop.episodes.update(infos)
        done = np.logical_or(terminated, truncated)
        # A truncation bootstraps from the true last state (unless gamma = 1).
        next_rows = model.states(final_observations(new_obs, done, infos))
        current_lr = lr_fn(loop.progress_remaining)
        model.update(rows, actions, rewards, next_rows,
                     target_dones(terminated, truncated, gamma), current_lr, gamma)
        obs = new_obs
        model.epsilon = max(hp["epsilon_min"], model.epsilon * decay ** num_envs)
        if loop.end_iteration(num_envs, {"learning_rate": current_lr,
                                      "rollout/exploration_rate": model.epsilon}):
            break
    return model
