"""Soft Actor-Critic (Haarnoja et al. 2018, with the learned temperature of "Soft Actor-Critic
Algorithms and Applications"), as Stable-Baselines3 runs it."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from rlbase.common.learning import start_learning
from rlbase.common.loop import LoopOptions
from rlbase.common.loops.off_policy import OffPolicyHooks, run_off_policy
from rlbase.common.vec_env import VecEnv
from rlbase.sac.config import CONFIG, SACConfig
from rlbase.sac.model import Model, build_model

LOSSES = ("critic_loss", "actor_loss")
C = SACConfig


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(1e6),
          seed: int | None = None, *, lr: float | Callable[[float], float] = C.lr,
          buffer_size: int = C.buffer_size, learning_starts: int = C.learning_starts,
          replay_buffer_class: str | None = C.replay_buffer_class,
          replay_buffer_kwargs: dict | None = C.replay_buffer_kwargs,
          batch_size: int = C.batch_size, tau: float = C.tau, gamma: float = C.gamma,
          train_freq: int = C.train_freq, gradient_steps: int = C.gradient_steps,
          ent_coef: str | float = C.ent_coef,
          target_update_gradient_steps: int = C.target_update_gradient_steps,
          target_entropy: float | str = C.target_entropy,
          jit_compile: bool | None = C.jit_compile, log_interval: int = C.log_interval,
          eval_freq: int = C.eval_freq, eval_episodes: int = C.eval_episodes,
          checkpoint_interval: int = C.checkpoint_interval,
          precision: str = C.precision,
          eval_env: VecEnv | Any | None = None,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_path: str | None = None,
          resume: bool = False, **network_kwargs: Any) -> Model:
    """Train a squashed-Gaussian actor, twin critics and the entropy coefficient with SAC and
    return the :class:`~rlbase.sac.model.Model`.

    The keyword arguments from ``lr`` to ``precision`` are the fields of
    :class:`~rlbase.sac.config.SACConfig` (type, unit, range and meaning there, and in
    rlbase/docs/algorithms/sac.md); Stable-Baselines3's names (``learning_rate``,
    ``target_update_interval``, ``train_freq=(n, "step")``, ...) are accepted too.

    network: a feed-forward registry network name ('mlp', ...) or builder, the torso of the
        actor and of each critic.
    env: a VecEnv with a Box action space (a gymnasium env or an env id is wrapped).
    total_timesteps: env steps to train for, summed over envs.
    seed: seed of python, numpy, TensorFlow, the envs, the policy's noise and the replay
        sampling.
    eval_env: an env (or env id, seeded with seed + 1000) to evaluate the deterministic
        policy (tanh of the Gaussian's mean) on.
    callback: called after every vectorized env step as ``callback(model, info)``; returning
        False stops.
    load_path: continue from this saved model (its network is used).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints); a checkpoint
        holds the model, replay buffer and generators.
    resume: continue from the newest checkpoint in checkpoint_path (total_timesteps counts
        the whole run, including the steps done before the checkpoint).
    **network_kwargs: passed to the network builder ('mlp': num_layers (2), num_hidden (256
        here), activation (relu here), layer_sizes, layer_norm).
    """
    model, env, options = start_learning(CONFIG, build_model, locals())
    return train(model, env, total_timesteps, options)


class SACHooks(OffPolicyHooks[Model]):
    """SAC's part of the off-policy loop: sampled actions, trained before acting."""

    loss_names = LOSSES

    def random_actions(self) -> np.ndarray:
        return self.model.random_actions()

    def act(self, obs: Any, t: int) -> np.ndarray:
        return self.model.act(obs)

    def train_and_act(self, obs: Any, phases: int, lr: float
                      ) -> tuple[dict[str, float], np.ndarray]:
        return self.model.train_and_act(obs, lr, phases)

    def to_env(self, actions: np.ndarray) -> np.ndarray:
        return self.model.to_env(actions)

    def n_updates(self) -> int:
        return self.model.grad_steps


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run SAC's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all)."""
    run_off_policy(SACHooks(model, model.config.lr), env, total_timesteps, options)
    return model
