"""DQN's model: the Q-learning family's model (rlbase.common.families.q_learning.model) with
DQN's loss (double Q-learning targets, the Huber loss), prioritized replay and parameter noise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.common import nested
from rlbase.common.errors import RLBaseError
from rlbase.common.families.q_learning.losses import huber, td_target
from rlbase.common.families.q_learning.model import QLearningModel, xla_pays_off
from rlbase.common.families.q_learning.networks import (
    QNetwork,
    check_action_space,
    network_builder_kwargs,
)
from rlbase.common.networks.policies import has_images
from rlbase.common.tf_util import configure_threads
from rlbase.dqn.config import DQNConfig
from rlbase.dqn.losses import next_values
from rlbase.dqn.param_noise import PerturbedQ, kl_threshold


class Model(QLearningModel[DQNConfig]):
    """Online and target :class:`QNetwork`, the optimizer, the replay buffer, acting and the
    compiled update (rlbase.common.families.q_learning.model.QLearningModel), with DQN's
    loss.

    make_net: builds a fresh QNetwork for the env's spaces (called for every copy).
    num_envs: envs per vectorized step (the frame-stack buffer's row width).
    network_kwargs: the network builder's arguments.
    config: DQN's parameters (gamma, double_q, max_grad_norm, gradient_steps, batch_size,
        buffer_size, prioritized_replay, param_noise, seed, ...).
    jit_compile: compile the update with XLA.
    """

    algorithm = "dqn"
    stat_names = ("loss", "grad_norm", "q_mean", "td_abs_mean")

    param_noise: PerturbedQ | None

    def __init__(self, make_net: Callable[[], QNetwork], num_envs: int,
                 network_kwargs: dict[str, Any], config: DQNConfig, jit_compile: bool = False):
        self.double_q = config.double_q
        super().__init__(make_net, num_envs, network_kwargs, config, jit_compile)

    def make_param_noise(self, make_net: Callable[[], QNetwork]) -> PerturbedQ | None:
        if not self.config.param_noise:
            return None
        return PerturbedQ(self.q, make_net, self.mirror is not None, self._act_jit)

    def priority_alpha(self) -> float | None:
        config = self.config
        return config.prioritized_replay_alpha if config.prioritized_replay else None

    # -- the loss -------------------------------------------------------------------------------
    def fixed_targets(self, rewards: tf.Tensor, dones: tf.Tensor, next_target: tf.Tensor
                      ) -> tf.Tensor | None:
        if self.double_q:  # the online network's choice changes with every step
            return None
        return td_target(rewards, dones, self.gamma, next_values(next_target, None))

    def step_loss(self, obs: Any, actions: tf.Tensor, rewards: tf.Tensor, next_obs: Any,
                  dones: tf.Tensor, weights: tf.Tensor, next_target: tf.Tensor,
                  targets: tf.Tensor | None) -> tuple[tf.Tensor, tf.Tensor, list[tf.Tensor]]:
        """The importance-weighted Huber loss of the TD error."""
        if targets is None:
            # One forward pass over obs and next_obs together (one bigger matmul).
            b = self.batch_size
            both = self.q(tf.nest.map_structure(lambda x, y: tf.concat([x, y], axis=0),
                                                obs, next_obs))
            q_all, next_online = both[:b], tf.stop_gradient(both[b:])
            targets = td_target(rewards, dones, self.gamma,
                                next_values(next_target, next_online))
        else:
            q_all = self.q(obs)
        q_taken = tf.gather(q_all, actions, batch_dims=1)
        td = q_taken - tf.stop_gradient(targets)
        loss = tf.reduce_mean(weights * huber(td))
        return loss, td, [tf.reduce_mean(q_taken), tf.reduce_mean(tf.abs(td))]

    # -- Baselines' act -------------------------------------------------------------------------
    def __call__(self, obs: Any, stochastic: bool = True, update_eps: float = -1.0
                 ) -> np.ndarray:
        """Baselines' ``act(obs[None])``: actions for a batch of observations, epsilon-greedy
        with the model's exploration rate (``stochastic=False``: greedy); ``update_eps >= 0``
        sets that rate first, for this and later calls."""
        shape = self.observation_space.shape
        if shape is not None and not nested.is_nested(self.observation_space) and \
                np.ndim(obs) == len(shape):
            raise RLBaseError(f"act takes a batch of observations, got one observation of "
                              f"shape {np.shape(obs)}: write act(obs[None])")
        if update_eps >= 0:
            self.epsilon = float(update_eps)
        return self.step(obs, deterministic=not stochastic)[0]

    # -- parameter noise ------------------------------------------------------------------------
    def _noise_seed(self) -> np.ndarray:
        return self.rng.integers(0, 2**31 - 1, size=2, dtype=np.int64)

    def perturb(self, scale: float) -> None:
        """Draw a new perturbation of the online weights into the acting copy."""
        assert self.param_noise is not None
        self.param_noise.perturb(scale, self._noise_seed())

    def perturbation_distance(self, obs: Any, scale: float) -> float:
        """Mean KL between the softmax of Q and of Q under a fresh perturbation of ``scale``."""
        assert self.param_noise is not None
        return self.param_noise.distance(obs, scale, self._noise_seed())

    def adapt_param_noise(self, epsilon: float) -> None:
        """Move the noise scale towards the KL that epsilon-greedy with ``epsilon`` would
        cause, measured on a replay minibatch."""
        assert self.param_noise is not None
        buffer, adaptation = self.replay_buffer, self.param_noise.adaptation
        sample = self.raw_replay.normalize_obs(
            buffer.get(buffer.sample_indices(self.batch_size, self.rng)).obs)
        distance = self.perturbation_distance(sample, adaptation.scale)
        adaptation.adapt(distance, kl_threshold(epsilon, self.num_actions))

    # -- checkpoints ----------------------------------------------------------------------------
    def resume_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The shared state (replay buffer, generator, epsilon, updates, best-model rule) and
        the parameter noise's scale."""
        meta, arrays = super().resume_state()
        noise = self.param_noise
        meta["noise_scale"] = None if noise is None else noise.adaptation.scale
        return meta, arrays

    def restore_resume_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super().restore_resume_state(meta, arrays)
        if self.param_noise is not None and meta.get("noise_scale") is not None:
            self.param_noise.adaptation.scale = float(meta["noise_scale"])


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: DQNConfig, *,
                total_timesteps: int = 0) -> Model:
    """DQN's model for these spaces and ``num_envs`` envs (learn() and rlbase.DQN call this).

    network: a registered feed-forward network name or a builder callable (the torso).
    network_kwargs: the network builder's arguments; ``layer_norm`` there also normalizes the
        heads (Baselines' deepq), and entries rlbase 0.1 saved beside them (hiddens, dueling)
        are set aside.
    config: DQN's parameters (``jit_compile`` None: XLA for runs of at least 2000 gradient
        steps of ``total_timesteps``, except convnets on a CPU).
    """
    check_action_space(action_space)
    configure_threads("convnet" if has_images(observation_space) else "small")
    kwargs, layer_norm = network_builder_kwargs(network, network_kwargs, config.layer_norm)
    config = config.replace(layer_norm=layer_norm)

    def make_net() -> QNetwork:
        return QNetwork(observation_space, action_space, network, config.hiddens,
                        config.dueling, layer_norm, kwargs)

    jit = config.jit_compile
    if jit is None:
        jit = xla_pays_off(config.learning_starts, config.train_freq, config.gradient_steps,
                           total_timesteps, observation_space)
    return Model(make_net, num_envs, kwargs, config, jit_compile=bool(jit))
