"""Load training results (monitor and progress files) and plot learning curves.

A result folder holds any of: ``*monitor.csv`` files (one line per episode: return ``r``,
length ``l``, seconds ``t`` since the header's ``t_start``), ``progress.csv`` or
``progress.json`` (the logger's dumps), ``metadata.json``. ``load_results`` finds every such
folder under the given roots; ``plot_results`` draws them, one panel per split and one colour
per group, optionally averaging each group into a mean line with shaded bands.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from rlbase.common.errors import RLBaseError

PathLike = str | os.PathLike[str]


@dataclass
class Result:
    """What one run folder holds.

    :param dirname: the folder.
    :param metadata: ``metadata.json`` merged over the first monitor header (``t_start``,
        ``env_id``...).
    :param progress: the logger's progress table, or ``None``.
    :param monitor: all episodes of the folder's monitor files sorted by time, or ``None``.
    """

    dirname: str
    metadata: dict[str, Any] = field(default_factory=dict)
    progress: pd.DataFrame | None = None
    monitor: pd.DataFrame | None = None


# --- loading ----------------------------------------------------------------------------------


def read_monitor_file(path: str) -> tuple[dict[str, Any], pd.DataFrame]:
    """One monitor file: its ``#{json}`` header and its episode table."""
    with open(path) as f:
        first = f.readline()
        if not first.startswith("#"):
            raise RLBaseError(f"monitor file {path!r} does not start with a '#{{json}}' header")
        try:
            header = json.loads(first[1:])
        except json.JSONDecodeError as exc:
            raise RLBaseError(f"monitor file {path!r} has an unreadable header: {exc}") from None
        table = pd.read_csv(f)
    return header, table


def load_monitor(dirname: PathLike) -> tuple[dict[str, Any], pd.DataFrame] | None:
    """All ``*monitor.csv`` files of one folder as one episode table sorted by time.

    ``t`` in the result counts seconds from the earliest ``t_start`` among the files, so runs
    of several workers share one clock. Returns ``None`` when the folder has no monitor file.
    """
    paths = sorted(glob.glob(os.path.join(os.fspath(dirname), "*monitor.csv")))
    if not paths:
        return None
    headers, tables = [], []
    for path in paths:
        header, table = read_monitor_file(path)
        table["t"] = table["t"] + float(header.get("t_start", 0.0))
        headers.append(header)
        tables.append(table)
    episodes = pd.concat(tables, ignore_index=True)
    episodes = episodes.sort_values("t", kind="stable").reset_index(drop=True)
    t_start = min(float(h.get("t_start", 0.0)) for h in headers)
    episodes["t"] = episodes["t"] - t_start
    first = dict(headers[0])
    first["t_start"] = t_start
    return first, episodes


def load_progress(dirname: PathLike) -> pd.DataFrame | None:
    """The folder's ``progress.csv`` (or ``progress.json``) as a table; ``None`` if absent/empty."""
    csv_path = os.path.join(os.fspath(dirname), "progress.csv")
    json_path = os.path.join(os.fspath(dirname), "progress.json")
    try:
        if os.path.exists(csv_path):
            return pd.read_csv(csv_path)
        if os.path.exists(json_path):
            return pd.read_json(json_path, lines=True)
    except (pd.errors.EmptyDataError, ValueError):
        return None  # a run that stopped before its first dump
    return None


def _is_result_dir(filenames: Sequence[str]) -> bool:
    return any(name in ("progress.csv", "progress.json", "metadata.json")
               or name.endswith("monitor.csv") for name in filenames)


def load_results(root_dir_or_dirs: PathLike | Sequence[PathLike], enable_progress: bool = True,
                 enable_monitor: bool = True, verbose: bool = False) -> list[Result]:
    """Every run folder under one or more roots (a folder or a list), searched recursively:
    one :class:`Result` per folder holding results, sorted by folder name. ``verbose`` prints
    each folder found."""
    roots = ([root_dir_or_dirs] if isinstance(root_dir_or_dirs, (str, os.PathLike))
             else list(root_dir_or_dirs))
    found: dict[str, Result] = {}
    for given in roots:
        root = os.path.abspath(os.path.expanduser(os.fspath(given)))
        if not os.path.isdir(root):
            raise RLBaseError(f"results folder {root!r} does not exist")
        for dirname, _, filenames in os.walk(root):
            if dirname in found or not _is_result_dir(filenames):
                continue
            result = _load_dir(dirname, enable_progress, enable_monitor)
            if result.progress is None and result.monitor is None and not result.metadata:
                continue
            found[dirname] = result
            if verbose:
                print(f"load_results: {dirname}")
    if verbose:
        print(f"load_results: {len(found)} folders")
    return [found[name] for name in sorted(found)]


