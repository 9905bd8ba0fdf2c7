"""The base of on-policy rollout collectors."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common.vec_env import VecEnv


class AbstractEnvRunner(ABC):
    """Holds the envs' current observations, recurrent state and episode-start flags between
    rollouts of ``nsteps`` steps, plus the returns of the last 100 finished episodes."""

    def __init__(self, env: VecEnv, model: Any, nsteps: int, gamma: float = 0.99):
        self.env = env
        self.gamma = gamma
        self.model = model
        self.nenv = env.num_envs
        self.nsteps = nsteps
        self.batch_ob_shape = (self.nenv * nsteps, *env.observation_space.shape)
        self.obs = env.reset()
        self.states = model.initial_state(self.nenv)
        self.episode_starts = np.ones(self.nenv, dtype=np.float32)
        self.ep_infos: deque[dict[str, Any]] = deque(maxlen=100)
        space = env.action_space
        self._clip = (space.low, space.high) if isinstance(space, gym.spaces.Box) else None

    def env_actions(self, actions: np.ndarray) -> np.ndarray:
        """Box actions are clipped to the space before they reach the env; the unclipped
        sample is what the policy is trained on."""
        return np.clip(actions, *self._clip) if self._clip is not None else actions

    def collect_episodes(self, infos: list[dict[str, Any]]) -> None:
        for info in infos:
            episode = info.get("episode")
            if episode is not None:
                self.ep_infos.append(episode)

    @abstractmethod
    def run(self) -> Any:
        """Collect one rollout."""

    def truncation_bootstrap(self, truncated: np.ndarray, infos: list[dict[str, Any]],
                             states: np.ndarray) -> np.ndarray:
        """``gamma * V(final observation)`` for envs cut by a time limit, 0 elsewhere.

        A truncated episode did not end in the MDP: its return continues past the cut, so we
        bootstrap from the value of the observation the env was in (not the reset one).
        """
        bonus = np.zeros(self.nenv, dtype=np.float32)
        idx = np.flatnonzero(truncated)
        if idx.size:
            final = np.stack([infos[i]["final_observation"] for i in idx])
            values = self.model.value(final, states[idx], np.zeros(idx.size, np.float32))
            bonus[idx] = self.gamma * values
        return bonus
