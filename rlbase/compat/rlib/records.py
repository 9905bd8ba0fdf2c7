"""What an rlib run writes besides its models: the hyperparameters, the git state of the
working directory, and the training and test curves."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlbase.common.errors import RLBaseError


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
                tests: Sequence[Sequence[float]]) -> list[str]:
    """PNGs in ``folder``: the training episodes' returns and lengths against env steps, and
    the test scores (mean +- std) against iterations of ``unit``; returns their paths."""
    try:  # matplotlib: the plot extra
        import matplotlib
    except ImportError:
        raise RLBaseError("save_plots needs matplotlib: pip install 'rlbase[plot]'") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"), which must precede it

    os.makedirs(folder, exist_ok=True)
    paths = []
    rows = np.asarray(train, np.float64).reshape(-1, 3)  # (env steps, return, length)
    for column, name, label in ((1, "train_rewards.png", "training episode return"),
                                (2, "episode_lengths.png", "training episode length")):
        fig, ax = plt.subplots()
        ax.plot(rows[:, 0], rows[:, column], c="blue")
        ax.set_xlabel("env steps")
        ax.set_ylabel(label)
        paths.append(os.path.join(folder, name))
        fig.savefig(paths[-1], bbox_inches="tight")
        plt.close(fig)
    rows = np.asarray(tests, np.float64).reshape(-1, 3)  # (iteration, mean, std)
    fig, ax = plt.subplots()
    ax.plot(rows[:, 0], rows[:, 1], c="red", label="test return")
    ax.fill_between(rows[:, 0], rows[:, 1] - rows[:, 2], rows[:, 1] + rows[:, 2], color="red",
                    alpha=0.2)
    ax.set_xlabel(unit)
    ax.set_ylabel("return")
    ax.legend()
    paths.append(os.path.join(folder, "rewards.png"))
    fig.savefig(paths[-1], bbox_inches="tight")
    plt.close(fig)
    return paths
