"""Expert trajectories on disk (generate_expert_traj's .npz): reading, cutting to whole
episodes and checking them against a model's spaces. Behaviour cloning and GAIL read them here.
"""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np

from rlbase.common import nested
from rlbase.common.errors import RLBaseError

KEYS = ("obs", "actions", "rewards", "episode_starts", "episode_returns")
# Dict/Tuple observations are stored leaf by leaf as "obs/<leaf name>" (nested.leaf_names).
LEAF_PREFIX = "obs/"

#: observations as stored: one array, or leaf arrays by leaf name for Dict/Tuple spaces
Observations = np.ndarray | dict[str, np.ndarray]


def read_expert_data(path: str | dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays of an expert .npz (or the dict itself), checked for the keys every reader
    needs."""
    if isinstance(path, dict):
        data = path
    else:
        if not os.path.exists(path):
            raise RLBaseError(f"expert data file {path} does not exist")
        with np.load(path, allow_pickle=False) as npz:
            data = {k: npz[k] for k in npz.files}
    has_leaves = any(k.startswith(LEAF_PREFIX) for k in data)
    lacking = [k for k in ("obs", "actions", "episode_starts")
               if k not in data and not (k == "obs" and has_leaves)]
    if lacking:
        raise RLBaseError(f"expert data lacks {lacking}; generate_expert_traj writes "
                          f"{', '.join(KEYS)}")
    return data


def expert_pairs(data: dict[str, np.ndarray], traj_limitation: int = -1
                 ) -> tuple[Observations, np.ndarray]:
    """(observations, actions) of the first ``traj_limitation`` episodes (-1: all)."""
    n = len(data["actions"])
    if traj_limitation > 0:
        starts = np.flatnonzero(data["episode_starts"])
        if traj_limitation < len(starts):
            n = int(starts[traj_limitation])
    leaves = {k[len(LEAF_PREFIX):]: np.asarray(v)[:n] for k, v in data.items()
              if k.startswith(LEAF_PREFIX)}
    observations = leaves if leaves else np.asarray(data["obs"][:n])
    return observations, np.asarray(data["actions"][:n])


def check_observations(observations: Observations, ob_space: gym.Space) -> None:
    """The expert's observations must have the model's structure and shapes."""
    names, subs = nested.leaf_names(ob_space), nested.leaf_spaces(ob_space)
    if isinstance(observations, dict) != nested.is_nested(ob_space) or (
            isinstance(observations, dict) and sorted(observations) != sorted(names)):
        given = sorted(observations) if isinstance(observations, dict) else "one array"
        raise RLBaseError(f"expert observations ({given}) do not match the model's observation "
                          f"space {ob_space} (leaves {names})")
    leaves = [observations[name] for name in names] if isinstance(observations, dict) \
        else [observations]
    for name, leaf, sub in zip(names, leaves, subs):
        if leaf.shape[1:] != tuple(sub.shape or ()):
            which = f" '{name}'" if isinstance(observations, dict) else ""
            raise RLBaseError(f"expert observations{which} have shape {leaf.shape[1:]}, the "
                              f"model's observation space {sub}")


def check_actions(actions: np.ndarray, ac_space: gym.Space) -> None:
    """The expert's actions must have the model's action shape."""
    shape = tuple(ac_space.shape or ())
    if actions.shape[1:] != shape:
        raise RLBaseError(f"expert actions have shape {actions.shape[1:]}, the model's action "
                          f"space {ac_space} has {shape}")


def typed_batch(observations: Observations, actions: np.ndarray, ob_space: gym.Space,
                ac_space: gym.Space) -> tuple[nested.Nested, np.ndarray]:
    """A batch cast to the spaces' dtypes and packed as the model's observations."""
    leaves = [observations[name] for name in nested.leaf_names(ob_space)] \
        if isinstance(observations, dict) else [observations]
    typed = nested.pack(ob_space, [leaf.astype(sub.dtype) for leaf, sub in
                                   zip(leaves, nested.leaf_spaces(ob_space))])
    shape = tuple(ac_space.shape or ())
    return typed, actions.astype(ac_space.dtype).reshape(len(actions), *shape)
