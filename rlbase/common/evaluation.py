"""Evaluating a trained policy: mean and spread of full-episode returns."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common.vec_env import VecEnv, find_wrapper
from rlbase.common.vec_env.vec_monitor import VecMonitor


def run_episodes(model: Any, env: VecEnv, n_episodes: int, deterministic: bool = True
                 ) -> tuple[list[float], list[int]]:
    """Play ``n_episodes`` full episodes and return their returns and lengths.

    Episodes are shared out evenly over the envs (so short episodes are not over-counted).
    Returns come from the VecMonitor in ``env`` when there is one (the raw, unnormalized
    score), else from the rewards the policy sees.
    model: anything with ``step(obs, state, mask, deterministic)`` and ``initial_state(n)``.
    """
    n = env.num_envs
    targets = np.array([n_episodes // n + (i < n_episodes % n) for i in range(n)])
    counts = np.zeros(n, dtype=int)
    running_r, running_l = np.zeros(n), np.zeros(n, dtype=int)
    returns: list[float] = []
    lengths: list[int] = []
    monitored = find_wrapper(env, VecMonitor) is not None
    obs = env.reset()
    state = model.initial_state(n)
    starts = np.ones(n, dtype=np.float32)
    while (counts < targets).any():
        actions, _, state, _ = model.step(obs, state, starts, deterministic=deterministic)
        if isinstance(env.action_space, gym.spaces.Box):
            actions = np.clip(actions, env.action_space.low, env.action_space.high)
        obs, rewards, terminated, truncated, infos = env.step(actions)
        running_r += rewards
        running_l += 1
        done = terminated | truncated
        for i in np.flatnonzero(done):
            if monitored:
                # The monitor reports whole games: a life lost ends an episode for training
                # but carries no "episode" entry, and is not counted.
                episode = infos[i].get("episode")
                if episode is None:
                    continue
                ret, length = float(episode["r"]), int(episode["l"])
            else:
                ret, length = float(running_r[i]), int(running_l[i])
                running_r[i], running_l[i] = 0.0, 0
            if counts[i] < targets[i]:
                returns.append(ret)
                lengths.append(length)
                counts[i] += 1
        starts = done.astype(np.float32)
    return returns, lengths


def evaluate_policy(model: Any, env: VecEnv, n_eval_episodes: int = 10,
                    deterministic: bool = True) -> tuple[float, float]:
    """Mean and standard deviation of the return over ``n_eval_episodes`` episodes."""
    from rlbase.common.cmd_util import as_vec_env

    returns, _ = run_episodes(model, as_vec_env(env), n_eval_episodes, deterministic)
    return float(np.mean(returns)), float(np.std(returns))
