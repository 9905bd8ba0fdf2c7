"""Saving and loading an algorithm's variables in the one safe model-file format."""

from __future__ import annotations

import json
from typing import Any, Sequence

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.common.errors import RLBaseError
from rlbase.common.serialization import check_spaces, load_file, save_file, space_to_json
from rlbase.common.tf_util import assign_from_arrays, variables_to_arrays


def jsonable(params: dict[str, Any]) -> dict[str, Any]:
    """Hyperparameters for the metadata: values JSON cannot hold are kept as their repr."""
    out = {}
    for key, value in params.items():
        try:
            json.dumps(value)
            out[key] = value
        except (TypeError, ValueError):
            out[key] = repr(value)
    return out


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


def load_model(path: str, algorithm: str, groups: dict[str, Sequence[tf.Variable]],
               ob_space: gym.Space, ac_space: gym.Space, allow_pickle: bool = False
               ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Check a model file is this algorithm's, for these spaces, then assign its arrays."""
    metadata, arrays, _ = load_file(path, allow_pickle=allow_pickle)
    saved_alg = metadata.get("algorithm")
    if saved_alg != algorithm:
        raise RLBaseError(f"model file {path} holds a '{saved_alg}' model, not '{algorithm}'")
    check_spaces(metadata, ob_space, ac_space)
    steps = metadata.get("num_timesteps", 0)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise RLBaseError(f"model file {path} has num_timesteps {steps!r}: not a count")
    for prefix, variables in groups.items():
        assign_from_arrays(variables, arrays, prefix, path)
    return metadata, arrays


def read_metadata(path: str) -> dict[str, Any]:
    """The metadata of a model file (no arrays assigned)."""
    return load_file(path)[0]
