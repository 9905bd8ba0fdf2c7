"""A model's acting path as TensorFlow code: what ``rlbase export`` writes out.

Each algorithm's model describes, in :meth:`~rlbase.common.base_model.BaseModel.policy_graph`,
the very calls its ``step(obs, state, mask, deterministic=True)`` makes (the same Keras layers,
the same distribution's ``mode``, the same action scaling), as functions of tensors. The
exporter (:mod:`rlbase.export`) adds what surrounds ``step`` in ``predict``: the saved
VecNormalize statistics before it and the clipping to a Box's bounds after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

import gymnasium as gym
import numpy as np
import tensorflow as tf

if TYPE_CHECKING:
    from rlbase.common.vec_env.vec_normalize import NormalizationStats

#: (observations, state, mask[, action_masks]) -> (actions, next state)
ActFn = Callable[..., tuple[tf.Tensor, tf.Tensor]]
#: (observations, state, mask, seed [2] int64[, action_masks]) -> (actions, next state)
SampleFn = Callable[..., tuple[tf.Tensor, tf.Tensor]]


@dataclass(frozen=True)
class PolicyGraph:
    """A policy as graph code.

    observation_space: the observations ``act`` takes (nested like them for Dict/Tuple
        spaces), as ``step`` takes them: after the env's VecNormalize, if any.
    state_size: width of the recurrent state (0: feed-forward; state is then ``[B, 0]``).
    act: the deterministic policy: ``step(..., deterministic=True)``'s actions, in the env's
        action space (before ``predict``'s clipping to a Box's bounds).
    sample: the stochastic policy with an explicit ``[2]`` int64 seed (stateless draws), or
        None where the policy has no randomness of its own (DDPG, ES).
    owners: the Keras layers holding the weights ``act`` reads (a ``tf.Module`` tracks them
        and a SavedModel stores them); constants baked into ``act`` need no owner.
    action_mask_size: entries of one row of action masks (0: the policy takes none); a
        masked policy's ``act`` and ``sample`` take ``action_masks`` ``[B, size]`` bool as
        their last argument, as ``step(..., action_masks=...)`` does (valid actions True).
    """

    observation_space: gym.Space
    state_size: int
    act: ActFn
    sample: SampleFn | None = None
    owners: list[Any] = field(default_factory=list)
    action_mask_size: int = 0


def scale_to_bounds(actions: tf.Tensor, space: gym.Space) -> tf.Tensor:
    """In-graph twin of :func:`rlbase.common.families.continuous.scale_actions`: [-1, 1] -> [low,
    high] of a Box (float32 constants; the numpy path computes in float64, within 1e-6 of this)."""
    assert isinstance(space, gym.spaces.Box)
    low = tf.constant(space.low.astype(np.float32))
    half = tf.constant(((space.high.astype(np.float64) - space.low) * 0.5).astype(np.float32))
    return tf.cast(low + (tf.cast(actions, tf.float32) + 1.0) * half, space.dtype)


class ExportableModel(Protocol):
    """What the exporter reads of a model (every algorithm's ``Model`` has it): declared here
    so that the exporter needs no model class, and a model can export itself."""

    @property
    def algorithm(self) -> str: ...

    @property
    def network(self) -> Any: ...

    @property
    def observation_space(self) -> gym.Space: ...

    @property
    def action_space(self) -> gym.Space: ...

    @property
    def normalization(self) -> NormalizationStats | None: ...

    @property
    def num_timesteps(self) -> int: ...

    def policy_graph(self) -> PolicyGraph: ...

    def save(self, path: str) -> Any: ...

