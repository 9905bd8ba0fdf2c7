"""The base of on-policy rollout collectors."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common import nested
from rlbase.common.buffers.transitions import bootstraps_truncation
from rlbase.common.io.memory import check_rollout, rollout_step_bytes
from rlbase.common.loops.episodes import EpisodeStats
from rlbase.common.vec_env import VecEnv


class AbstractEnvRunner(ABC):
    """Holds the envs' current observations, recurrent state and episode-start flags between
    rollouts of ``nsteps`` steps; finished episodes go to ``episodes`` (the training loop's)."""

    def __init__(self, env: VecEnv, model: Any, nsteps: int, gamma: float = 0.99,
                 episodes: EpisodeStats | None = None):
        # Before the envs reset: a rollout that cannot fit is one line, not numpy's traceback
        # at the first allocation.
        check_rollout(nsteps, env.num_envs, rollout_step_bytes(env.observation_space,
                                                               env.action_space),
                      "the nsteps given")
        self.env = env
        self.gamma = gamma
        self.model = model
        self.num_envs = env.num_envs
        self.nsteps = nsteps
        self.obs = env.reset()
        self.states = model.initial_states(self.num_envs)
        self.episode_starts = np.ones(self.num_envs, dtype=np.float32)
        self.episodes = episodes if episodes is not None else EpisodeStats()
        space = env.action_space
        self._clip = (space.low, space.high) if isinstance(space, gym.spaces.Box) else None

    @property
    def nenv(self) -> int:
        """Baselines' name of :attr:`num_envs` (its runners' subclasses read it)."""
        return self.num_envs

    def env_actions(self, actions: np.ndarray) -> np.ndarray:
        """Box actions are clipped to the space before they reach the env; the unclipped
        sample is what the policy is trained on."""
        return np.clip(actions, *self._clip) if self._clip is not None else actions

    def collect_episodes(self, infos: list[dict[str, Any]]) -> None:
        self.episodes.update(infos)

    @abstractmethod
    def run(self) -> Any:
        """Collect one rollout."""

    def truncation_bootstrap(self, truncated: np.ndarray, infos: list[dict[str, Any]],
                             states: np.ndarray) -> np.ndarray:
        """``gamma * V(final observation)`` for envs cut by a time limit, 0 elsewhere.

        A truncated episode did not end in the MDP: its return continues past the cut, so we
        bootstrap from the value of the observation the env was in (not the reset one).
        """
        bonus = np.zeros(self.num_envs, dtype=np.float32)
        # gamma = 1: see rlbase.common.buffers.transitions
        if not bootstraps_truncation(self.gamma):
            return bonus
        idx = np.flatnonzero(truncated)
        if idx.size:
            final = nested.stack(self.env.observation_space,
                                 [infos[i]["final_observation"] for i in idx])
            values = self.model.value(final, states[idx], np.zeros(idx.size, np.float32))
            bonus[idx] = self.gamma * values
        return bonus
