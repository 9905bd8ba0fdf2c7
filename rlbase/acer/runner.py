"""ACER's rollout collector: ``nsteps``-long sequences per env with the behaviour policy's
action probabilities (needed for the importance weights when the sequence is replayed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common import nested
from rlbase.common.episodes import EpisodeStats
from rlbase.common.errors import RLBaseError
from rlbase.common.runners import AbstractEnvRunner
from rlbase.common.vec_env import VecEnv


@dataclass
class Sequences:
    """One ``nsteps`` sequence per env, env-major.

    A step cut by a time limit keeps its raw reward: the training call adds
    ``gamma * V(final observation)`` with the weights it trains, so a replayed truncation
    bootstraps from the current network, not from the one that collected it. Observations
    (``obs``, ``final_obs``) are nested for Dict/Tuple spaces (rlbase.common.nested).
    """

    obs: Any                 # [nenv, nsteps + 1, *obs_shape]: the last one bootstraps the sequence
    actions: np.ndarray      # [nenv, nsteps]
    rewards: np.ndarray      # [nenv, nsteps], as the env gave them
    dones: np.ndarray        # [nenv, nsteps], 1 where the episode ended (either way) at that step
    mus: np.ndarray          # [nenv, nsteps, nact], the behaviour policy's probabilities
    starts: np.ndarray       # [nenv, nsteps + 1], 1 where obs starts an episode (resets LSTMs)
    state: np.ndarray        # [nenv, state_size], recurrent state before obs[:, 0]
    truncated: np.ndarray    # [nenv, nsteps], 1 where a time limit (not the MDP) ended it
    final_obs: Any           # [K, *obs_shape], the truncated steps' last observations, in the
    #                          order of np.flatnonzero(truncated) (env-major)
    final_state: np.ndarray  # [K, state_size], the recurrent state after each of those steps


class Runner(AbstractEnvRunner):
    """Steps the envs with the current policy, ``nsteps`` steps per :meth:`run`; finished
    episodes go to ``episodes`` (the training loop's)."""

    def __init__(self, env: VecEnv, model: Any, nsteps: int,
                 episodes: EpisodeStats | None = None):
        super().__init__(env, model, nsteps, episodes=episodes)
        space = env.action_space
        if not isinstance(space, gym.spaces.Discrete):
            raise RLBaseError(f"ACER needs a Discrete action space, got {space}")
        self.nact = int(space.n)

    def run(self) -> Sequences:
        nenv, nsteps = self.nenv, self.nsteps
        ob_space, ac_space = self.env.observation_space, self.env.action_space
        obs = nested.empty(ob_space, (nenv, nsteps + 1))
        actions = np.empty((nenv, nsteps), dtype=ac_space.dtype)
        rewards = np.empty((nenv, nsteps), dtype=np.float32)
        dones = np.empty((nenv, nsteps), dtype=np.float32)
        truncs = np.zeros((nenv, nsteps), dtype=np.float32)
        mus = np.empty((nenv, nsteps, self.nact), dtype=np.float32)
        starts = np.empty((nenv, nsteps + 1), dtype=np.float32)
        finals: list[tuple[int, Any, np.ndarray]] = []  # (env * nsteps + t, obs, state)
        start_state = self.states
        for t in range(nsteps):
            acts, probs, states = self.model.act_with_probabilities(self.obs, self.states,
                                                                    self.episode_starts)
            nested.assign(ob_space, obs, (slice(None), t), self.obs)
            actions[:, t], mus[:, t] = acts, probs
            starts[:, t] = self.episode_starts
            next_obs, rew, terminated, truncated, infos = self.env.step(acts)
            cut = np.asarray(truncated, bool) & ~np.asarray(terminated, bool)
            for i in np.flatnonzero(cut):
                finals.append((int(i) * nsteps + t, infos[i]["final_observation"], states[i]))
            self.collect_episodes(infos)
            done = (terminated | truncated).astype(np.float32)
            rewards[:, t], dones[:, t], truncs[:, t] = rew, done, cut
            self.obs, self.states, self.episode_starts = next_obs, states, done
        nested.assign(ob_space, obs, (slice(None), nsteps), self.obs)
        starts[:, nsteps] = self.episode_starts
        finals.sort(key=lambda f: f[0])  # env-major, as np.flatnonzero(truncs)
        final_obs = nested.zeros(ob_space, (len(finals),))
        final_state = np.zeros((len(finals), start_state.shape[1]), dtype=np.float32)
        for j, (_, ob, st) in enumerate(finals):
            nested.assign(ob_space, final_obs, j, ob)
            final_state[j] = st
        return Sequences(obs, actions, rewards, dones, mus, starts, start_state, truncs,
                         final_obs, final_state)
