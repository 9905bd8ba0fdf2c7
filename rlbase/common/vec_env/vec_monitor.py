"""VecMonitor: episode returns and lengths in ``infos`` and in a ``monitor.csv`` file."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlbase.common.envs.monitor import MonitorFile, monitor_path
from rlbase.common.vec_env.base import VecEnv, VecEnvWrapper, VecStepResult

__all__ = ["VecMonitor", "monitor_path"]


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
        self.monitor_file: MonitorFile | None = None
        if filename is not None:
            self.monitor_file = MonitorFile(filename, _env_id(venv), self.info_keywords,
                                            append=append)
            self.t_start = self.monitor_file.t_start

    @property
    def running_returns(self) -> np.ndarray:
        """Each env's return so far in its current episode (0 right after one ends)."""
        return self._returns

    @property
    def filename(self) -> str | None:
        return None if self.monitor_file is None or not self.monitor_file.open \
            else self.monitor_file.path

    @property
    def file_rows(self) -> int:
        """Episode rows in the file (checkpoints keep it: a resume cuts the file to it)."""
        return 0 if self.monitor_file is None else self.monitor_file.rows

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
        if self.monitor_file is not None:
            self.monitor_file.write_row(ret, length, elapsed, extras)

    def truncate_episodes(self, count: int) -> None:
        """Keep the file's first ``count`` episode rows (a resumed run: the ``file_rows`` its
        checkpoint saved), dropping those the interrupted run wrote past it."""
        if self.monitor_file is not None:
            self.monitor_file.truncate(count)

    def close(self) -> None:
        if self.monitor_file is not None:
            self.monitor_file.close()
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
