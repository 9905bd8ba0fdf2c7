"""DDPG's observation normalization (Baselines'): running statistics kept in numpy, applied
inside the compiled calls as ``clip((obs - mean) / std, -5, 5)``. Off (SB3's DDPG/TD3 and the
zoo's settings), the networks see the raw observations: no clipping either (Pendulum's angular
velocity reaches +-8, and clipping it at 5 hid the fast states from the actor and critics).

A Box observation is normalized whole. A Dict/Tuple observation (nested, see
rlbase.common.nested) is normalized per entry: each Box entry that is not an image gets its
own statistics; images (scaled to [0, 1] by the encoder) and discrete entries (one-hot) pass
unchanged. The statistics of those entries travel to the compiled calls concatenated into one
flat ``mean`` and one flat ``std`` vector, so every call keeps a fixed, flat signature.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.common import nested
from rlbase.common.running_mean_std import RunningMeanStd
from rlbase.common.tf_util import spec_like
from rlbase.common.vec_env.vec_normalize import normalizable

OBS_CLIP = 5.0   # normalized observations are clipped to [-5, 5], as in Baselines
MIN_VAR = 1e-2   # Baselines' floor on normalizing variances (std >= 0.1)


def normalize_obs(obs: tf.Tensor, mean: tf.Tensor, std: tf.Tensor,
                  clip: float | None = OBS_CLIP) -> tf.Tensor:
    """``mean``/``std`` come from the numpy running statistics; ``clip``: to +-clip (None:
    not clipped)."""
    x = (tf.cast(obs, tf.float32) - mean) / std
    return tf.clip_by_value(x, -clip, clip) if clip is not None else x


class ObservationStats:
    """The statistics of the normalized observation entries, and their use in the graph.

    space: the env's observation space (a Box, or Dict/Tuple).
    enabled: keep running statistics and clip (False: the raw observations, cast to float32).
    comm: an mpi4py communicator pooling the statistics over workers, or None.
    clip: normalized values are clipped to [-clip, clip].
    std_min: the std observations are divided by is at least this.
    """

    def __init__(self, space: gym.Space, enabled: bool, comm: Any | None = None,
                 clip: float = OBS_CLIP, std_min: float = MIN_VAR ** 0.5):
        self.space = space
        self.clip, self.min_var = float(clip), float(std_min) ** 2
        self.nested = nested.is_nested(space)
        leaves = nested.leaf_spaces(space)
        # The leaves normalized: a Box observation whole, else each non-image Box entry
        # (discrete observations, one-hot encoded by the networks, are never normalized).
        self.leaves = [i for i, leaf in enumerate(leaves) if normalizable(leaf)] \
            if self.nested else [0] if isinstance(space, gym.spaces.Box) else []
        names = nested.leaf_names(space)
        self.names = [names[i] for i in self.leaves]
        self.shapes = [tuple(leaves[i].shape or ()) for i in self.leaves]
        self.sizes = [int(np.prod(shape)) for shape in self.shapes]
        self.rms = [RunningMeanStd(shape=shape, comm=comm) for shape in self.shapes] \
            if enabled else []
        self.enabled = bool(enabled)
        self.mean: np.ndarray = np.zeros(0, np.float32)
        self.std: np.ndarray = np.zeros(0, np.float32)
        self.refresh()

    def network_space(self) -> gym.Space:
        """What the networks see: the space with each normalized entry a float32 Box (so an
        encoder casts it and never rescales a normalized uint8 vector as pixels)."""
        if not self.nested:
            return self.space
        leaves = nested.leaf_spaces(self.space)
        for i in self.leaves:
            leaf = leaves[i]
            assert isinstance(leaf, gym.spaces.Box)  # what normalizable() lets through
            low, high = (-self.clip, self.clip) if self.enabled else (leaf.low, leaf.high)
            leaves[i] = gym.spaces.Box(low, high, leaf.shape, np.float32)
        return nested.replace_leaves(self.space, leaves)

    # -- numpy side ---------------------------------------------------------------------------
    def refresh(self) -> None:
        """Recompute ``mean`` and ``std`` (the compiled calls' arguments) from the statistics:
        shaped like the observation for a Box, flat and concatenated for Dict/Tuple."""
        if self.rms:
            means = [rms.mean.astype(np.float32) for rms in self.rms]
            stds = [np.sqrt(np.maximum(rms.var, self.min_var)).astype(np.float32)
                    for rms in self.rms]
        else:
            means = [np.zeros(shape, np.float32) for shape in self.shapes]
            stds = [np.ones(shape, np.float32) for shape in self.shapes]
        if not self.nested and self.leaves:
            self.mean, self.std = means[0], stds[0]
        elif self.leaves:
            self.mean = np.concatenate([m.ravel() for m in means])
            self.std = np.concatenate([s.ravel() for s in stds])

    def update(self, obs: Any) -> None:
        """Merge a batch of observations (pooled over MPI workers) into the statistics."""
        if not self.rms:
            return
        if not self.nested:
            self.rms[0].update(obs)  # (a Box: a discrete space has no statistics)
        else:
            leaves = nested.flatten(self.space, obs)
            for rms, i in zip(self.rms, self.leaves):
                rms.update(leaves[i])
        self.refresh()

    def state_dict(self) -> dict[str, np.ndarray]:
        """``obs_rms/mean``, ... for a Box (the names of files saved before Dict support);
        ``obs_rms/<entry>/mean``, ... per normalized entry of a Dict/Tuple space."""
        out = {}
        for name, rms in zip(self.names, self.rms):
            prefix = "obs_rms/" if not self.nested else f"obs_rms/{name}/"
            out.update({prefix + k: v for k, v in rms.state_dict().items()})
        return out

    def load_state_dict(self, arrays: dict[str, np.ndarray]) -> None:
        """Set what :meth:`state_dict` returns (only arrays checked to fit reach here)."""
        for name, rms in zip(self.names, self.rms):
            prefix = "obs_rms/" if not self.nested else f"obs_rms/{name}/"
            rms.load_state_dict({k[len(prefix):]: v for k, v in arrays.items()
                                 if k.startswith(prefix) and "/" not in k[len(prefix):]})
        self.refresh()

    # -- graph side ---------------------------------------------------------------------------
    def spec(self) -> tf.TensorSpec:
        """The TensorSpec of ``mean`` (and of ``std``)."""
        return spec_like(self.mean.shape, np.float32)

    def normalize(self, obs: Any, mean: tf.Tensor, std: tf.Tensor) -> Any:
        """In-graph: the normalized entries of a batch of observations; the rest unchanged."""
        if not self.leaves:
            return obs
        if not self.nested:
            return normalize_obs(obs, mean, std, self.clip if self.enabled else None)
        leaves = tf.nest.flatten(obs)
        if self.leaves:
            means, stds = tf.split(mean, self.sizes), tf.split(std, self.sizes)
            for i, m, s, shape in zip(self.leaves, means, stds, self.shapes):
                leaves[i] = normalize_obs(leaves[i], tf.reshape(m, shape),
                                          tf.reshape(s, shape),
                                          self.clip if self.enabled else None)
        return tf.nest.pack_sequence_as(obs, leaves)
