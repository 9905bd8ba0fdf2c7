"""VecMonitor: episode returns and lengths in ``infos`` and in a ``monitor.csv`` file."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import time
from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np

from rlbase.common.logger import cut_file, warn_once
from rlbase.common.vec_env.base import VecEnv, VecEnvWrapper, VecStepResult

MONITOR_EXT = "monitor.csv"


def monitor_path(filename: str) -> str:
    """``dir/`` -> ``dir/monitor.csv``; ``x.monitor.csv`` kept; ``x`` -> ``x.monitor.csv``."""
    if filename.endswith(MONITOR_EXT):
        return filename
    if os.path.isdir(filename) or filename.endswith(os.sep):
        return os.path.join(filename, MONITOR_EXT)
    return f"{filename}.{MONITOR_EXT}"


class VecMonitor(VecEnvWrapper):
    """Record each env's episode return and length.

    When env ``i`` ends (terminated or truncated), ``infos[i]["episode"]`` becomes
    ``{"r": return, "l": length, "t": seconds since this wrapper started}`` (plus the
    ``info_keywords`` values), and one row goes to the CSV file, flushed at once so a crash
    keeps it.

    If the underlying env already put an ``"episode"`` in that info (for example Atari's
    full-game score when episodes end on a lost life), that inner dict is kept in ``infos`` and
    its ``r`` and ``l`` are the ones recorded in the CSV and in ``episode_returns`` /
    ``episode_lengths``: everything downstream then agrees on what an episode scored.

    :param venv: the env to wrap.
    :param filename: a folder, or a path (``.monitor.csv`` is appended unless it already ends
        with ``monitor.csv``); None writes no file.
    :param info_keywords: info keys copied into each episode record and CSV row.
    :param games_only: record only episodes the env itself reports in ``info["episode"]``
        (Atari: whole games, while training episodes end at every lost life).
    :param max_episodes: ``episode_returns``/``lengths``/``times`` keep at most the last this
        many episodes (memory stays flat over long runs; the CSV file keeps them all).
    :param append: add rows to an existing file (a resumed run, which then keeps only the
        episodes its checkpoint counted with :meth:`truncate_episodes`); its ``t`` column goes
        on counting from the file's ``t_start``.

    A write that fails (a full disk) stops the file with one warning; the statistics go on.
    """

    def __init__(self, venv: VecEnv, filename: str | None = None,
                 info_keywords: Sequence[str] = (), games_only: bool = False,
                 max_episodes: int = 10_000, append: bool = False):
        super().__init__(venv)
        self.max_episodes = max(1, int(max_episodes))
        self.games_only = games_only
        self.info_keywords = tuple(info_keywords)
        self.t_start = time.time()
        self.episode_returns: list[float] = []
        self.episode_lengths: list[int] = []
        self.episode_times: list[float] = []
        self._returns = np.zeros(self.num_envs, dtype=np.float64)
        self._lengths = np.zeros(self.num_envs, dtype=np.int64)
        self._file: TextIO | None = None
        self._writer: Any = None
        self.file_rows = 0  # episode rows in the file (checkpoints keep it: resume cuts to it)
        if filename is not None:
            self._open(monitor_path(os.fspath(filename)), append)

    def _open(self, path: str, append: bool) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        if append and os.path.exists(path) and os.path.getsize(path):
            with open(path, newline="") as f:
                first = f.readline()
            try:
                self.t_start = float(json.loads(first[1:])["t_start"])
            except (ValueError, KeyError, TypeError):
                pass  # not a monitor header: rows still append, timed from now
            with open(path, "rb") as f:
                self.file_rows = max(0, sum(1 for _ in f) - 2)  # the header lines
            self._file = open(path, "a", newline="")  # noqa: SIM115 - open until close()
            self._writer = csv.writer(self._file)
            return
        self._file = open(path, "w", newline="")  # noqa: SIM115 - open until close()
        header = {"t_start": self.t_start, "env_id": _env_id(self.venv)}
        self._writer = csv.writer(self._file)
        try:
            self._file.write("#" + json.dumps(header) + "\n")
            self._writer.writerow(("r", "l", "t", *self.info_keywords))
            self._file.flush()
        except OSError as exc:
            self._stop_file(exc)

    @property
    def running_returns(self) -> np.ndarray:
        """Each env's return so far in its current episode (0 right after one ends)."""
        return self._returns

    @property
    def filename(self) -> str | None:
        return None if self._file is None else self._file.name

    def reset(self) -> np.ndarray:
        obs = self.venv.reset()
        self._returns[:] = 0.0
        self._lengths[:] = 0
        return obs

    def step_wait(self) -> VecStepResult:
        obs, rewards, terminated, truncated, infos = self.venv.step_wait()
        self._returns += rewards
        self._lengths += 1
        for i in np.flatnonzero(np.logical_or(terminated, truncated)).tolist():
            self._end_episode(i, infos[i])
        return obs, rewards, terminated, truncated, infos

    def _end_episode(self, i: int, info: dict[str, Any]) -> None:
        elapsed = round(time.time() - self.t_start, 6)
        episode = info.get("episode")
        if episode is None and self.games_only:
            self._returns[i], self._lengths[i] = 0.0, 0  # a life lost; the game goes on
            return
        if episode is None:
            episode = {"r": float(self._returns[i]), "l": int(self._lengths[i]), "t": elapsed}
            episode.update({key: info.get(key) for key in self.info_keywords})
            info["episode"] = episode
        self._returns[i], self._lengths[i] = 0.0, 0
        self.record_episode(_scalar(episode["r"]), int(_scalar(episode["l"])),
                            [info.get(key) for key in self.info_keywords], elapsed)

    def record_episode(self, ret: float, length: int, extras: Sequence[Any] = (),
                       elapsed: float | None = None) -> None:
        """Record one finished episode (in the statistics and the CSV file). The wrapper calls
        this itself; an algorithm that plays episodes on the underlying envs directly (ES)
        calls it for those episodes."""
        if elapsed is None:
            elapsed = round(time.time() - self.t_start, 6)
        self.episode_returns.append(ret)
        self.episode_lengths.append(length)
        self.episode_times.append(elapsed)
        if len(self.episode_returns) >= 2 * self.max_episodes:
            # Trim in batches (amortized O(1)); the lists stay plain lists for callers.
            for records in (self.episode_returns, self.episode_lengths, self.episode_times):
                del records[:-self.max_episodes]
        if self._writer is not None and self._file is not None:
            try:
                self._writer.writerow((round(ret, 6), length, elapsed, *extras))
                self._file.flush()
                self.file_rows += 1
            except OSError as exc:
                self._stop_file(exc)

    def _stop_file(self, exc: OSError) -> None:
        assert self._file is not None
        name = self._file.name
        with contextlib.suppress(OSError):
            self._file.close()
        self._file, self._writer = None, None
        warn_once(f"monitor:{name}", f"could not write {name} ({exc}); training goes on "
                  "without the monitor file")

    def truncate_episodes(self, count: int) -> None:
        """Keep the file's first ``count`` episode rows (a resumed run: the ``file_rows`` its
        checkpoint saved), dropping those the interrupted run wrote past it."""
        if self._file is not None:
            self._file.flush()
            cut_file(self._file.name, 2 + count)  # the JSON header line, the column names
            self.file_rows = min(self.file_rows, count)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file, self._writer = None, None
        super().close()


def _scalar(value: Any) -> float:
    """A number from an episode record (gymnasium wrappers may store 1-element arrays)."""
    return float(np.asarray(value).reshape(-1)[0])


def _env_id(venv: VecEnv) -> str | None:
    """The gymnasium id of the first env, when the VecEnv can tell."""
    try:
        spec = venv.env_method("spec")[0]
    except Exception:  # noqa: BLE001 - the id is a nicety; any VecEnv without one gets None
        return None
    return getattr(spec, "id", None)
