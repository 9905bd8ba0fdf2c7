"""Model files as rlbase 0.1 wrote them (before the one contract: no "format" entry), for the
tests that check old files still load or are refused with a clear error."""

from __future__ import annotations

from typing import Any, Sequence

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.common.base_model import jsonable
from rlbase.common.io.serialization import save_file, space_to_json
from rlbase.common.tf_util import variables_to_arrays


def save_model(path: str, algorithm: str, groups: dict[str, Sequence[tf.Variable]],
               ob_space: gym.Space, ac_space: gym.Space, network: str,
               network_kwargs: dict[str, Any], hyperparameters: dict[str, Any],
               num_timesteps: int, extra_arrays: dict[str, np.ndarray] | None = None,
               extra_metadata: dict[str, Any] | None = None) -> None:
    """Write one model file (atomically): metadata + every group of variables as arrays."""
    arrays: dict[str, np.ndarray] = {}
    for prefix, variables in groups.items():
        arrays.update(variables_to_arrays(variables, prefix))
    arrays.update(extra_arrays or {})
    metadata = {
        "algorithm": algorithm,
        "network": network,
        "network_kwargs": jsonable(network_kwargs),
        "observation_space": space_to_json(ob_space),
        "action_space": space_to_json(ac_space),
        "hyperparameters": jsonable(hyperparameters),
        "num_timesteps": int(num_timesteps),
        "groups": sorted(groups),
        **(extra_metadata or {}),
    }
    save_file(path, metadata, arrays)
