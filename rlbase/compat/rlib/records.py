"""What an rlib run writes besides its models: the hyperparameters, the git state of the
working directory, and the training and test curves."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlbase.common.logs import curves


def jsonable(data: Any) -> Any:
    """``data`` as JSON holds it, at every depth (tuples as lists; values JSON cannot hold,
    such as functions and schedules, as their repr)."""
    return json.loads(json.dumps(data, default=repr))


def git_state(directory: str | None = None) -> dict[str, Any]:
    """The commit and whether the work tree differs from it, of the git repository holding
    ``directory`` (default: the working directory); ``{"git": "not a git repository"}``
    outside one (or without git)."""
    cwd = directory or os.getcwd()

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                              check=True, timeout=30).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain"))
    except (OSError, subprocess.SubprocessError):
        return {"git": "not a git repository", "directory": os.path.abspath(cwd)}
    return {"commit": commit, "dirty": dirty, "directory": os.path.abspath(cwd)}


def write_json(path: str, data: dict[str, Any]) -> None:
    """``data`` as indented JSON (values JSON cannot hold written as their repr)."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True, default=repr)
        f.write("\n")


def plot_curves(folder: str, unit: str, train: Sequence[Sequence[float]],
                tests: Sequence[Sequence[float]], *, name: str, title: str,
                iterations: Sequence[int] = (), per_iteration: bool = False,
                test_episodes: int = 1) -> list[str]:
    """PNGs in ``folder``, drawn by :mod:`rlbase.common.logs.curves`; returns their paths.

    ``train_rewards.png`` and ``episode_lengths.png``: every training episode (``train``
    rows: env steps at its end, return, length) faint at its own env step, under their moving
    average, or with ``per_iteration`` (ES: a generation's many episodes) under each
    iteration's mean and ±1 std (``iterations``: each episode's iteration; rows recorded
    before rlbase kept them are grouped by their env step). ``rewards.png``: each test's mean
    return over its ``test_episodes`` episodes, ±1 std shaded, against iterations of ``unit``.
    ``name`` (the algorithm) labels the curves; ``title`` names the algorithm and env.
    """
    os.makedirs(folder, exist_ok=True)
    paths = []
    rows = np.asarray(train, np.float64).reshape(-1, 3)  # (env steps, return, length)
    bins = iterations if len(iterations) == len(rows) else rows[:, 0]
    per = unit[:-1] if unit.endswith("s") else unit
    for column, filename, ylabel in ((1, "train_rewards.png", curves.Y_RETURN),
                                     (2, "episode_lengths.png", curves.Y_LENGTH)):
        fig, axarr = curves.new_figure()
        ax = axarr[0, 0]
        if per_iteration:
            curves.draw_binned(ax, rows[:, 0], rows[:, column], bins, name, curves.COLORS[0],
                               per=per)
        else:
            curves.draw_runs(ax, [curves.episode_series(rows[:, 0], rows[:, column])], name,
                             curves.COLORS[0])
        curves.label_axes(ax, curves.X_STEPS, f"training {ylabel}", title)
        paths.append(curves.save_figure(fig, os.path.join(folder, filename)))
    rows = np.asarray(tests, np.float64).reshape(-1, 3)  # (iteration, mean, std)
    fig, axarr = curves.new_figure()
    ax = axarr[0, 0]
    color = curves.COLORS[1]
    count = f"{test_episodes} episode{'s' if test_episodes != 1 else ''}"
    ax.plot(rows[:, 0], rows[:, 1], color=color, marker="o", markersize=3,
            label=f"{name} (test: mean of {count}, greedy)")
    ax.fill_between(rows[:, 0], rows[:, 1] - rows[:, 2], rows[:, 1] + rows[:, 2], color=color,
                    alpha=0.2, linewidth=0, label=f"{name} (±1 std over the test's {count})")
    curves.label_axes(ax, f"training {unit}" if unit != "env steps" else curves.X_STEPS,
                      f"test {curves.Y_RETURN}", title)
    paths.append(curves.save_figure(fig, os.path.join(folder, "rewards.png")))
    return paths
