"""Tabular Q-learning (Watkins) for Discrete actions, on Discrete or discretized Box states."""

from __future__ import annotations

from typing import Any

import numpy as np

from rlbase.common.buffers.transitions import final_observations, target_dones
from rlbase.common.loops.learning import config_signature, start_learning
from rlbase.common.loops.signals import EnvWaitInterrupted
from rlbase.common.loops.training_loop import LoopOptions, TrainingLoop
from rlbase.common.schedules import make_schedule
from rlbase.common.vec_env import VecEnv, vec_step
from rlbase.qlearning.config import CONFIG
from rlbase.qlearning.model import Model, build_model

ALGORITHM = "qlearning"


@config_signature(CONFIG, notes={
    "network": "ignored: a Q-table has no network (None or 'tabular'; the command line passes "
               "one to every algorithm)",
    "env": "a VecEnv with Discrete actions (a gymnasium env or an env id is wrapped)",
    "seed": "seed of the envs, the exploration and tie-breaking (None: unseeded)",
    "eval_env": "an env (or env id, seeded with seed + 1000) to evaluate the greedy policy on",
    "callback": "called after every vector env step as callback(model, info); returning False "
                "stops",
    "load_path": "continue from this saved Q-table (its grid_size and exploration rate are "
                 "used)",
    "**network_kwargs": "none are taken (a Q-table has no network); deprecated spellings "
                        "(print_freq, epsilon, ...) arrive here"})
def learn(network: Any, env: VecEnv | Any, total_timesteps: int = 100000,
          seed: int | None = None, **kwargs: Any) -> Model:
    """Train a Q-table with one-step Q-learning and return the :class:`Model`. A checkpoint
    holds the Q-table, the exploration rate, the counters and the generators."""
    model, env, options = start_learning(CONFIG, build_model, network, env, total_timesteps,
                                         seed, kwargs)
    return train(model, env, total_timesteps, options)


def default_decay(initial_eps: float, final_eps: float, steps: int) -> float:
    """The per-step factor that takes ``initial_eps`` to ``final_eps`` in half of ``steps``."""
    ratio = min(final_eps / initial_eps, 1.0) if initial_eps > 0 else 1.0
    return ratio ** (2.0 / max(steps, 1))


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run Q-learning on ``model`` for ``total_timesteps`` more env steps (with ``resume``: up
    to that many in all), continuing from the model's exploration rate."""
    config = model.config
    loop = TrainingLoop(model, env, total_timesteps, options, log_unit="episodes",
                        seed=config.seed)
    decay = config.exploration_decay or default_decay(
        config.exploration_initial_eps, config.exploration_final_eps, loop.target - loop.start)
    lr = config.lr
    lr_fn = make_schedule(lr if callable(lr) else config.lrschedule,
                          None if callable(lr) else lr)
    gamma, num_envs, start = config.gamma, env.num_envs, model.action_start
    obs = env.reset()
    while loop.running():
        rows = model.states(obs)
        actions = model.act(rows, model.epsilon)
        try:
            new_obs, rewards, terminated, truncated, infos = vec_step(env, actions + start)
        except EnvWaitInterrupted as exc:  # hung env workers killed on a stop request
            loop.stop_in_env_step(exc)
            break
        loop.episodes.update(infos)
        done = np.logical_or(terminated, truncated)
        # A truncation bootstraps from the true last state (unless gamma = 1).
        next_rows = model.states(final_observations(new_obs, done, infos))
        current_lr = lr_fn(loop.progress_remaining)
        model.update(rows, actions, rewards, next_rows,
                     target_dones(terminated, truncated, gamma), current_lr, gamma)
        obs = new_obs
        model.epsilon = max(config.exploration_final_eps, model.epsilon * decay ** num_envs)
        step = {"new_obs": new_obs, "rewards": rewards, "dones": done, "infos": infos,
                "actions": actions}
        if loop.end_iteration(num_envs, {"learning_rate": current_lr,
                                         "rollout/exploration_rate": model.epsilon},
                              step=step):
            break
    return model
