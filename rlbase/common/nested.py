"""Observations of Dict and Tuple spaces: nested batches of arrays, handled leaf by leaf.

A batch of observations keeps gymnasium's structure: a dict of arrays ``[B, ...]`` for a Dict
space, a tuple for a Tuple space, nested as the space is; a plain array for every other space.
Leaves come in ``tf.nest``'s order (dict keys sorted, tuples in order), so numpy storage,
compiled-call signatures and encoders agree on which array is which.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

Nested = Any  # an array, or a dict / tuple of Nested


def is_nested(space: gym.Space) -> bool:
    return isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple))


def leaf_spaces(space: gym.Space) -> list[gym.Space]:
    """The non-nested sub-spaces, in leaf order."""
    if isinstance(space, gym.spaces.Dict):
        return [leaf for key in sorted(space.spaces) for leaf in leaf_spaces(space.spaces[key])]
    if isinstance(space, gym.spaces.Tuple):
        return [leaf for sub in space.spaces for leaf in leaf_spaces(sub)]
    return [space]


def leaf_names(space: gym.Space, prefix: str = "") -> list[str]:
    """A readable path per leaf (``image``, ``state/position``, ``0``), in leaf order."""
    if isinstance(space, gym.spaces.Dict):
        return [name for key in sorted(space.spaces)
                for name in leaf_names(space.spaces[key], f"{prefix}{key}/")]
    if isinstance(space, gym.spaces.Tuple):
        return [name for i, sub in enumerate(space.spaces)
                for name in leaf_names(sub, f"{prefix}{i}/")]
    return [prefix.rstrip("/") or "obs"]


def flatten(space: gym.Space, obs: Nested) -> list[np.ndarray]:
    """The leaves of one (batched) observation, in leaf order."""
    if isinstance(space, gym.spaces.Dict):
        return [leaf for key in sorted(space.spaces)
                for leaf in flatten(space.spaces[key], obs[key])]
    if isinstance(space, gym.spaces.Tuple):
        return [leaf for sub, part in zip(space.spaces, obs) for leaf in flatten(sub, part)]
    return [obs]


def pack(space: gym.Space, leaves: Sequence[Any]) -> Nested:
    """Inverse of :func:`flatten`."""
    it = iter(leaves)

    def build(sub: gym.Space) -> Nested:
        if isinstance(sub, gym.spaces.Dict):
            return {key: build(sub.spaces[key]) for key in sorted(sub.spaces)}
        if isinstance(sub, gym.spaces.Tuple):
            return tuple(build(s) for s in sub.spaces)
        return next(it)

    return build(space)


def map_leaves(space: gym.Space, fn: Callable[[np.ndarray, gym.Space], Any], obs: Nested
               ) -> Nested:
    """``fn(leaf, leaf_space)`` on every leaf, keeping the structure."""
    return pack(space, [fn(leaf, sub) for leaf, sub in zip(flatten(space, obs),
                                                            leaf_spaces(space))])


def empty(space: gym.Space, lead: Sequence[int]) -> Nested:
    """Uninitialized storage for observations with leading axes ``lead``."""
    return pack(space, [np.empty((*lead, *(sub.shape or ())), dtype=sub.dtype)
                        for sub in leaf_spaces(space)])


def zeros(space: gym.Space, lead: Sequence[int]) -> Nested:
    return pack(space, [np.zeros((*lead, *(sub.shape or ())), dtype=sub.dtype)
                        for sub in leaf_spaces(space)])


def assign(space: gym.Space, storage: Nested, index: Any, obs: Nested) -> None:
    """``storage[index] = obs``, leaf by leaf."""
    for dst, src in zip(flatten(space, storage), flatten(space, obs)):
        dst[index] = src


def take(space: gym.Space, storage: Nested, index: Any) -> Nested:
    """``storage[index]``, leaf by leaf."""
    return pack(space, [leaf[index] for leaf in flatten(space, storage)])


def stack(space: gym.Space, observations: Sequence[Nested]) -> Nested:
    """One batch from single observations (``np.stack`` leaf by leaf)."""
    columns = zip(*(flatten(space, obs) for obs in observations))
    return pack(space, [np.stack(column) for column in columns])


def batch_size(space: gym.Space, obs: Nested) -> int:
    return len(flatten(space, obs)[0])


def as_batch(space: gym.Space, obs: Any) -> tuple[Nested, bool]:
    """``(batch, was_batched)``: one observation gets a leading axis of 1."""
    leaves = [np.asarray(leaf) for leaf in flatten(space, obs)]
    single = all(leaf.shape == tuple(sub.shape or ()) for leaf, sub in zip(leaves,
                                                                      leaf_spaces(space)))
    if single:
        return pack(space, [leaf[None] for leaf in leaves]), False
    return pack(space, leaves), True


def replace_leaves(space: gym.Space, leaves: Sequence[gym.Space]) -> gym.Space:
    """``space`` with its leaf spaces replaced, in leaf order (same nesting and keys)."""
    it = iter(leaves)

    def build(sub: gym.Space) -> gym.Space:
        if isinstance(sub, gym.spaces.Dict):
            return gym.spaces.Dict({key: build(sub.spaces[key]) for key in sorted(sub.spaces)})
        if isinstance(sub, gym.spaces.Tuple):
            return gym.spaces.Tuple([build(s) for s in sub.spaces])
        return next(it)

    return build(space)


def map_structure(fn: Callable[[np.ndarray], Any], obs: Nested) -> Nested:
    """``fn`` on every array of a nested batch, keeping its dicts and tuples (no space
    needed: for code that only reshapes or indexes, such as minibatch stacking)."""
    if isinstance(obs, dict):
        return {key: map_structure(fn, value) for key, value in obs.items()}
    if isinstance(obs, tuple):
        return tuple(map_structure(fn, value) for value in obs)
    return fn(obs)


def final_observations(space: gym.Space, new_obs: Nested, done: np.ndarray,
                       infos: Sequence[dict[str, Any]]) -> Nested:
    """``new_obs`` with each finished env's row replaced by ``infos[i]["final_observation"]``
    (one nested observation), leaf by leaf; rlbase.common.buffers.transitions has the plain-array
    version and the why."""
    rows = [i for i in np.flatnonzero(done).tolist()
            if infos[i].get("final_observation") is not None]
    if not rows:
        return new_obs
    leaves = [leaf.copy() for leaf in flatten(space, new_obs)]
    for i in rows:
        for dst, src in zip(leaves, flatten(space, infos[i]["final_observation"])):
            dst[i] = src
    return pack(space, leaves)
