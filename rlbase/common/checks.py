"""Checks of user input that every algorithm shares: learning rates, and an env's observation
shape against its observation space (named by env, step and both shapes)."""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from typing import Any

import numpy as np

from rlbase.common.errors import RLBaseError

# learn() arguments that are learning rates (DDPG/TD3 have one per network).
LEARNING_RATE_NAMES = ("lr", "actor_lr", "critic_lr")


def check_learning_rates(algorithm: str, hyperparameters: Mapping[str, Any]) -> None:
    """Every learning rate among ``hyperparameters`` must be a positive number, or a function
    of the fraction of training remaining whose start value (at 1.0) is positive."""
    for name in LEARNING_RATE_NAMES:
        if name not in hyperparameters:
            continue
        value = hyperparameters[name]
        start = value(1.0) if callable(value) else value
        if isinstance(start, bool) or not isinstance(start, Real) or not float(start) > 0:
            got = f"a schedule starting at {start!r}" if callable(value) else repr(value)
            raise RLBaseError(f"{algorithm}: {name} must be a positive number such as 3e-4 (or a "
                              f"function of the fraction of training remaining that starts "
                              f"positive), got {got}")


def observation_shape_error(env: Any, index: int, step: int, obs: Any,
                            expected: tuple[int, ...]) -> RLBaseError:
    """The error for env ``index`` returning ``obs`` whose shape is not its space's."""
    spec = getattr(env, "spec", None)
    name = spec.id if spec is not None else type(getattr(env, "unwrapped", env)).__name__
    return RLBaseError(f"env {index} ({name}) returned an observation of shape "
                       f"{np.shape(obs)} at step {step} of its episode, but its observation "
                       f"space has shape {expected}: an env must keep its observation shape")
