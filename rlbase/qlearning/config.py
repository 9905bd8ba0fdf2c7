"""Tabular Q-learning's parameters: each declared once, with its type, unit, default, range
and SB3 name."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from rlbase.common.config import AlgorithmConfig, OtherName, param
from rlbase.common.schedules import SHAPES


def _log_interval(value: Any, given: Mapping[str, Any], num_envs: int) -> Any:
    """Baselines' print_freq=None (or 0) never logged: now a row is written only at the end."""
    return value if value else sys.maxsize


@dataclass(frozen=True)
class QLearningConfig(AlgorithmConfig):
    algorithm: ClassVar[str] = "qlearning"
    mixed_precision_refused: ClassVar[str] = "tabular Q-learning has no network"

    lr: float | Callable[[float], float] = param(
        0.1, "step size of the update Q += lr * (target - Q), or a function of the fraction of "
        "training remaining (1 -> 0)", low=0, low_open=True, high=1, sb3="learning_rate")
    lrschedule: str = param("constant", "how a float lr changes: constant, linear (to 0 at the "
                            "end: averages out the noise of stochastic envs such as slippery "
                            "FrozenLake), middle_drop, ...", choices=tuple(SHAPES))
    gamma: float = param(0.99, "discount factor (1: a time-limit truncation ends the return)",
                         low=0, high=1)
    exploration_initial_eps: float = param(
        1.0, "initial exploration rate of the epsilon-greedy behaviour",
        unit="probability of a random action", low=0, high=1, deprecated=["epsilon"])
    exploration_final_eps: float = param(
        0.01, "the exploration rate never falls below this",
        unit="probability of a random action", low=0, high=1, deprecated=["epsilon_min"])
    exploration_decay: float | None = param(
        None, "the exploration rate is multiplied by this after every env step (None: the rate "
        "that reaches exploration_final_eps half-way through training); per step, not per "
        "episode, so that envs with long early episodes (Taxi: 200 steps) still stop exploring "
        "in time", unit="factor per env step", low=0, low_open=True, high=1,
        deprecated=["epsilon_decay"])
    grid_size: int = param(20, "bins per dimension of a Box observation",
                           unit="bins per dimension", low=1, architecture=True)
    log_interval: int = param(
        1000, "log every this many finished episodes", unit="episodes", low=1,
        deprecated=[OtherName("print_freq", _log_interval, "None or 0: log only at the end")])


CONFIG = QLearningConfig