def _load_dir(dirname: str, enable_progress: bool, enable_monitor: bool) -> Result:
    metadata: dict[str, Any] = {}
    monitor = None
    if enable_monitor:
        loaded = load_monitor(dirname)
        if loaded is not None:
            metadata, monitor = loaded
    meta_path = os.path.join(dirname, "metadata.json")
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            metadata.update(json.load(f))
    progress = load_progress(dirname) if enable_progress else None
    return Result(dirname=dirname, metadata=metadata, progress=progress, monitor=monitor)


# --- smoothing --------------------------------------------------------------------------------


def smooth(y: npt.ArrayLike, radius: int, mode: str = "two_sided", valid_only: bool = False):
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


def window_func(x: npt.ArrayLike, y: npt.ArrayLike, window: int, func: Callable) -> tuple:
    """Apply ``func`` (e.g. ``np.mean``) over each full window of ``window`` points of ``y``.

    :return: ``(x[window-1:], values)``, one value per window ending at that x.
    """
    xs, ys = np.asarray(x), np.asarray(y)
    if not 1 <= window <= len(ys):
        raise RLBaseError(f"window={window} must be between 1 and len(y)={len(ys)}")
    windows = np.lib.stride_tricks.sliding_window_view(ys, window)
    return xs[window - 1:], func(windows, axis=-1)


def _ema_points(xolds: npt.ArrayLike, yolds: npt.ArrayLike, low: float | None,
                high: float | None) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The points as float arrays and the grid's ends (default: the first and last x)."""
    xold = np.asarray(xolds, dtype=np.float64)
    return (xold, np.asarray(yolds, dtype=np.float64), xold[0] if low is None else low,
            xold[-1] if high is None else high)


def one_sided_ema(xolds: npt.ArrayLike, yolds: npt.ArrayLike, low: float | None = None,
                  high: float | None = None, n: int = 512, decay_steps: float = 1.0,
                  low_counts_threshold: float = 1e-8):
    """Exponential moving average of irregularly spaced points (``xolds`` increasing), read
    on a regular grid of ``n`` points from ``low`` to ``high`` (default the first and last x).

    Each point's weight decays by ``e`` every ``decay_steps`` grid intervals after it; grid
    points with less total weight than ``low_counts_threshold`` get NaN.

    :return: ``(xs, ys, weights)`` on the grid.
    """
    xold, yold, low, high = _ema_points(xolds, yolds, low, high)
    xs = np.linspace(low, high, n)
    period = (high - low) / max(n - 1, 1) * decay_steps or 1.0
    ys = np.full(n, np.nan)
    weights = np.zeros(n)
    total = weight = 0.0
    t = -np.inf
    j = 0
    for i, x_new in enumerate(xs):
        # Fold in every point up to this grid x, decaying the running sums to each point's x.
        while j < len(xold) and xold[j] <= x_new:
            decay = np.exp(-(xold[j] - t) / period) if np.isfinite(t) else 0.0
            total, weight, t = total * decay + yold[j], weight * decay + 1.0, xold[j]
            j += 1
        if np.isfinite(t):
            decay = np.exp(-(x_new - t) / period)
            total, weight, t = total * decay, weight * decay, x_new
        weights[i] = weight
        if weight > low_counts_threshold:
            ys[i] = total / weight
    return xs, ys, weights


def symmetric_ema(xolds: npt.ArrayLike, yolds: npt.ArrayLike, low: float | None = None,
                  high: float | None = None, n: int = 512, decay_steps: float = 1.0,
                  low_counts_threshold: float = 1e-8):
    """Like :func:`one_sided_ema`, but averaging points on both sides of each grid x."""
    xold, yold, low, high = _ema_points(xolds, yolds, low, high)
    xs, fwd, wf = one_sided_ema(xold, yold, low, high, n, decay_steps, 0.0)
    # The backward pass is the forward one on the mirrored axis.
    _, bwd, wb = one_sided_ema(-xold[::-1], yold[::-1], -high, -low, n, decay_steps, 0.0)
    bwd, wb = bwd[::-1], wb[::-1]
    weights = wf + wb
    with np.errstate(invalid="ignore", divide="ignore"):
        ys = (np.nan_to_num(fwd) * wf + np.nan_to_num(bwd) * wb) / weights
    ys[weights <= low_counts_threshold] = np.nan
    return xs, ys, weights


