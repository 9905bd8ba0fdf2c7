"""``save_replay_buffer`` / ``load_replay_buffer`` of the classes whose model keeps a replay
buffer: the same arrays a checkpoint holds (rlbase.common.io.checkpoint's object state, raw
transitions), in the one safe file format (no pickle)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import gymnasium as gym

from rlbase.common.errors import RLBaseError
from rlbase.common.io.serialization import check_spaces, load_file, save_file, spaces_metadata

if TYPE_CHECKING:
    from rlbase.common.buffers.raw_replay import RawReplay

KIND = "replay_buffer"


@runtime_checkable
class ReplayModel(Protocol):
    """An algorithm model that learns from a replay buffer of raw transitions (DQN, DDPG/TD3,
    SAC; ACER when it replays)."""

    algorithm: str
    replay_buffer: Any
    raw_replay: RawReplay
    num_envs: int
    observation_space: gym.Space
    action_space: gym.Space


def save_buffer(model: ReplayModel, path: str) -> None:
    """Write ``model``'s buffer to ``path`` (atomically)."""
    meta, arrays = model.raw_replay.buffer_state(model.replay_buffer)
    save_file(path, {"kind": KIND, "algorithm": model.algorithm, "num_envs": model.num_envs,
                     **spaces_metadata(model.observation_space, model.action_space),
                     "replay": meta}, arrays)


def load_buffer(model: ReplayModel, path: str) -> None:
    """Fill ``model``'s buffer from a file of :func:`save_buffer` (checked before anything
    changes: the algorithm, spaces, number of envs and buffer size must match)."""
    metadata, arrays, _ = load_file(path)
    if metadata.get("kind") != KIND:
        raise RLBaseError(f"{path} is not a replay buffer file (save one with "
                          "model.save_replay_buffer(path))")
    if metadata.get("algorithm") != model.algorithm:
        raise RLBaseError(f"replay buffer file {path} holds a '{metadata.get('algorithm')}' "
                          f"buffer, not '{model.algorithm}'")
    check_spaces(metadata, model.observation_space, model.action_space)
    try:
        model.raw_replay.restore_buffer(model.replay_buffer, metadata.get("replay"), arrays)
    except RLBaseError as exc:
        raise RLBaseError(f"replay buffer file {path} does not fit this model ({exc})") \
            from None
