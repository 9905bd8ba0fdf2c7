"""The one way rlbase draws a learning curve, shared by every plot it makes (the CLI's
--save_plots, ``rlbase plot``, ``plot_util.plot_results``, the bench report, rlib's
``save_plots``).

A curve is one algorithm on one env. Each run's raw points (one per episode) are drawn faint;
over them, one run's moving average, or several runs' (seeds') smoothed curves averaged on a
common x grid with a shaded band of their spread across runs. The legend says which: "(mean
of 3 seeds)", "(±1 std across seeds)". Figures are built without pyplot (Agg), so no display
is ever needed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rlbase.common.errors import RLBaseError

X_STEPS = "environment steps"
Y_RETURN = "episode return (sum of env rewards)"
Y_LENGTH = "episode length (env steps)"
COLORS = (
    "tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple",
    "tab:brown", "tab:pink", "tab:gray", "tab:olive", "tab:cyan",
)
RAW_ALPHA = 0.25  # raw points: visible, yet under the curve read from them
SMOOTH_RADIUS = 10  # episodes each side of the moving average (a 21-episode window)
GRID_POINTS = 512  # the common x grid seeds are averaged on (Baselines' resampling size)


@dataclass(frozen=True)
class Series:
    """One run's points on a curve.

    :param x: increasing x (environment steps).
    :param y: the raw values (each episode's return).
    :param smoothed: ``y`` smoothed at each ``x``; ``None`` when ``y`` is a summary already
        (a progress column such as ``rollout/ep_rew_mean``), drawn as the curve itself.
    :param seed: the run's seed when known (the legend then counts seeds, else runs).
    """

    x: np.ndarray
    y: np.ndarray
    smoothed: np.ndarray | None = None
    seed: Any = None

    @property
    def curve(self) -> np.ndarray:
        """What the run's line shows: the smoothed values, or the summary itself."""
        return self.y if self.smoothed is None else self.smoothed


def smooth(y: npt.ArrayLike, radius: int = SMOOTH_RADIUS, mode: str = "two_sided",
           valid_only: bool = False) -> np.ndarray:
    """Moving average of ``y``; near the ends it averages over the points that exist.

    :param radius: points on each side (``two_sided``) or before (``causal``) each point.
    :param mode: ``two_sided`` (centred window) or ``causal`` (past values only).
    :param valid_only: put NaN where the window does not fit entirely.
    """
    if mode not in ("two_sided", "causal"):
        raise RLBaseError(f"smooth mode {mode!r} is not allowed; valid modes: two_sided, causal")
    values = np.asarray(y, dtype=np.float64)
    n = len(values)
    if radius <= 0 or n == 0:
        return values.copy()
    # Prefix sums give every window's sum in O(n).
    csum = np.concatenate([[0.0], np.cumsum(values)])
    idx = np.arange(n)
    lo = np.maximum(idx - radius, 0)
    hi = np.minimum(idx + radius + 1, n) if mode == "two_sided" else idx + 1
    out = (csum[hi] - csum[lo]) / (hi - lo)
    if valid_only:
        out[:radius] = np.nan
        if mode == "two_sided":
            out[n - radius:] = np.nan
    return out


def episode_series(x: npt.ArrayLike, y: npt.ArrayLike, seed: Any = None,
                   radius: int = SMOOTH_RADIUS) -> Series:
    """A run's episodes (x: the step each ended at, y: its return) with their moving average."""
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return Series(xs, ys, smooth(ys, radius), seed)


def new_figure(nrows: int = 1, ncols: int = 1, figsize: tuple[float, float] | None = None,
               use_pyplot: bool = False) -> tuple[Any, np.ndarray]:
    """A figure and its 2-D array of axes. ``use_pyplot=False`` (the default) builds a bare
    Agg figure that never touches a display; True goes through pyplot (notebooks)."""
    figsize = figsize or (8.0 * ncols, 5.0 * nrows)
    if use_pyplot:
        import matplotlib.pyplot as plt  # optional: the plot extra

        fig, axarr = plt.subplots(nrows, ncols, squeeze=False, figsize=figsize)
        return fig, axarr
    try:  # optional: the plot extra
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise RLBaseError("plots need matplotlib: pip install 'rlbase[plot]'") from None
    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def count_label(runs: Sequence[Series]) -> str:
    """``3 seeds`` when every run names a distinct seed, else ``3 runs``."""
    seeds = [r.seed for r in runs]
    known = None not in seeds and len(set(map(str, seeds))) == len(seeds)
    return f"{len(runs)} {'seed' if known else 'run'}{'s' if len(runs) != 1 else ''}"


def draw_runs(ax: Any, runs: Sequence[Series], name: str, color: str, *,
              points: str = "episodes", grid_points: int = GRID_POINTS, shaded_std: bool = True,
              shaded_err: bool = False, raw: bool = True) -> None:
    """One curve (``name``: an algorithm) from one or more runs (its seeds) on ``ax``.

    One run: its raw points faint, their smoothed curve over them. Several: each run's raw
    points faint, and the mean of their smoothed curves on ``grid_points`` x values of the
    range every run covers, shaded by ±1 std (``shaded_std``) and/or ±1 standard error
    (``shaded_err``) across runs. ``points`` names what a raw point is, for the legend.
    """
    runs = [r for r in runs if len(r.x)]
    if not runs:
        return
    if raw:
        for i, run in enumerate(r for r in runs if r.smoothed is not None):
            ax.plot(run.x, run.y, color=color, alpha=RAW_ALPHA, linewidth=0.8,
                    label=f"{name} ({points})" if i == 0 else None)
    if len(runs) == 1:
        (run,) = runs
        single = f"{name} (smoothed)" if run.smoothed is not None else name
        ax.plot(run.x, run.curve, color=color, label=single)
        return
    grid, curves = common_grid(runs, grid_points)
    mean = curves.mean(axis=0)
    std = curves.std(axis=0)
    many = count_label(runs)
    ax.plot(grid, mean, color=color, label=f"{name} (mean of {many})")
    across = many.split()[1]
    if shaded_err:
        err = std / np.sqrt(len(runs))
        ax.fill_between(grid, mean - err, mean + err, color=color, alpha=0.4, linewidth=0,
                        label=f"{name} (±1 s.e. across {across})")
    if shaded_std:
        ax.fill_between(grid, mean - std, mean + std, color=color, alpha=0.2, linewidth=0,
                        label=f"{name} (±1 std across {across})")


def common_grid(runs: Sequence[Series], grid_points: int = GRID_POINTS
                ) -> tuple[np.ndarray, np.ndarray]:
    """The runs' curves linearly interpolated on one x grid: the grid and one row per run.
    The grid spans the x range every run covers (all of them when they do not overlap:
    then each run holds its nearest end value outside its own range)."""
    low, high = max(r.x[0] for r in runs), min(r.x[-1] for r in runs)
    if high <= low:
        low, high = min(r.x[0] for r in runs), max(r.x[-1] for r in runs)
    grid = np.linspace(low, high, max(2, int(grid_points)))
    return grid, np.stack([np.interp(grid, r.x, r.curve) for r in runs])


def draw_binned(ax: Any, x: npt.ArrayLike, y: npt.ArrayLike, bins: npt.ArrayLike, name: str,
                color: str, *, points: str = "episodes", per: str = "iteration") -> None:
    """Many points per iteration (ES: a generation's perturbed episodes): each point faint at
    its own x, and per bin (``bins``: each point's iteration) the mean at the bin's last x,
    shaded by ±1 std within the bin."""
    xs, ys, keys = (np.asarray(a, dtype=np.float64) for a in (x, y, bins))
    if not len(xs):
        return
    ax.scatter(xs, ys, s=6, color=color, alpha=RAW_ALPHA, linewidths=0,
               label=f"{name} ({points})")
    order = np.unique(keys)
    at = np.array([xs[keys == k].max() for k in order])
    mean = np.array([ys[keys == k].mean() for k in order])
    std = np.array([ys[keys == k].std() for k in order])
    ax.plot(at, mean, color=color, marker="o" if len(order) < 3 else None, markersize=3,
            label=f"{name} (mean per {per})")
    ax.fill_between(at, mean - std, mean + std, color=color, alpha=0.2, linewidth=0,
                    label=f"{name} (±1 std within each {per})")


def label_axes(ax: Any, xlabel: str, ylabel: str, title: str | None,
               legend: bool = True, legend_outside: bool = False) -> None:
    """Axis labels (with units), the title, and the legend when anything is labelled."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if legend and ax.get_legend_handles_labels()[1]:
        placement = {"loc": "upper left", "bbox_to_anchor": (1, 1)} if legend_outside else {}
        ax.legend(fontsize="small", **placement)


def run_title(algorithms: Sequence[str], envs: Sequence[str], extra: str = "") -> str:
    """``ppo on CartPole-v1`` (``a2c, ppo on CartPole-v1``; the algorithms alone when no env
    is known), with ``extra`` (``seed 0``) after a comma."""
    algs = ", ".join(dict.fromkeys(str(a) for a in algorithms if a)) or "runs"
    names = ", ".join(dict.fromkeys(str(e) for e in envs if e))
    title = f"{algs} on {names}" if names else algs
    return f"{title}, {extra}" if extra else title


def save_figure(fig: Any, path: str | os.PathLike[str], dpi: int = 100) -> str:
    """Write ``fig`` (PNG unless the extension says otherwise), laid out tight; returns the
    path. A pyplot figure is closed after."""
    path = os.fspath(path)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    if fig.canvas.manager is not None:  # made through pyplot: free it
        import matplotlib.pyplot as plt  # optional: the plot extra

        plt.close(fig)
    return path