# --- plotting ---------------------------------------------------------------------------------

COLORS = [
    "tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple",
    "tab:brown", "tab:pink", "tab:gray", "tab:olive", "tab:cyan",
]


def default_xy_fn(result: Result) -> tuple[np.ndarray, np.ndarray]:
    """x = timesteps so far (cumulative episode lengths), y = episode return smoothed."""
    if result.monitor is None:
        raise RLBaseError(f"{result.dirname!r} has no monitor.csv; pass "
                          "xy_fn=progress_xy_fn(x_key, y_key)")
    x = np.cumsum(result.monitor["l"].to_numpy())
    return x, smooth(result.monitor["r"].to_numpy(), radius=10)


def progress_xy_fn(x_key: str = "time/total_timesteps", y_key: str = "rollout/ep_rew_mean"
                   ) -> Callable[[Result], tuple[np.ndarray, np.ndarray]]:
    """An ``xy_fn`` plotting the progress table's ``x_key`` column against ``y_key``'s."""

    def xy_fn(result: Result) -> tuple[np.ndarray, np.ndarray]:
        table = result.progress
        if table is None:
            raise RLBaseError(f"{result.dirname!r} has no progress.csv or progress.json")
        for key in (x_key, y_key):
            if key not in table.columns:
                raise RLBaseError(f"progress key {key!r} not in {result.dirname!r}; valid keys: "
                                  f"{', '.join(map(str, table.columns))}")
        rows = table[[x_key, y_key]].dropna()
        return rows[x_key].to_numpy(dtype=float), rows[y_key].to_numpy(dtype=float)

    return xy_fn


def default_split_fn(result: Result) -> str:
    """Baselines' default panel (and group) key: the folder name after the last ``/`` or
    ``-``, without a trailing ``-<digits>`` seed suffix (``logs/cartpole-3`` is ``cartpole``,
    ``logs/ppo`` is ``ppo``)."""
    match = re.search(r"[^/-]+(?=(-\d+)?\Z)", os.path.normpath(result.dirname))
    return match.group(0) if match else ""


def default_group_fn(result: Result) -> str:
    """Baselines' default group key: the same as :func:`default_split_fn`."""
    return default_split_fn(result)


def env_split_fn(result: Result) -> str:
    """A panel per env when the run says which (the CLI's metadata.json or the monitor
    header), else :func:`default_split_fn`."""
    env = result.metadata.get("env_id")
    return str(env) if env else default_split_fn(result)


def algorithm_group_fn(result: Result) -> str:
    """A colour per algorithm when the run says which (the CLI's metadata.json), else
    :func:`default_split_fn`."""
    alg = result.metadata.get("algorithm")
    return str(alg) if alg else default_split_fn(result)


TILINGS = ("vertical", "horizontal", "symmetric")


def _grid_shape(n: int, tiling: str | None) -> tuple[int, int]:
    if tiling in ("vertical", None):
        return n, 1
    if tiling == "horizontal":
        return 1, n
    if tiling == "symmetric":  # columns: the largest divisor of n up to its square root
        cols = max(i for i in range(1, int(np.sqrt(n)) + 1) if n % i == 0)
        return n // cols, cols
    raise RLBaseError(f"tiling {tiling!r} is not allowed; valid: {', '.join(TILINGS)}")


def _average_curves(curves: list[tuple[np.ndarray, np.ndarray]], resample: int,
                    smooth_step: float) -> tuple[np.ndarray, np.ndarray]:
    """A group's runs on one x grid: the grid and the runs' y stacked by run. Resampled (EMA)
    over the x range every run covers; without resampling the runs must share their x."""
    if not resample:
        shortest = min(len(x) for x, _ in curves)
        if not all(np.array_equal(x[:shortest], curves[0][0][:shortest]) for x, _ in curves):
            raise RLBaseError("averaging runs sampled at different x needs resample=<number "
                              "of points>")
        return curves[0][0][:shortest], np.stack([y[:shortest] for _, y in curves])
    low = max(x[0] for x, _ in curves)
    high = min(x[-1] for x, _ in curves)
    grid = np.linspace(low, high, resample)
    ys = [symmetric_ema(x, y, low, high, resample, decay_steps=smooth_step)[1]
          for x, y in curves]
    return grid, np.stack(ys)


