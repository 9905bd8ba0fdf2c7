"""Episode monitoring of one gymnasium env, and the monitor files every monitor writes.

A monitor file (``*monitor.csv``) starts with one ``#{json}`` line (``t_start``, ``env_id``),
then the columns ``r`` (episode return), ``l`` (length), ``t`` (seconds since ``t_start``) and
any extra keys, one row per episode, flushed at once so a crash keeps it. :class:`Monitor`
(one env) and :class:`~rlbase.common.vec_env.VecMonitor` (a VecEnv) both write it with
:class:`MonitorFile`; :func:`load_results` reads a folder of them.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import json
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, SupportsFloat, TextIO

import gymnasium as gym

from rlbase.common.envs.reset_args import reset_arguments, reset_with
from rlbase.common.logs.logger import cut_file, warn_once

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LoadMonitorResultsError", "Monitor", "MonitorFile", "get_monitor_files",
           "load_results", "monitor_path"]

MONITOR_EXT = "monitor.csv"


def monitor_path(filename: str) -> str:
    """``dir/`` -> ``dir/monitor.csv``; ``x.monitor.csv`` kept; ``x`` -> ``x.monitor.csv``."""
    if filename.endswith(MONITOR_EXT):
        return filename
    if os.path.isdir(filename) or filename.endswith(os.sep):
        return os.path.join(filename, MONITOR_EXT)
    return f"{filename}.{MONITOR_EXT}"


class MonitorFile:
    """One monitor file, open for writing.

    :param filename: a folder, or a path (``.monitor.csv`` is appended unless it already ends
        with ``monitor.csv``).
    :param env_id: the header's ``env_id``.
    :param extra_keys: column names after ``r``, ``l``, ``t``.
    :param append: add rows to an existing file (its header and ``t_start`` kept) instead of
        replacing it.

    A write that fails (a full disk) closes the file with one warning; :attr:`open` then says
    False and further rows are dropped.
    """

    def __init__(self, filename: str | os.PathLike[str], env_id: str | None = None,
                 extra_keys: Sequence[str] = (), append: bool = False):
        path = monitor_path(os.fspath(filename))
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.path = path
        self.t_start = time.time()
        self.rows = 0  # episode rows in the file (a resumed run cuts the file back to it)
        self._file: TextIO | None
        append = append and os.path.exists(path) and os.path.getsize(path) > 0
        if append:
            with open(path, newline="") as f:
                first = f.readline()
            try:
                self.t_start = float(json.loads(first[1:])["t_start"])
            except (ValueError, KeyError, TypeError):
                pass  # not a monitor header: rows still append, timed from now
            with open(path, "rb") as f:
                self.rows = max(0, sum(1 for _ in f) - 2)  # the two header lines
        self._file = open(path, "a" if append else "w", newline="")  # noqa: SIM115 - until close()
        self._writer = csv.writer(self._file)
        if append:
            return
        try:
            self._file.write("#" + json.dumps({"t_start": self.t_start, "env_id": env_id}) + "\n")
            self._writer.writerow(("r", "l", "t", *extra_keys))
            self._file.flush()
        except OSError as exc:
            self._stop(exc)

    @property
    def open(self) -> bool:
        return self._file is not None

    def write_row(self, ret: float, length: int, elapsed: float,
                  extras: Sequence[Any] = ()) -> None:
        """One episode: its return, length, seconds since ``t_start`` and extra values."""
        if self._file is None:
            return
        try:
            self._writer.writerow((round(ret, 6), length, elapsed, *extras))
            self._file.flush()
            self.rows += 1
        except OSError as exc:
            self._stop(exc)

    def truncate(self, count: int) -> None:
        """Keep the first ``count`` episode rows."""
        if self._file is not None:
            self._file.flush()
            cut_file(self.path, 2 + count)  # the JSON header line, the column names
        self.rows = min(self.rows, count)

    def _stop(self, exc: OSError) -> None:
        with contextlib.suppress(OSError):
            if self._file is not None:
                self._file.close()
        self._file = None
        warn_once(f"monitor:{self.path}", f"could not write {self.path} ({exc}); training "
                  "goes on without the monitor file")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class Monitor(gym.Wrapper):
    """Records the return, length and duration of each episode of one env.

    When an episode ends (terminated or truncated), ``info["episode"]`` becomes
    ``{"r": return, "l": length, "t": seconds since the monitor started}`` plus the
    ``info_keywords`` and ``reset_keywords`` values, and a row goes to the monitor file.

    :param env: the env.
    :param filename: the monitor file (see :class:`MonitorFile`), or None for none.
    :param allow_early_resets: allow ``reset`` before the episode ended.
    :param reset_keywords: keyword arguments ``reset`` must be given; their values are recorded
        with the episode.
    :param info_keywords: ``info`` keys of the last step recorded with the episode.
    :param override_existing: replace an existing file (False: append to it).
    """

    def __init__(self, env: gym.Env, filename: str | None = None,
                 allow_early_resets: bool = True, reset_keywords: tuple[str, ...] = (),
                 info_keywords: tuple[str, ...] = (), override_existing: bool = True):
        super().__init__(env)
        self.t_start = time.time()
        self.monitor_file: MonitorFile | None = None
        if filename is not None:
            env_id = env.spec.id if env.spec is not None else None
            self.monitor_file = MonitorFile(filename, env_id, (*reset_keywords, *info_keywords),
                                            append=not override_existing)
            self.t_start = self.monitor_file.t_start
        self.allow_early_resets = allow_early_resets
        self.reset_keywords = tuple(reset_keywords)
        self.info_keywords = tuple(info_keywords)
        self.needs_reset = True
        self.rewards: list[float] = []
        self.episode_returns: list[float] = []
        self.episode_lengths: list[int] = []
        self.episode_times: list[float] = []
        self.total_steps = 0
        self.current_reset_info: dict[str, Any] = {}
        self._reset_arguments = reset_arguments(env)

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:  # type: ignore[override]
        """Start an episode; ``kwargs`` holds the ``reset_keywords`` (and seed, options)."""
        if not self.allow_early_resets and not self.needs_reset:
            raise RuntimeError("reset() before the episode ended; wrap the env with "
                               "Monitor(env, allow_early_resets=True) to allow it")
        for key in self.reset_keywords:
            if kwargs.get(key) is None:
                raise ValueError(f"Monitor(reset_keywords={self.reset_keywords}): reset() "
                                 f"needs the keyword argument {key!r}")
            self.current_reset_info[key] = kwargs[key]
        self.rewards = []
        self.needs_reset = False
        seed, options = kwargs.pop("seed", None), kwargs.pop("options", None)
        return reset_with(self.env, self._reset_arguments, seed, options, **kwargs)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        if self.needs_reset:
            raise RuntimeError("step() on an env whose episode ended: call reset() first")
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.rewards.append(float(reward))
        if terminated or truncated:
            self.needs_reset = True
            elapsed = round(time.time() - self.t_start, 6)
            ret, length = sum(self.rewards), len(self.rewards)
            episode: dict[str, Any] = {"r": round(ret, 6), "l": length, "t": elapsed}
            extras = [info[key] for key in self.info_keywords]
            episode.update(zip(self.info_keywords, extras))
            episode.update(self.current_reset_info)
            self.episode_returns.append(ret)
            self.episode_lengths.append(length)
            self.episode_times.append(elapsed)
            if self.monitor_file is not None:
                reset_values = [self.current_reset_info[k] for k in self.reset_keywords]
                self.monitor_file.write_row(ret, length, elapsed, [*reset_values, *extras])
            info["episode"] = episode
        self.total_steps += 1
        return obs, reward, terminated, truncated, info

    @property
    def monitor_filename(self) -> str | None:
        """The file this monitor writes (None: none)."""
        return None if self.monitor_file is None else self.monitor_file.path

    def close(self) -> None:
        super().close()
        if self.monitor_file is not None:
            self.monitor_file.close()

    def get_total_steps(self) -> int:
        """Steps taken, over all episodes."""
        return self.total_steps

    def get_episode_rewards(self) -> list[float]:
        """The return of every finished episode."""
        return self.episode_returns

    def get_episode_lengths(self) -> list[int]:
        """The length of every finished episode."""
        return self.episode_lengths

    def get_episode_times(self) -> list[float]:
        """Seconds from the monitor's start to the end of every finished episode."""
        return self.episode_times


