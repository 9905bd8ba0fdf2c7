"""ACER's rollout collector: ``nsteps``-long sequences per env with the behaviour policy's
action probabilities (needed for the importance weights when the sequence is replayed).

Behind a VecNormalize each rollout also comes raw (``Sequences.raw``: what the env produced
below the normalization), which is what the replay buffer stores (rlbase.common.buffers.raw_replay.
RawReplay): the on-policy update uses the rollout as collected, a replayed one is normalized
with the statistics of the moment it is replayed. The behaviour probabilities are those of the
actions actually taken, whatever the normalization: they stay the behaviour policy's; only the
current policy's inputs, the observations, are normalized anew.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common import nested
from rlbase.common.buffers.raw_replay import RawReplay
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.episodes import EpisodeStats
from rlbase.common.loops.runners import AbstractEnvRunner
from rlbase.common.vec_env import VecEnv, vec_step


@dataclass
class Sequences:
    """One ``nsteps`` sequence per env, env-major.

    A step cut by a time limit keeps its raw reward: the training call adds
    ``gamma * V(final observation)`` with the weights it trains, so a replayed truncation
    bootstraps from the current network, not from the one that collected it. Observations
    (``obs``, ``final_obs``) are nested for Dict/Tuple spaces (rlbase.common.nested).
    """

    # [num_envs, nsteps + 1, *obs_shape]: the last one bootstraps the sequence
    obs: Any
    actions: np.ndarray      # [num_envs, nsteps]
    rewards: np.ndarray      # [num_envs, nsteps], as the env gave them
    # [num_envs, nsteps], 1 where the episode ended (either way) at that step
    dones: np.ndarray
    mus: np.ndarray          # [num_envs, nsteps, nact], the behaviour policy's probabilities
    starts: np.ndarray       # [num_envs, nsteps + 1], 1 where obs starts an episode (resets LSTMs)
    state: np.ndarray        # [num_envs, state_size], recurrent state before obs[:, 0]
    truncated: np.ndarray    # [num_envs, nsteps], 1 where a time limit (not the MDP) ended it
    final_obs: Any           # [K, *obs_shape], the truncated steps' last observations, in the
    #                          order of np.flatnonzero(truncated) (env-major)
    final_state: np.ndarray  # [K, state_size], the recurrent state after each of those steps
    raw: Sequences | None = None  # the same rollout below the VecNormalize (None: none)


class Runner(AbstractEnvRunner):
    """Steps the envs with the current policy, ``nsteps`` steps per :meth:`run`; finished
    episodes go to ``episodes`` (the training loop's). With ``raw`` (a replay's view of
    the env) behind a VecNormalize, each rollout also comes raw (``Sequences.raw``)."""

    def __init__(self, env: VecEnv, model: Any, nsteps: int,
                 episodes: EpisodeStats | None = None, raw: RawReplay | None = None):
        super().__init__(env, model, nsteps, episodes=episodes)
        self.raw = raw if raw is not None and raw.stats is not None else None
        space = env.action_space
        if not isinstance(space, gym.spaces.Discrete):
            raise RLBaseError(f"ACER needs a Discrete action space, got {space}")
        self.nact = int(space.n)

    def run(self) -> Sequences:
        num_envs, nsteps = self.num_envs, self.nsteps
        ob_space, ac_space = self.env.observation_space, self.env.action_space
        obs = nested.empty(ob_space, (num_envs, nsteps + 1))
        raw = None if self.raw is None else _RawRecord(self.raw, ob_space, num_envs, nsteps)
        actions = np.empty((num_envs, nsteps), dtype=ac_space.dtype)
        rewards = np.empty((num_envs, nsteps), dtype=np.float32)
        dones = np.empty((num_envs, nsteps), dtype=np.float32)
        truncs = np.zeros((num_envs, nsteps), dtype=np.float32)
        mus = np.empty((num_envs, nsteps, self.nact), dtype=np.float32)
        starts = np.empty((num_envs, nsteps + 1), dtype=np.float32)
        finals: list[tuple[int, Any, np.ndarray]] = []  # (env * nsteps + t, obs, state)
        start_state = self.states
        for t in range(nsteps):
            acts, probs, states = self.model.act_with_probabilities(self.obs, self.states,
                                                                    self.episode_starts)
            nested.assign(ob_space, obs, (slice(None), t), self.obs)
            if raw is not None:
                raw.observe(t, self.obs)
            actions[:, t], mus[:, t] = acts, probs
            starts[:, t] = self.episode_starts
            next_obs, rew, terminated, truncated, infos = vec_step(self.env, acts)
            cut = np.asarray(truncated, bool) & ~np.asarray(terminated, bool)
            for i in np.flatnonzero(cut):
                finals.append((int(i) * nsteps + t, infos[i]["final_observation"], states[i]))
            if raw is not None:
                raw.step(t, rew, {int(i) * nsteps + t: infos[i] for i in np.flatnonzero(cut)})
            self.collect_episodes(infos)
            done = (terminated | truncated).astype(np.float32)
            rewards[:, t], dones[:, t], truncs[:, t] = rew, done, cut
            self.obs, self.states, self.episode_starts = next_obs, states, done
        nested.assign(ob_space, obs, (slice(None), nsteps), self.obs)
        starts[:, nsteps] = self.episode_starts
        finals.sort(key=lambda f: f[0])  # env-major, as np.flatnonzero(truncs)
        final_obs = _stacked(ob_space, [ob for _, ob, _ in finals])
        final_state = np.array([st for _, _, st in finals], np.float32).reshape(
            len(finals), start_state.shape[1])
        seq = Sequences(obs, actions, rewards, dones, mus, starts, start_state, truncs,
                        final_obs, final_state)
        if raw is not None:
            raw.observe(nsteps, self.obs)
            seq.raw = raw.sequences(seq)
        return seq


def _stacked(space: gym.Space, rows: list[Any]) -> Any:
    """``rows`` (observations of ``space``) as one ``[len(rows), ...]`` batch."""
    out = nested.zeros(space, (len(rows),))
    for j, ob in enumerate(rows):
        nested.assign(space, out, j, ob)
    return out


class _RawRecord:
    """The raw side of one rollout (what the env produced below the VecNormalize)."""

    def __init__(self, raw: RawReplay, space: gym.Space, num_envs: int, nsteps: int):
        self.raw, self.space = raw, raw.stored_space(space)
        self.obs = nested.empty(self.space, (num_envs, nsteps + 1))
        self.rewards = np.empty((num_envs, nsteps), dtype=np.float32)
        self.finals: dict[int, Any] = {}  # env * nsteps + t -> final observation

    def observe(self, t: int, obs: Any) -> None:
        """Record the raw version of ``obs``, the env's last, as observation ``t``."""
        nested.assign(self.space, self.obs, (slice(None), t), self.raw.observations(obs))

    def step(self, t: int, rewards: np.ndarray, cut_infos: dict[int, dict[str, Any]]) -> None:
        """Record step ``t``'s raw rewards and the raw final observations of the truncated
        steps (``cut_infos``: their infos by ``env * nsteps + t``)."""
        self.rewards[:, t] = self.raw.rewards(rewards)
        self.finals.update((key, self.raw.final_observation(info))
                           for key, info in cut_infos.items())

    def sequences(self, seq: Sequences) -> Sequences:
        """``seq`` with the raw observations and rewards."""
        final_obs = _stacked(self.space, [self.finals[k] for k in sorted(self.finals)])
        return replace(seq, obs=self.obs, rewards=self.rewards, final_obs=final_obs)
