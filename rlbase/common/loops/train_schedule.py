"""When an off-policy algorithm trains: SB3's ``train_freq`` (in env steps) and
``gradient_steps``, and the one ``learning_starts`` rule every off-policy algorithm follows
(:class:`TrainSchedule`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rlbase.common.errors import RLBaseError


def _count(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise RLBaseError(f"{name} must be {kind}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class TrainSchedule:
    """When an off-policy loop acts at random and when it trains (SB3's convention).

    train_freq: env steps (summed over envs) between training phases (1: one phase per env
        step, so several per vector step with several envs).
    gradient_steps: gradient steps per training phase (0: collect only).
    learning_starts: env steps (summed over envs) of uniformly random actions at the start;
        training starts after the first vector step that takes the count past it (SB3's
        ``num_timesteps > learning_starts``).
    batch_size: transitions per gradient step, drawn with replacement: training starts after
        ``learning_starts`` even while the buffer holds fewer (SB3's and Baselines' rule).
    """

    train_freq: int
    gradient_steps: int
    learning_starts: int
    batch_size: int

    def __post_init__(self) -> None:
        _count("train_freq", self.train_freq, 1)
        _count("gradient_steps", self.gradient_steps, 0)
        _count("learning_starts", self.learning_starts, 0)
        _count("batch_size", self.batch_size, 1)

    def warming_up(self, num_timesteps: int) -> bool:
        """Whether the actions of the vector step taken at ``num_timesteps`` env steps are
        uniformly random."""
        return num_timesteps < self.learning_starts

    def started(self, num_timesteps: int, stored: int) -> bool:
        """Whether training may follow the vector step that brought the count to
        ``num_timesteps``, with ``stored`` transitions in the buffer: the count is past
        ``learning_starts`` (SB3's rule) and the buffer holds something to sample."""
        return num_timesteps > self.learning_starts and stored > 0

    def phases(self, num_timesteps: int, num_envs: int, stored: int) -> int:
        """The training phases owed to the vector step of ``num_envs`` env steps that brought
        the count to ``num_timesteps`` (0 before :meth:`started`): one per multiple of
        ``train_freq`` among its env steps, numbered from 1. With one env a phase after every
        ``train_freq``-th env step; with SB3's ``(n, "step")`` (``train_freq = n *
        num_envs``) one every n vector steps; with ``train_freq`` below ``num_envs``,
        several, so the gradient steps per env step do not depend on the number of envs.
        DQN runs them right after that step; SAC and DDPG before the next one, in one
        compiled call with its acting."""
        if self.gradient_steps == 0 or not self.started(num_timesteps, stored):
            return 0
        f = self.train_freq
        return num_timesteps // f - (num_timesteps - num_envs) // f
