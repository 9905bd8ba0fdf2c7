"""Episode statistics every algorithm logs, counted the one way: the episodes the monitor
reports.

``VecMonitor`` puts ``{"r": return, "l": length, "t": seconds}`` into ``infos[i]["episode"]``
when an episode ends. On Atari it reports whole games with their unclipped score, not the
lives the learner's episodes end at, so ``rollout/ep_rew_mean`` is the score results tables
compare, for every algorithm alike. Where the env reports ``info["is_success"]`` (goal envs),
the episode's last value is kept too: ``rollout/success_rate``, as SB3 logs it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

import numpy as np

from rlbase.common.misc_util import safemean


class EpisodeStats:
    """The last ``window`` monitored episodes and the count of all of them."""

    def __init__(self, window: int = 100):
        self.recent: deque[dict[str, float]] = deque(maxlen=window)
        # info["is_success"] at the end of each recent episode that reported one
        self.successes: deque[float] = deque(maxlen=window)
        self.count = 0

    def update(self, infos: Iterable[dict[str, Any]]) -> None:
        """Record the episodes that ended on this step (``info["episode"]`` entries) and,
        where the env reports it, whether each succeeded (``info["is_success"]``)."""
        for info in infos:
            episode = info.get("episode")
            if episode is not None:
                self.add(_scalar(episode["r"]), int(_scalar(episode["l"])),
                         _scalar(episode.get("t", 0.0)))
                success = info.get("is_success")
                if success is not None:
                    self.successes.append(float(_scalar(success)))

    def add(self, ret: float, length: int, seconds: float = 0.0) -> None:
        self.recent.append({"r": float(ret), "l": int(length), "t": float(seconds)})
        self.count += 1

    def mean_return(self) -> float:
        """Mean return of the recent episodes (nan before the first)."""
        return safemean(ep["r"] for ep in self.recent)

    def success_rate(self) -> float | None:
        """The share of the recent episodes that succeeded (None: the env reports none)."""
        return float(np.mean(self.successes)) if self.successes else None

    def mean_length(self) -> float:
        return safemean(ep["l"] for ep in self.recent)

    def state(self) -> dict[str, Any]:
        """JSON-able, for checkpoints."""
        return {"recent": list(self.recent), "count": self.count,
                "successes": list(self.successes)}

    def set_state(self, state: dict[str, Any]) -> None:
        self.recent.clear()
        self.recent.extend({k: float(v) for k, v in ep.items()} for ep in state["recent"])
        self.count = int(state["count"])
        self.successes.clear()
        self.successes.extend(float(s) for s in state.get("successes", ()))


def _scalar(value: Any) -> float:
    """A number from an episode record (gymnasium wrappers may store 1-element arrays)."""
    return float(np.asarray(value).reshape(-1)[0])
