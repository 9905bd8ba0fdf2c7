"""Learning-curve plots and episode videos of a trained agent (the CLI's --save_plots and
--save_videos, and ``rlbase plot``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlbase.common.envs.make import make_vec_env
from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env import VecVideoRecorder


def save_plots(log_dir: str, path: str | None = None, title: str | None = None,
               **kwargs: Any) -> str:
    """Plot the learning curves of every run under ``log_dir`` (monitor or progress files) to
    a PNG (default ``<log_dir>/learning_curves.png``), as :func:`plot_runs` draws them."""
    # Optional: needs pandas (the plot extra).
    from rlbase.common.logs.plot_util import load_results

    if not os.path.isdir(log_dir):
        raise RLBaseError(f"save_plots: log folder {log_dir} does not exist")
    results = load_results(log_dir)
    if not results:
        raise RLBaseError(f"save_plots: no monitor.csv or progress.csv under {log_dir}")
    return plot_runs(results, path or os.path.join(log_dir, "learning_curves.png"), title,
                     **kwargs)


def plot_runs(results: Sequence[Any], path: str, title: str | None = None,
              **kwargs: Any) -> str:
    """Learning curves of runs (plot_util ``Result`` objects) to a PNG; returns its path. One run:
    its episode returns (faint), their smoothed curve and its evaluations, titled with its
    algorithm, env and seed. Several: ``plot_util.plot_results`` with a panel per env and one
    curve per algorithm, its seeds averaged with their spread shaded (kwargs go to it)."""
    # Optional: needs pandas (the plot extra).
    from rlbase.common.logs import curves
    from rlbase.common.logs.plot_util import (
        algorithm_group_fn,
        env_split_fn,
        learning_curve_figure,
        save_plot,
    )

    out = os.fspath(path)
    if len(results) == 1 and not kwargs:
        (result,) = results
        fig = learning_curve_figure(result, algorithm_group_fn(result), title)
        return curves.save_figure(fig, out)
    if title is not None:
        kwargs["title"] = title
    kwargs.setdefault("split_fn", env_split_fn)
    kwargs.setdefault("group_fn", algorithm_group_fn)
    kwargs.setdefault("average_group", True)
    return save_plot(results, out, **kwargs)


def save_videos(model: Any, env_id: str, n_episodes: int = 1, video_folder: str = "videos",
                deterministic: bool = True, seed: int | None = None,
                max_frames: int = 10000, env_kwargs: dict[str, Any] | None = None
                ) -> list[str]:
    """Record ``n_episodes`` of ``model`` playing ``env_id`` as H.264 mp4 files in
    ``video_folder`` (one per episode); returns their paths.

    model: an algorithm's model or a model class instance (``step``, ``initial_states``,
        ``normalized_like_training``): observations are normalized as in its training.
    """
    if isinstance(n_episodes, bool) or not isinstance(n_episodes, int) or n_episodes < 1:
        raise RLBaseError(f"n_episodes must be a positive integer, got {n_episodes!r}")
    venv = make_vec_env(env_id, num_env=1, seed=seed,
                        env_kwargs={**(env_kwargs or {}), "render_mode": "rgb_array"},
                        force_dummy=True, monitor_dir=None)
    # One clip per episode: a clip starts at each reset and is long enough to hold it.
    recorder = VecVideoRecorder(venv, video_folder, lambda step: True, video_length=max_frames)
    env = model.normalized_like_training(recorder)
    try:
        obs, state = env.reset(), model.initial_states(1)
        mask = np.ones(1, np.float32)
        episodes = 0
        while episodes < n_episodes:
            actions, _, state, _ = model.step(obs, state, mask, deterministic=deterministic)
            obs, _, terminated, truncated, _ = env.step(actions)
            done = bool(terminated[0] or truncated[0])
            mask = np.array([float(done)], np.float32)
            if done:
                episodes += 1
                recorder.end_clip()  # the next step starts the next episode's clip
    finally:
        env.close()
    return list(recorder.video_paths)
