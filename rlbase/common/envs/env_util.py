"""Stable-Baselines3's env helpers: ``make_vec_env`` (SB3's signature), ``is_wrapped`` and
``unwrap_wrapper``. Baselines' ``make_vec_env(env_id, env_type, num_env, seed, ...)`` stays
in :mod:`rlbase.common.envs.make`; both build on :func:`rlbase.common.envs.make.vectorize`."""

from __future__ import annotations

import os
from typing import Any, Callable

import gymnasium as gym

from rlbase.common.envs.make import VecEnvClass, check_env_id, vectorize
from rlbase.common.envs.monitor import Monitor
from rlbase.common.vec_env import DummyVecEnv, VecEnv

__all__ = ["is_wrapped", "make_vec_env", "unwrap_wrapper"]


def unwrap_wrapper(env: gym.Env, wrapper_class: type[gym.Wrapper]) -> gym.Wrapper | None:
    """The first wrapper of type ``wrapper_class`` around ``env`` (outermost first), or None."""
    current: gym.Env = env
    while isinstance(current, gym.Wrapper):
        if isinstance(current, wrapper_class):
            return current
        current = current.env
    return None


def is_wrapped(env: gym.Env, wrapper_class: type[gym.Wrapper]) -> bool:
    """Whether ``env`` is wrapped in ``wrapper_class``."""
    return unwrap_wrapper(env, wrapper_class) is not None


def make_vec_env(
    env_id: str | Callable[..., gym.Env],
    n_envs: int = 1,
    seed: int | None = None,
    start_index: int = 0,
    monitor_dir: str | os.PathLike[str] | None = None,
    wrapper_class: Callable[..., gym.Env] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    vec_env_cls: VecEnvClass | None = None,
    vec_env_kwargs: dict[str, Any] | None = None,
    monitor_kwargs: dict[str, Any] | None = None,
    wrapper_kwargs: dict[str, Any] | None = None,
) -> VecEnv:
    """``n_envs`` envs, each in a :class:`~rlbase.common.envs.monitor.Monitor`, as one VecEnv.

    :param env_id: a registered env id, or a callable (an env class) returning an env.
    :param seed: env ``i`` has its action space seeded with ``seed + start_index + i`` and is
        reset with ``seed + i`` at the first reset (None: unseeded).
    :param start_index: the rank of the first env (monitor file names, action-space seeds).
    :param monitor_dir: the folder of the monitor files, ``<monitor_dir>/<rank>.monitor.csv``;
        None writes no file (the Monitors still report ``info["episode"]``).
    :param wrapper_class: a wrapper (or function) applied to each env above its Monitor.
    :param vec_env_cls: DummyVecEnv (the default) or SubprocVecEnv.
    :param env_kwargs, vec_env_kwargs, monitor_kwargs, wrapper_kwargs: keyword arguments for
        ``gymnasium.make`` (or the callable), ``vec_env_cls``, Monitor and ``wrapper_class``.

    An env id gets ``render_mode='rgb_array'`` unless ``env_kwargs`` says otherwise or the env
    takes no render mode. Atari ids get no preprocessing here (Baselines' make_vec_env in
    rlbase.common.envs.make applies it).
    """
    if isinstance(env_id, str):
        check_env_id(env_id)
    elif not callable(env_id):
        raise TypeError(f"env_id must be an env id or a callable returning an env, got "
                        f"{type(env_id).__name__}")
    if monitor_dir is not None:
        os.makedirs(monitor_dir, exist_ok=True)
    kwargs, monitor_options = dict(env_kwargs or {}), dict(monitor_kwargs or {})
    wrapper_options = dict(wrapper_kwargs or {})

    def make_one(i: int) -> gym.Env:
        rank = start_index + i
        env = _make(env_id, kwargs)
        if seed is not None:
            env.action_space.seed(seed + rank)  # the env itself is seeded at its first reset
        filename = None if monitor_dir is None else os.path.join(monitor_dir, str(rank))
        env = Monitor(env, filename=filename, **monitor_options)
        return wrapper_class(env, **wrapper_options) if wrapper_class is not None else env

    return vectorize(make_one, n_envs, vec_env_cls or DummyVecEnv, vec_env_kwargs, seed)


def _make(env_id: str | Callable[..., gym.Env], kwargs: dict[str, Any]) -> gym.Env:
    if not isinstance(env_id, str):
        return env_id(**kwargs)
    if "render_mode" in kwargs:
        return gym.make(env_id, **kwargs)
    try:  # frames for VecVideoRecorder, as Stable-Baselines3 sets by default
        return gym.make(env_id, render_mode="rgb_array", **kwargs)
    except TypeError:  # an env whose constructor takes no render_mode
        return gym.make(env_id, **kwargs)
