"""The expert's (observation, action) pairs GAIL's discriminator learns from."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common import nested
from rlbase.common.buffers.expert_data import (
    check_actions,
    check_observations,
    expert_pairs,
    read_expert_data,
    typed_batch,
)
from rlbase.common.errors import RLBaseError


class ExpertPairs:
    """The first ``traj_limitation`` episodes (-1: all) of an expert .npz, checked against the
    model's spaces; :meth:`sample` draws batches of them."""

    def __init__(self, path: str | None, ob_space: gym.Space, ac_space: gym.Space,
                 traj_limitation: int = -1):
        if path is None:
            raise RLBaseError("gail needs expert trajectories: pass expert_path=<file.npz> "
                              "(--expert_path on the CLI), written by generate_expert_traj")
        data = read_expert_data(path)
        observations, actions = expert_pairs(data, traj_limitation)
        check_observations(observations, ob_space)
        check_actions(actions, ac_space)
        self.observations, self.actions = typed_batch(observations, actions, ob_space,
                                                      ac_space)
        self.ob_space = ob_space
        self.size = len(self.actions)
        self.episodes = int(np.count_nonzero(data["episode_starts"][:self.size]))

    def sample(self, n: int, rng: np.random.Generator) -> tuple[Any, np.ndarray]:
        """``n`` pairs drawn uniformly: without replacement when there are enough."""
        idx = rng.choice(self.size, n, replace=n > self.size)
        return nested.take(self.ob_space, self.observations, idx), self.actions[idx]