DEFAULT_SAMPLES = 512  # the resampling grid when averaging without a resample given


def plot_results(allresults: Sequence[Result], *,
                 xy_fn: Callable[[Result], tuple[Any, Any]] = default_xy_fn,
                 split_fn: Callable[[Result], Any] | None = default_split_fn,
                 group_fn: Callable[[Result], Any] | None = default_split_fn,
                 average_group: bool = False, shaded_std: bool = True, shaded_err: bool = True,
                 figsize: tuple[float, float] | None = None, legend_outside: bool = False,
                 resample: int = 0, smooth_step: float = 1.0, tiling: str | None = "vertical",
                 xlabel: str | None = None, ylabel: str | None = None, use_pyplot: bool = True,
                 title: str | None = None):
    """Plot learning curves: one panel per split key, one colour per group key. The
    arguments and their defaults are Baselines' ``plot_results``.

    :param allresults: results from :func:`load_results`.
    :param xy_fn: ``result -> (x, y)``; default timesteps vs smoothed episode return (x None:
        the point indices).
    :param split_fn: ``result -> panel key``; default the folder name without its ``-<seed>``
        suffix (:func:`default_split_fn`); ``None`` puts everything in one panel;
        :func:`env_split_fn` makes a panel per env.
    :param group_fn: ``result -> group key`` (one colour and legend entry per group); default
        the same as ``split_fn``'s; ``None``: one group; :func:`algorithm_group_fn`: a colour
        per algorithm.
    :param average_group: draw each group's mean over its runs (seeds) with shaded bands
        instead of each run (resampled: ``resample`` or 512 points).
    :param shaded_std: with averaging, shade mean +- standard deviation.
    :param shaded_err: with averaging, shade mean +- standard error (darker).
    :param figsize: the figure size in inches; default 6 x 6 per panel.
    :param legend_outside: put the legend right of the panels.
    :param resample: if > 0, resample each curve to this many points with an EMA.
    :param smooth_step: the EMA's averaging length in grid intervals when resampling.
    :param tiling: ``vertical`` (or None), ``horizontal`` or ``symmetric`` panel layout.
    :param xlabel: the bottom row's x axis label.
    :param ylabel: the left column's y axis label.
    :param use_pyplot: make the figure through pyplot (shows in notebooks and ``plt.show``);
        ``False`` builds a bare figure that never touches a display.
    :param title: the figure's title.
    :return: ``(figure, 2-D array of axes)``.
    """
    if not allresults:
        raise RLBaseError("plot_results got no results; check the folder given to load_results")
    if isinstance(resample, bool) or not isinstance(resample, int) or resample < 0:
        raise RLBaseError(f"resample must be 0 (no resampling) or a number of points, got "
                          f"{resample!r}")
    split = split_fn or (lambda _: "")
    group_of = group_fn or (lambda _: "")
    panels: dict[Any, list[Result]] = defaultdict(list)
    for result in allresults:
        panels[split(result)].append(result)
    groups = sorted({group_of(r) for r in allresults}, key=str)
    color_of = {g: COLORS[i % len(COLORS)] for i, g in enumerate(groups)}
    if average_group:
        resample = resample or DEFAULT_SAMPLES

    nrows, ncols = _grid_shape(len(panels), tiling)
    figsize = figsize or (6 * ncols, 6 * nrows)
    if use_pyplot:
        import matplotlib.pyplot as plt  # optional: the plot extra

        fig, axarr = plt.subplots(nrows, ncols, squeeze=False, figsize=figsize)
    else:
        from matplotlib.figure import Figure  # optional: the plot extra

        fig = Figure(figsize=figsize)
        axarr = fig.subplots(nrows, ncols, squeeze=False)

    for k, key in enumerate(sorted(panels, key=str)):
        ax = axarr[k // ncols][k % ncols]
        by_group: dict[Any, list[tuple[np.ndarray, np.ndarray]]] = defaultdict(list)
        for result in panels[key]:
            x, y = xy_fn(result)
            y = np.asarray(y, dtype=float)
            x = np.arange(len(y), dtype=float) if x is None else np.asarray(x, dtype=float)
            if len(x):
                by_group[group_of(result)].append((x, y))
        for group in sorted(by_group, key=str):
            runs = len(by_group[group])
            label = (f"{group} ({runs})" if average_group else str(group)) \
                if group != "" else ""
            _draw_group(ax, by_group[group], color_of[group], label, average_group,
                        shaded_std, shaded_err, resample, smooth_step)
        ax.set_title(str(key))
        if any(g != "" for g in by_group):
            ax.legend(**({"loc": "upper left", "bbox_to_anchor": (1, 1)} if legend_outside
                         else {}))
    for ax in axarr[-1]:
        if xlabel is not None:
            ax.set_xlabel(xlabel)
    for row in axarr:
        if ylabel is not None:
            row[0].set_ylabel(ylabel)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig, axarr


def _draw_group(ax, curves, color, label, average, shaded_std, shaded_err, resample, step):
    """One group's lines (each run, or their mean with shaded bands)."""
    label = label or None
    if not average:
        for i, (x, y) in enumerate(curves):
            if resample:
                x, y = symmetric_ema(x, y, x[0], x[-1], resample, decay_steps=step)[:2]
            ax.plot(x, y, color=color, label=label if i == 0 else None)
        return
    xs, ys = _average_curves(curves, resample, step)
    mean = np.nanmean(ys, axis=0)
    std = np.nanstd(ys, axis=0)
    ax.plot(xs, mean, color=color, label=label)
    if shaded_err:
        err = std / np.sqrt(len(curves))
        ax.fill_between(xs, mean - err, mean + err, color=color, alpha=0.4, linewidth=0)
    if shaded_std:
        ax.fill_between(xs, mean - std, mean + std, color=color, alpha=0.2, linewidth=0)


def learning_curve_figure(result: Result, label: str, title: str | None = None):
    """One run's learning curve (the CLI's --save_plots): each episode's return drawn faintly,
    their smoothed curve over it, and the periodic evaluation's mean return
    (``eval/mean_reward`` in the progress table) when evaluation ran. Returns the figure."""
    from matplotlib.figure import Figure  # optional: the plot extra

    fig = Figure(figsize=(8, 5))
    ax = fig.subplots()
    color = COLORS[0]
    if result.monitor is not None and len(result.monitor):
        x = np.cumsum(result.monitor["l"].to_numpy())
        raw = result.monitor["r"].to_numpy(dtype=float)
        ax.plot(x, raw, color=color, alpha=0.25, linewidth=0.8, label=f"{label} (episodes)")
        ax.plot(x, smooth(raw, radius=10), color=color, label=f"{label} (smoothed)")
    table, x_key, y_key = result.progress, "time/total_timesteps", "eval/mean_reward"
    if table is not None and {x_key, y_key} <= set(table.columns):
        rows = table[[x_key, y_key]].dropna()
        if len(rows):
            ax.plot(rows[x_key].to_numpy(float), rows[y_key].to_numpy(float),
                    color=COLORS[1], marker="o", label=f"{label} (evaluation)")
    if not ax.lines:
        raise RLBaseError(f"{result.dirname}: no episodes in its monitor files and no "
                          "eval/mean_reward in its progress table to plot")
    ax.set_xlabel("env steps")
    ax.set_ylabel("episode return")
    ax.legend()
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


def save_plot(results_or_dir: PathLike | Sequence[Result], path: PathLike, **kwargs: Any) -> str:
    """Plot results (or every run under a folder) with :func:`plot_results` (``kwargs``) to an
    image file (PNG unless ``path``'s extension says otherwise), no display needed; returns
    ``path``."""
    results = (load_results(results_or_dir) if isinstance(results_or_dir, (str, os.PathLike))
               else list(results_or_dir))
    kwargs.setdefault("use_pyplot", False)
    fig, _ = plot_results(results, **kwargs)
    path = os.fspath(path)
    fig.savefig(path, dpi=100)
    if kwargs["use_pyplot"]:
        import matplotlib.pyplot as plt  # optional: the plot extra

        plt.close(fig)
    return path
