"""The on-policy rollout collector shared by A2C and PPO: ``nsteps`` steps of every env,
stored env-major (row ``env * nsteps + t``).

It records only what the policy cannot recompute: observations, actions, rewards, episode ends
and recurrent state. Values and log-probabilities of the behaviour policy are recomputed inside
the training call, where the weights are still those that acted, so acting needs no value
head (and can run in numpy)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rlbase.common import nested
from rlbase.common.loops.action_masks import ActionMaskReader
from rlbase.common.loops.episodes import EpisodeStats
from rlbase.common.loops.runners import AbstractEnvRunner
from rlbase.common.vec_env import VecEnv, vec_step

if TYPE_CHECKING:
    from rlbase.common.loops.training_loop import RolloutHooks


@dataclass
class Rollout:
    obs: Any                 # [num_envs * nsteps, *obs_shape], row env * nsteps + t (nested for
    #                          Dict/Tuple spaces, see rlbase.common.nested)
    actions: np.ndarray      # [num_envs * nsteps, *action_shape]
    rewards: np.ndarray      # [num_envs, nsteps], truncated steps include gamma * V(final obs)
    bootstraps: np.ndarray   # [num_envs, nsteps], that gamma * V(final obs) part (0 elsewhere):
    #                          who replaces the env's rewards (GAIL) keeps it
    dones: np.ndarray        # [num_envs, nsteps], 1 where the episode ended at that step
    starts: np.ndarray       # [num_envs * nsteps], 1 where an episode started (resets LSTM state)
    state: np.ndarray        # [num_envs, state_size], recurrent state before the rollout
    last_obs: Any            # [num_envs, *obs_shape], the observation after the rollout
    last_state: np.ndarray
    last_starts: np.ndarray
    action_masks: np.ndarray | None = None       # [num_envs * nsteps, logits] bool: the valid
    #                                              actions each step was taken among (None: all)
    last_action_masks: np.ndarray | None = None  # [num_envs, logits], those of last_obs


class RolloutRunner(AbstractEnvRunner):
    """Steps the envs with the current policy.

    ``pending`` holds the policy's outputs for the current observations when the last
    training call already computed them (one compiled call fewer per rollout).
    """

    def __init__(self, env: VecEnv, model: Any, nsteps: int = 5, gamma: float = 0.99,
                 episodes: EpisodeStats | None = None, action_masks: bool | str = False):
        super().__init__(env, model, nsteps, gamma, episodes)
        # The envs' action masks (see rlbase.common.loops.action_masks), read after every
        # reset and step; acting, and the update's log-probabilities, use the same ones.
        self.mask_reader = ActionMaskReader.for_env(env, action_masks)
        self.action_masks = None if self.mask_reader is None else self.mask_reader.after_reset()
        # After a resume at an episode boundary: the checkpointed run's step on these very
        # observations, so the resumed run takes the actions the uninterrupted one took.
        self.pending: tuple[np.ndarray, ...] | None = model.resumed_step(self.obs)

    def run(self, hooks: RolloutHooks | None = None) -> Rollout | None:
        """The next rollout; None when an SB3 callback's ``on_step`` stopped training."""
        num_envs, nsteps = self.num_envs, self.nsteps
        obs_space, ac_space = self.env.observation_space, self.env.action_space
        # Stored env-major as they come ([env, t]): the rollout is then a reshape, not a copy.
        mb_obs = nested.empty(obs_space, (num_envs, nsteps))
        mb_actions = np.empty((num_envs, nsteps, *(ac_space.shape or ())), dtype=ac_space.dtype)
        mb_rewards, mb_dones, mb_starts = (np.empty((num_envs, nsteps), np.float32)
                                           for _ in range(3))
        mb_bootstraps = np.zeros((num_envs, nsteps), dtype=np.float32)
        reader = self.mask_reader
        mb_masks = None if self.action_masks is None else \
            np.empty((num_envs, nsteps, self.action_masks.shape[1]), bool)
        start_state = self.states
        if hooks is not None:
            hooks.start()
        for t in range(nsteps):
            if self.pending is not None:
                actions, _, states, _ = self.pending
                self.pending = None
            elif mb_masks is None:
                actions, states = self.model.act(self.obs, self.states, self.episode_starts)
            else:
                actions, states = self.model.act(self.obs, self.states, self.episode_starts,
                                                 action_masks=self.action_masks)
            if mb_masks is not None:
                mb_masks[:, t] = self.action_masks
            nested.assign(obs_space, mb_obs, (slice(None), t), self.obs)
            mb_actions[:, t] = actions
            mb_starts[:, t] = self.episode_starts
            obs, env_rewards, terminated, truncated, infos = \
                vec_step(self.env, self.env_actions(actions))
            if truncated.any():
                mb_bootstraps[:, t] = self.truncation_bootstrap(truncated & ~terminated, infos,
                                                                states)
            mb_rewards[:, t] = env_rewards.astype(np.float32) + mb_bootstraps[:, t]
            self.collect_episodes(infos)
            done = (terminated | truncated).astype(np.float32)
            mb_dones[:, t] = done
            if reader is not None:
                self.action_masks = reader.after_step(infos, terminated | truncated)
            self.obs, self.states, self.episode_starts = obs, states, done
            if hooks is not None and not hooks.step((t + 1) * num_envs, {
                    "new_obs": obs, "rewards": env_rewards, "dones": done, "infos": infos,
                    "actions": actions, "n_steps": t}):
                return None
        if hooks is not None:
            hooks.end()
        return Rollout(
            obs=nested.pack(obs_space, [_rows(x) for x in nested.flatten(obs_space, mb_obs)]),
            actions=_rows(mb_actions), rewards=mb_rewards, bootstraps=mb_bootstraps,
            dones=mb_dones, starts=mb_starts.ravel(), state=start_state, last_obs=self.obs,
            last_state=self.states, last_starts=self.episode_starts,
            action_masks=None if mb_masks is None else _rows(mb_masks),
            last_action_masks=self.action_masks)


def _rows(x: np.ndarray) -> np.ndarray:
    """[num_envs, nsteps, ...] -> [num_envs * nsteps, ...] (a view)."""
    return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])
