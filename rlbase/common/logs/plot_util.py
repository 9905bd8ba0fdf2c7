"""Load training results (monitor and progress files) and plot learning curves.

A result folder holds any of: ``*monitor.csv`` files (one line per episode: return ``r``,
length ``l``, seconds ``t`` since the header's ``t_start``), ``progress.csv`` or
``progress.json`` (the logger's dumps), ``metadata.json`` (or a bench run's ``result.json``).
``load_results`` finds every such folder under the given roots; ``plot_results`` draws them,
one panel per split and one colour per group, optionally averaging each group (its seeds) into
a mean line with shaded bands; the drawing itself is :mod:`rlbase.common.logs.curves`'.
"""

from __future__ import annotations

import glob
import gzip
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
from rlbase.common.logs import curves
from rlbase.common.logs.curves import smooth as smooth  # Baselines' plot_util.smooth

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
    """One monitor file (``.gz``: gzip-compressed, as committed results keep them): its
    ``#{json}`` header and its episode table."""
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        first = f.readline()
        if not first.startswith("#"):
            raise RLBaseError(f"monitor file {path!r} does not start with a '#{{json}}' header")
        try:
            header = json.loads(first[1:])
        except json.JSONDecodeError as exc:
            raise RLBaseError(f"monitor file {path!r} has an unreadable header: {exc}") from None
        table = pd.read_csv(f)
    return header, table


def monitor_paths(dirname: PathLike) -> list[str]:
    """The folder's monitor files: ``*monitor.csv``, and each ``*monitor.csv.gz`` whose
    uncompressed file is not there too (so no episode is read twice)."""
    plain = glob.glob(os.path.join(os.fspath(dirname), "*monitor.csv"))
    packed = [p for p in glob.glob(os.path.join(os.fspath(dirname), "*monitor.csv.gz"))
              if p[:-3] not in plain]
    return sorted(plain + packed)


def load_monitor(dirname: PathLike) -> tuple[dict[str, Any], pd.DataFrame] | None:
    """All ``*monitor.csv`` files of one folder (and ``*monitor.csv.gz``, committed results'
    compressed ones, where no uncompressed copy stands beside) as one episode table sorted by
    time.

    ``t`` in the result counts seconds from the earliest ``t_start`` among the files, so runs
    of several workers share one clock. Returns ``None`` when the folder has no monitor file.
    """
    paths = monitor_paths(dirname)
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
               or name.endswith(("monitor.csv", "monitor.csv.gz")) for name in filenames)


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
    else:
        metadata.update(_bench_metadata(dirname))
    progress = load_progress(dirname) if enable_progress else None
    return Result(dirname=dirname, metadata=metadata, progress=progress, monitor=monitor)


def _bench_metadata(dirname: str) -> dict[str, Any]:
    """A bench suite run's ``result.json`` (which has no metadata.json) in metadata.json's
    names: its row name as ``algorithm``, ``env_id``, ``seed``."""
    path = os.path.join(dirname, "result.json")
    if not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            record = json.load(f)
    except (OSError, json.JSONDecodeError) as exc:
        raise RLBaseError(f"bench result {path!r} is unreadable: {exc}") from None
    if not isinstance(record, dict):
        return {}
    return {mine: record[theirs] for mine, theirs in
            (("algorithm", "name"), ("env_id", "env"), ("seed", "seed")) if theirs in record}


# --- smoothing --------------------------------------------------------------------------------


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


# --- what a run is: its algorithm, env and seed -----------------------------------------------

# The seed suffixes run folders carry: the bench's ``__s0``, ``_s0`` / ``_seed0``, Baselines'
# ``-0``.
SEED_SUFFIX = re.compile(r"(?:__s|_s|_seed|-)(\d+)\Z")


def _folder(result: Result) -> str:
    return os.path.basename(os.path.normpath(result.dirname))


def seed_of(result: Result) -> Any:
    """The run's seed: its metadata's (the CLI's metadata.json, the bench's result.json),
    else its folder name's seed suffix (``__s0``, ``_s0``, ``-0``), else None."""
    seed = result.metadata.get("seed")
    if seed is not None:
        return seed
    match = SEED_SUFFIX.search(_folder(result))
    return int(match.group(1)) if match else None


