"""Behaviour cloning: record expert trajectories (read back and fitted by
:mod:`rlbase.compat.sb3.pretraining.expert_dataset`)."""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common import nested
from rlbase.common.buffers.expert_data import KEYS, LEAF_PREFIX
from rlbase.common.errors import RLBaseError
from rlbase.compat.sb3.base_class import BaseRLModel


def generate_expert_traj(model_or_callable: Any, env: gym.Env | str, n_episodes: int = 10,
                         save_path: str | None = None, deterministic: bool = True,
                         seed: int | None = None) -> dict[str, np.ndarray]:
    """Play ``n_episodes`` with an expert and return (and save as ``save_path`` .npz) arrays
    ``obs``, ``actions``, ``rewards``, ``episode_starts`` (one per step) and
    ``episode_returns`` (one per episode). Observations of a Dict or Tuple space are stored
    one array per leaf, named ``obs/<key>`` (``obs/state/position`` when nested deeper).

    model_or_callable: a model class instance (its deterministic predict; a model trained on
        normalized observations sees them normalized with its saved statistics, while the
        env's own observations are recorded), or ``obs -> action``.
    env: a gymnasium env (not vectorized) or an env id.
    seed: seed of the first reset (later episodes continue its random stream).
    """
    if isinstance(n_episodes, bool) or not isinstance(n_episodes, int) or n_episodes < 1:
        raise RLBaseError(f"n_episodes must be a positive integer, got {n_episodes!r}")
    if isinstance(env, str):
        env = gym.make(env)
    if not isinstance(env, gym.Env):
        raise RLBaseError(f"generate_expert_traj needs a gymnasium env or an env id, got "
                          f"{type(env).__name__} (use one env, not a VecEnv)")
    if isinstance(model_or_callable, BaseRLModel):
        expert = model_or_callable
        normalization = expert.model.normalization if expert.model is not None else None

        def policy(obs: np.ndarray) -> Any:
            seen = obs if normalization is None else normalization.normalize_obs(obs)
            return expert.predict(seen, deterministic=deterministic)[0]
    elif hasattr(model_or_callable, "predict"):  # another library's model: SB3's predict
        def policy(obs: np.ndarray) -> Any:
            return model_or_callable.predict(obs, deterministic=deterministic)[0]
    elif callable(model_or_callable):
        policy = model_or_callable
    else:
        raise RLBaseError(f"expert must be a model or a callable, got "
                          f"{type(model_or_callable).__name__}")
    out: dict[str, list] = {k: [] for k in KEYS}
    obs, _ = env.reset(seed=seed)
    for _ in range(n_episodes):
        start, total, done = True, 0.0, False
        while not done:
            action = policy(obs)
            out["obs"].append(obs)
            out["actions"].append(action)
            out["episode_starts"].append(start)
            obs, reward, terminated, truncated, _ = env.step(action)
            out["rewards"].append(reward)
            total += float(reward)
            start, done = False, terminated or truncated
        out["episode_returns"].append(total)
        obs, _ = env.reset()
    observations = out.pop("obs")
    arrays = {k: np.asarray(v) for k, v in out.items()}
    space = env.observation_space
    if nested.is_nested(space):
        leaves = nested.flatten(space, nested.stack(space, observations))
        arrays.update({LEAF_PREFIX + name: leaf
                       for name, leaf in zip(nested.leaf_names(space), leaves)})
    else:
        arrays["obs"] = np.asarray(observations)
    arrays["rewards"] = arrays["rewards"].astype(np.float32)
    arrays["episode_starts"] = arrays["episode_starts"].astype(bool)
    if save_path is not None:
        path = save_path if save_path.endswith(".npz") else save_path + ".npz"
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        np.savez(path, **arrays)  # type: ignore[arg-type]  # numpy's stub types savez's kwargs
    return arrays