class LoadMonitorResultsError(Exception):
    """A folder holds no monitor file."""


def get_monitor_files(path: str | os.PathLike[str]) -> list[str]:
    """The monitor files (``*monitor.csv``) directly in folder ``path``."""
    return sorted(glob.glob(os.path.join(os.fspath(path), "*" + MONITOR_EXT)))


def load_results(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Every episode of the monitor files in folder ``path`` as one table sorted by ``t``
    (seconds since the earliest file's ``t_start``); its ``index`` column is each episode's
    row number in its own file."""
    import pandas as pd  # optional: the plot extra

    from rlbase.common.logs.plot_util import read_monitor_file  # needs pandas

    files = get_monitor_files(path)
    if not files:
        raise LoadMonitorResultsError(f"no monitor files (*{MONITOR_EXT}) in {path}")
    tables, starts = [], []
    for name in files:
        header, table = read_monitor_file(name)
        starts.append(float(header.get("t_start", 0.0)))
        if not table.empty:  # concatenating an empty table warns (pandas >= 2.1)
            table["t"] += starts[-1]
            tables.append(table)
    if not tables:
        return pd.DataFrame(columns=["r", "l", "t"]).reset_index()
    episodes = pd.concat(tables).sort_values("t", kind="stable").reset_index()
    episodes["t"] -= min(starts)
    return episodes
