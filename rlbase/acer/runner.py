"""ACER's rollout collector: ``nsteps``-long sequences per env with the behaviour policy's
action probabilities (needed for the importance weights when the sequence is replayed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rlbase.common.runners import AbstractEnvRunner
from rlbase.common.vec_env import VecEnv


@dataclass
class Sequences:
    """One ``nsteps`` sequence per env, env-major."""

    obs: np.ndarray      # [nenv, nsteps + 1, *obs_shape]: the last one bootstraps the sequence
    actions: np.ndarray  # [nenv, nsteps]
    rewards: np.ndarray  # [nenv, nsteps], truncated steps include gamma * V(final obs)
    dones: np.ndarray    # [nenv, nsteps], 1 where the episode ended at that step
    mus: np.ndarray      # [nenv, nsteps, nact], the behaviour policy's probabilities
    starts: np.ndarray   # [nenv, nsteps + 1], 1 where obs starts an episode (resets LSTMs)
    state: np.ndarray    # [nenv, state_size], recurrent state before obs[:, 0]


class Runner(AbstractEnvRunner):
    """Steps the envs with the current policy, ``nsteps`` steps per :meth:`run`."""

    def __init__(self, env: VecEnv, model: Any, nsteps: int, gamma: float = 0.99):
        super().__init__(env, model, nsteps, gamma)
        self.nact = int(env.action_space.n)

    def run(self) -> Sequences:
        nenv, nsteps = self.nenv, self.nsteps
        ob_space, ac_space = self.env.observation_space, self.env.action_space
        obs = np.empty((nenv, nsteps + 1, *ob_space.shape), dtype=ob_space.dtype)
        actions = np.empty((nenv, nsteps), dtype=ac_space.dtype)
        rewards = np.empty((nenv, nsteps), dtype=np.float32)
        dones = np.empty((nenv, nsteps), dtype=np.float32)
        mus = np.empty((nenv, nsteps, self.nact), dtype=np.float32)
        starts = np.empty((nenv, nsteps + 1), dtype=np.float32)
        start_state = self.states
        for t in range(nsteps):
            acts, probs, states = self.model.act(self.obs, self.states, self.episode_starts)
            obs[:, t], actions[:, t], mus[:, t] = self.obs, acts, probs
            starts[:, t] = self.episode_starts
            next_obs, rew, terminated, truncated, infos = self.env.step(acts)
            rew = rew.astype(np.float32)
            if truncated.any():
                rew += self.truncation_bootstrap(truncated & ~terminated, infos, states)
            self.collect_episodes(infos)
            done = (terminated | truncated).astype(np.float32)
            rewards[:, t], dones[:, t] = rew, done
            self.obs, self.states, self.episode_starts = next_obs, states, done
        obs[:, nsteps], starts[:, nsteps] = self.obs, self.episode_starts
        return Sequences(obs, actions, rewards, dones, mus, starts, start_state)