def run_name_fn(result: Result) -> str:
    """The folder name without its seed suffix (``ppo__CartPole-v1__s0`` is
    ``ppo__CartPole-v1``, ``cartpole_s1`` is ``cartpole``)."""
    return SEED_SUFFIX.sub("", _folder(result)) or _folder(result)


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
    """A panel per env when the run says which (metadata.json, the bench's result.json or the
    monitor header), else one per folder name without its seed (:func:`run_name_fn`)."""
    env = result.metadata.get("env_id")
    return str(env) if env else run_name_fn(result)


def algorithm_group_fn(result: Result) -> str:
    """A curve per algorithm when the run says which (metadata.json, the bench's
    result.json), else one per folder name without its seed (:func:`run_name_fn`): runs that
    differ only in their seed are one curve."""
    alg = result.metadata.get("algorithm")
    return str(alg) if alg else run_name_fn(result)


# --- x and y of a run -------------------------------------------------------------------------


def default_xy_fn(result: Result) -> tuple[np.ndarray, np.ndarray]:
    """x = timesteps so far (cumulative episode lengths), y = episode return smoothed.
    (:func:`plot_results` draws each episode's return faint under it.)"""
    series = episodes_series(result)
    return series.x, series.curve


def episodes_series(result: Result) -> curves.Series:
    """The run's episodes: x the env steps when each ended (cumulative episode lengths, the
    monitor files' only clock in steps), y its return, with their moving average."""
    if result.monitor is None:
        raise RLBaseError(f"{result.dirname!r} has no monitor.csv; pass "
                          "xy_fn=progress_xy_fn(x_key, y_key)")
    return curves.episode_series(np.cumsum(result.monitor["l"].to_numpy()),
                                 result.monitor["r"].to_numpy(), seed_of(result))


# What the logger's keys hold, for axis labels.
KEY_LABELS = {
    "time/total_timesteps": curves.X_STEPS,
    "rollout/ep_rew_mean": "mean return of the last 100 episodes (sum of env rewards)",
    "rollout/ep_len_mean": "mean length of the last 100 episodes (env steps)",
    "rollout/success_rate": "success rate of the last 100 episodes (0-1)",
    "eval/mean_reward": "evaluation return (mean over its episodes, sum of env rewards)",
}


@dataclass(frozen=True)
class ProgressXY:
    """An ``xy_fn`` plotting the progress table's ``x_key`` column against ``y_key``'s."""

    x_key: str
    y_key: str

    def __call__(self, result: Result) -> tuple[np.ndarray, np.ndarray]:
        table = result.progress
        if table is None:
            raise RLBaseError(f"{result.dirname!r} has no progress.csv or progress.json")
        for key in (self.x_key, self.y_key):
            if key not in table.columns:
                raise RLBaseError(f"progress key {key!r} not in {result.dirname!r}; valid keys: "
                                  f"{', '.join(map(str, table.columns))}")
        rows = table[[self.x_key, self.y_key]].dropna()
        return rows[self.x_key].to_numpy(dtype=float), rows[self.y_key].to_numpy(dtype=float)

    @property
    def labels(self) -> tuple[str, str]:
        """The axis labels: what each key holds and its unit, the y key named too."""
        y = f"{KEY_LABELS[self.y_key]} [{self.y_key}]" if self.y_key in KEY_LABELS \
            else self.y_key
        return KEY_LABELS.get(self.x_key, self.x_key), y


def progress_xy_fn(x_key: str = "time/total_timesteps", y_key: str = "rollout/ep_rew_mean"
                   ) -> ProgressXY:
    """An ``xy_fn`` plotting the progress table's ``x_key`` column against ``y_key``'s."""
    return ProgressXY(x_key, y_key)


