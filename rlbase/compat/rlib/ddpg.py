"""rlib's DDPG (with TD3's options) over rlbase's DDPG (rlbase.compat.sb3.DDPG)."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.compat.rlib.base import BaseAlgorithm, arguments, network
from rlbase.compat.rlib.envs import EnvSpec, clip_observations
from rlbase.compat.sb3 import DDPG as RLBaseDDPG


class DDPG(BaseAlgorithm):
    """Deep deterministic policy gradient with TD3's options (twin critics, delayed policy
    updates, target policy noise): a policy mu(s) trained to maximize Q(s, mu(s)) and Q
    trained towards r + discount * Q_target(s', mu_target(s') + noise). An iteration is an
    episode; ``num_updates_per_iter`` gradient steps run every episode-length-cap env steps.

    An example, every parameter and the rlbase setting it becomes: rlbase/docs/rlib.md.
    """

    api_class = RLBaseDDPG
    unit = "episodes"
    keeps_best = True

    def __init__(self, env_kwargs: dict[str, Any], mu_kwargs: dict[str, Any],
                 q_kwargs: dict[str, Any], max_episode_length: int = -1,
                 max_total_reward: float = -1, save_folder: str = "ddpg", q_lr: float = 3e-4,
                 mu_lr: float = 3e-4, lr_annealing: bool = True, action_noise: float = 0.1,
                 target_noise: float = 0.2, num_updates_per_iter: int = 10,
                 delay_policy_update: int = 2, twin_q: bool = True, discount: float = 0.99,
                 num_episodes: int = 1000, learning_starts: int = 50_000,
                 target_update_tau: float = 0.01, verbose: bool = True, test_every: int = 10,
                 num_test_episodes: int = 10, batch_size: int = 64,
                 size_replay_buffer: int = 100_000, max_grad_norm: float = 10,
                 normalize_observation: bool = False, use_norm_wrappers: bool = True,
                 seed: int | None = 42):
        kwargs = arguments(locals())
        spec = EnvSpec(env_kwargs, max_episode_length, max_total_reward,
                       wrappers=[clip_observations] if use_norm_wrappers else [],
                       normalize_observation=bool(normalize_observation),
                       normalize_reward=bool(use_norm_wrappers))
        super().__init__(kwargs, spec, num_envs=1, save_folder=save_folder, seed=seed,
                         test_every=test_every, num_test_episodes=num_test_episodes,
                         budget=num_episodes, verbose=verbose)
        space = self.action_space
        if not isinstance(space, gym.spaces.Box):
            raise RLBaseError(f"DDPG needs a continuous (Box) action space, got {space}")
        mu, q = network("DDPG", "mu_kwargs", mu_kwargs), network("DDPG", "q_kwargs", q_kwargs)
        if mu != q:
            raise RLBaseError(f"DDPG: rlbase builds the policy and the Q-function from one "
                              f"network shape; give mu_kwargs and q_kwargs the same "
                              f"hidden_sizes and activation (got {mu_kwargs} and {q_kwargs})")
        if self.episode_cap is None:
            raise RLBaseError("DDPG: rlbase trains every train_freq env steps, not after each "
                              "episode: give max_episode_length (num_updates_per_iter gradient "
                              "steps then run every max_episode_length env steps)")
        # rlbase's actor acts in [-1, 1]; rlib's noises are in the env's action units.
        half = np.unique((space.high - space.low) / 2.0)
        if len(half) != 1 and (action_noise or target_noise):
            raise RLBaseError(f"DDPG: action_noise and target_noise are in the env's action "
                              f"units, and the dimensions of {space} have different ranges; "
                              "rlbase's noises have one scale in [-1, 1] units: use rlbase's "
                              "DDPG (noise_type) directly, or rescale the actions")
        scale = float(half[0])
        self.lr_annealing = bool(lr_annealing)
        self.q_lr, self.mu_lr = q_lr, mu_lr
        self._build("mlp", mu, {
            "critic_lr": q_lr, "actor_lr": mu_lr,
            "noise_type": f"normal_{action_noise / scale}" if action_noise else "none",
            "target_noise": target_noise / scale, "target_noise_clip": math.inf,
            "train_freq": self.episode_cap, "gradient_steps": num_updates_per_iter,
            "policy_delay": delay_policy_update, "twin_q": twin_q, "gamma": discount,
            "learning_starts": max(learning_starts, batch_size), "tau": target_update_tau,
            "batch_size": batch_size, "buffer_size": size_replay_buffer,
            "max_grad_norm": max_grad_norm,
            # VecNormalize normalizes (rlib's wrappers); rlib's critic has no L2 penalty.
            "normalize_observations": False, "critic_l2_reg": 0.0})

    def _run(self) -> None:
        if not self.lr_annealing:
            super()._run()
            return
        # Linear annealing by episode: rlbase's DDPG reads its learning rates from the model's
        # config at each learn() call, so one call per episode, each with its rates.
        inner = self.model.model
        assert inner is not None
        start = self._target - self.budget
        while self.current_iteration < self._target:
            # rlib's rate for episode k of the run: base * (1 - (k - 1) / (num_episodes - 1)).
            k = self.current_iteration - start
            factor = 1.0 - max(k - 1, 0) / max(self.budget - 1, 1)
            inner.config = inner.config.replace(actor_lr=self.mu_lr * factor,
                                                critic_lr=self.q_lr * factor)
            before = self.current_iteration
            self._learn(1)
            if self.current_iteration == before:  # stopped without finishing it (Ctrl-C)
                break

    def _callback(self, agent: Any, info: dict[str, Any]) -> bool:
        keep_going = super()._callback(agent, info)
        # With lr_annealing each learn() call plays one episode.
        return keep_going and not (self.lr_annealing and info["episodes"] >= 1)
