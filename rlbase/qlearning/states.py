"""Row numbers of the Q-table: Discrete and MultiDiscrete states, and Box states cut into a
grid."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from rlbase.common.errors import RLBaseError


class StateIndexer:
    """Maps observations of a Discrete, MultiDiscrete or finite Box space to row numbers of
    the Q-table (a Box cut into ``grid_size`` equal bins per dimension between its bounds)."""

    def __init__(self, space: gym.Space, grid_size: int):
        self.space = space
        if isinstance(space, gym.spaces.Discrete):
            self.num_states = int(space.n)
            self._index = lambda obs: np.asarray(obs, np.int64).reshape(-1) - int(space.start)
        elif isinstance(space, gym.spaces.MultiDiscrete):
            dims = tuple(int(n) for n in space.nvec.ravel())
            starts = np.asarray(space.start).ravel()
            self.num_states = int(np.prod(dims))
            self._index = lambda obs: np.ravel_multi_index(
                (np.asarray(obs, np.int64).reshape(len(obs), -1) - starts).T, dims)
        elif isinstance(space, gym.spaces.Box):
            if isinstance(grid_size, bool) or not isinstance(grid_size, (int, np.integer)) \
                    or grid_size < 1:
                raise RLBaseError(f"grid_size must be a positive integer, got {grid_size!r}")
            low, high = space.low.astype(np.float64).ravel(), space.high.astype(
                np.float64).ravel()
            if not (np.isfinite(low).all() and np.isfinite(high).all()):
                raise RLBaseError(f"qlearning cannot discretize {space}: its bounds are not "
                                  "all finite; wrap the env to clip its observations, or use "
                                  "dqn")
            self.num_states = int(grid_size) ** low.size
            self.low, self.width = low, (high - low) / grid_size
            self.dims = (int(grid_size),) * low.size
            self._index = self._box_index
        else:
            raise RLBaseError(f"qlearning needs a Discrete, MultiDiscrete or Box observation "
                              f"space, got {space}")

    def _box_index(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, np.float64).reshape(len(obs), -1)
        bins = np.floor((obs - self.low) / np.where(self.width > 0, self.width, 1.0))
        bins = np.clip(bins, 0, self.dims[0] - 1).astype(np.int64)
        return np.asarray(np.ravel_multi_index(bins.T, self.dims))

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """Row numbers ``[B]`` for a batch of observations."""
        return self._index(obs)