def axis_labels(xy_fn: Callable[[Result], Any]) -> tuple[str, str]:
    """The x and y labels (with units) of what ``xy_fn`` returns; a user's own function is
    named in them (pass xlabel/ylabel to say better)."""
    if xy_fn is default_xy_fn:
        return curves.X_STEPS, curves.Y_RETURN
    if isinstance(xy_fn, ProgressXY):
        return xy_fn.labels
    name = getattr(xy_fn, "__name__", type(xy_fn).__name__)
    return f"x of {name}", f"y of {name}"


def _series(xy_fn: Callable[[Result], Any], result: Result) -> curves.Series:
    """One run's points: the raw episodes and their smoothed curve for the default xy_fn,
    else what ``xy_fn`` gives, drawn as it is."""
    if xy_fn is default_xy_fn:
        return episodes_series(result)
    x, y = xy_fn(result)
    y = np.asarray(y, dtype=float)
    x = np.arange(len(y), dtype=float) if x is None else np.asarray(x, dtype=float)
    return curves.Series(x, y, None, seed_of(result))


# --- plotting ---------------------------------------------------------------------------------

COLORS = list(curves.COLORS)
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


DEFAULT_SAMPLES = curves.GRID_POINTS  # the grid seeds are averaged on without a resample given


def _panel_title(key: Any, results: Sequence[Result]) -> str:
    """The algorithms and envs of a panel's runs (``ppo, a2c on CartPole-v1``), after the
    panel key when that says something else (a user's split_fn)."""
    title = curves.run_title(sorted({algorithm_group_fn(r) for r in results}),
                             sorted({str(r.metadata.get("env_id") or "") for r in results}))
    return title if str(key) in ("", *title.replace(",", " ").split()) else f"{key}: {title}"


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
    arguments and their defaults are Baselines' ``plot_results``; rlbase adds axis labels
    with units, panel titles naming the algorithms and envs, and each run's raw episodes
    drawn faint under its curve.

    :param allresults: results from :func:`load_results`.
    :param xy_fn: ``result -> (x, y)``; default env steps vs episode return, smoothed over
        21 episodes with each episode drawn faint (x None: the point indices).
    :param split_fn: ``result -> panel key``; default the folder name without its ``-<seed>``
        suffix (:func:`default_split_fn`); ``None`` puts everything in one panel;
        :func:`env_split_fn` makes a panel per env.
    :param group_fn: ``result -> group key`` (one colour and legend entry per group); default
        the same as ``split_fn``'s; ``None``: one group; :func:`algorithm_group_fn`: a curve
        per algorithm, its seeds together.
    :param average_group: draw each group's runs (seeds) as one curve: the mean of their
        smoothed curves on a common grid (``resample`` or 512 points over the env steps every
        run covers) with shaded bands across runs, the legend saying which.
    :param shaded_std: with averaging, shade mean +- standard deviation across runs.
    :param shaded_err: with averaging, shade mean +- standard error across runs (darker).
    :param figsize: the figure size in inches; default 6 x 6 per panel.
    :param legend_outside: put the legend right of the panels.
    :param resample: without averaging, resample each curve to this many points with an EMA
        (``smooth_step``); with averaging, the grid's points.
    :param smooth_step: the EMA's averaging length in grid intervals when resampling without
        averaging (averaged runs are each run's moving average, interpolated).
    :param tiling: ``vertical`` (or None), ``horizontal`` or ``symmetric`` panel layout.
    :param xlabel: the x axis label; default what ``xy_fn`` gives, with its unit.
    :param ylabel: the y axis label; default what ``xy_fn`` gives, with its unit.
    :param use_pyplot: make the figure through pyplot (shows in notebooks and ``plt.show``);
        ``False`` builds a bare Agg figure that never touches a display.
    :param title: the figure's title (each panel's names its algorithms and envs).
    :return: ``(figure, 2-D array of axes)``.
    """
    if not allresults:
        raise RLBaseError("plot_results got no results; check the folder given to load_results")
    if isinstance(resample, bool) or not isinstance(resample, int) or resample < 0:
        raise RLBaseError(f"resample must be 0 (no resampling) or a number of points, got "
                          f"{resample!r}")
    if average_group and smooth_step != 1.0:
        raise RLBaseError("smooth_step sets the EMA of resample without average_group; averaged "
                          "runs are each run's moving average interpolated on the grid: leave "
                          "smooth_step at 1.0")
    split = split_fn or (lambda _: "")
    group_of = group_fn or (lambda _: "")
    panels: dict[Any, list[Result]] = defaultdict(list)
    for result in allresults:
        panels[split(result)].append(result)
    groups = sorted({group_of(r) for r in allresults}, key=str)
    color_of = {g: COLORS[i % len(COLORS)] for i, g in enumerate(groups)}
    labels = axis_labels(xy_fn)

    nrows, ncols = _grid_shape(len(panels), tiling)
    fig, axarr = curves.new_figure(nrows, ncols, figsize or (6 * ncols, 6 * nrows), use_pyplot)
    for k, key in enumerate(sorted(panels, key=str)):
        ax = axarr[k // ncols][k % ncols]
        by_group: dict[Any, list[curves.Series]] = defaultdict(list)
        for result in panels[key]:
            series = _series(xy_fn, result)
            if len(series.x):
                by_group[group_of(result)].append(series)
        for group in sorted(by_group, key=str):
            name = str(group) if group != "" else "runs"
            if average_group:
                curves.draw_runs(ax, by_group[group], name, color_of[group],
                                 grid_points=resample or DEFAULT_SAMPLES, shaded_std=shaded_std,
                                 shaded_err=shaded_err)
            else:
                _draw_each(ax, by_group[group], name, color_of[group], resample, smooth_step)
        curves.label_axes(ax, xlabel or labels[0], ylabel or labels[1],
                          _panel_title(key, panels[key]), legend_outside=legend_outside)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig, axarr


def _draw_each(ax, runs: list[curves.Series], name: str, color: str, resample: int,
               step: float) -> None:
    """Each run of a group on its own (Baselines' default), one legend entry per group;
    ``resample``: each curve EMA-resampled to that many points."""
    for i, run in enumerate(runs):
        label = name if i == 0 else f"_{name}"  # matplotlib leaves "_..." out of the legend
        if resample:
            xs, ys = symmetric_ema(run.x, run.curve, run.x[0], run.x[-1], resample,
                                   decay_steps=step)[:2]
            if run.smoothed is not None:
                ax.plot(run.x, run.y, color=color, alpha=curves.RAW_ALPHA, linewidth=0.8,
                        label=f"{label} (episodes)")
            ax.plot(xs, ys, color=color, label=f"{label} (resampled)")
        else:
            curves.draw_runs(ax, [run], label, color)


def learning_curve_figure(result: Result, label: str, title: str | None = None):
    """One run's learning curve (the CLI's --save_plots): each episode's return drawn faintly,
    their smoothed curve over it, and the periodic evaluation's mean return
    (``eval/mean_reward`` in the progress table) when evaluation ran. Returns the figure;
    its title names the algorithm and env unless ``title`` is given."""
    fig, axarr = curves.new_figure()
    ax = axarr[0, 0]
    if result.monitor is not None and len(result.monitor):
        curves.draw_runs(ax, [episodes_series(result)], label, COLORS[0])
    table, x_key, y_key = result.progress, "time/total_timesteps", "eval/mean_reward"
    if table is not None and {x_key, y_key} <= set(table.columns):
        rows = table[[x_key, y_key]].dropna()
        if len(rows):
            ax.plot(rows[x_key].to_numpy(float), rows[y_key].to_numpy(float),
                    color=COLORS[1], marker="o", label=f"{label} (evaluation)")
    if not ax.lines:
        raise RLBaseError(f"{result.dirname}: no episodes in its monitor files and no "
                          "eval/mean_reward in its progress table to plot")
    seed = seed_of(result)
    curves.label_axes(ax, curves.X_STEPS, curves.Y_RETURN, title or curves.run_title(
        [label], [str(result.metadata.get("env_id") or "")],
        "" if seed is None else f"seed {seed}"))
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
    return curves.save_figure(fig, path)
