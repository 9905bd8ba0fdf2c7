"""Checks of user input that every algorithm shares: an env's observation shape against its
observation space (named by env, step and both shapes). Parameters are checked by their
configs' fields (rlbase.common.config)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rlbase.common.errors import RLBaseError


def observation_shape_error(env: Any, index: int, step: int, obs: Any,
                            expected: tuple[int, ...]) -> RLBaseError:
    """The error for env ``index`` returning ``obs`` whose shape is not its space's."""
    spec = getattr(env, "spec", None)
    name = spec.id if spec is not None else type(getattr(env, "unwrapped", env)).__name__
    return RLBaseError(f"env {index} ({name}) returned an observation of shape "
                       f"{np.shape(obs)} at step {step} of its episode, but its observation "
                       f"space has shape {expected}: an env must keep its observation shape")
