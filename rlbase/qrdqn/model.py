"""QR-DQN's model: the Q-learning family's model (rlbase.common.families.q_learning.model:
networks, replay, acting, target copies, the compiled update loop) with the quantile
regression loss of rlbase.qrdqn.losses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import tensorflow as tf

from rlbase.common.families.q_learning.model import QLearningModel, xla_pays_off
from rlbase.common.families.q_learning.networks import (
    QNetwork,
    check_action_space,
    network_builder_kwargs,
)
from rlbase.common.networks.policies import has_images
from rlbase.common.tf_util import configure_threads
from rlbase.qrdqn.config import QRDQNConfig
from rlbase.qrdqn.losses import quantile_huber_loss, target_quantiles
from rlbase.qrdqn.networks import quantile_network


class Model(QLearningModel[QRDQNConfig]):
    """Online and target quantile networks, Adam (epsilon 0.01 / batch_size), the replay
    buffer, epsilon-greedy acting on the quantiles' mean and the compiled update.

    make_net: builds a fresh quantile network for the env's spaces (called for every copy).
    num_envs: envs per vectorized step (the frame-stack buffer's row width).
    network_kwargs: the network builder's arguments.
    config: QR-DQN's parameters.
    jit_compile: compile the update with XLA.
    """

    algorithm = "qrdqn"
    stat_names = ("loss", "grad_norm", "q_mean")

    def __init__(self, make_net: Callable[[], QNetwork], num_envs: int,
                 network_kwargs: dict[str, Any], config: QRDQNConfig, jit_compile: bool = False):
        # The paper's Adam epsilon 0.01/32 for its batches of 32; sb3-contrib's 0.01/batch.
        super().__init__(make_net, num_envs, network_kwargs, config, jit_compile,
                         adam_epsilon=0.01 / config.batch_size)

    def fixed_targets(self, rewards: tf.Tensor, dones: tf.Tensor, next_target: tf.Tensor
                      ) -> tf.Tensor:
        # a* is the target network's own greedy action: every minibatch's targets at once.
        return target_quantiles(rewards, dones, self.gamma, next_target)

    def step_loss(self, obs: Any, actions: tf.Tensor, rewards: tf.Tensor, next_obs: Any,
                  dones: tf.Tensor, weights: tf.Tensor, next_target: tf.Tensor,
                  targets: tf.Tensor | None) -> tuple[tf.Tensor, tf.Tensor, list[tf.Tensor]]:
        """The mean quantile Huber loss of the taken actions' quantiles."""
        assert targets is not None
        taken = tf.gather(self.q(obs), actions, batch_dims=1)  # [B, N]
        per_transition = quantile_huber_loss(taken, tf.stop_gradient(targets))
        loss = tf.reduce_mean(weights * per_transition)
        return loss, per_transition, [tf.reduce_mean(taken)]


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: QRDQNConfig, *,
                total_timesteps: int = 0) -> Model:
    """QR-DQN's model for these spaces and ``num_envs`` envs (learn() and rlbase.QRDQN call
    this).

    network: a registered feed-forward network name or a builder callable (the torso).
    network_kwargs: the network builder's arguments.
    config: QR-DQN's parameters (``jit_compile`` None: XLA for runs of at least 2000
        gradient steps of ``total_timesteps``, except convnets on a CPU).
    """
    check_action_space(action_space, "qrdqn")
    configure_threads("convnet" if has_images(observation_space) else "small")
    kwargs, _ = network_builder_kwargs(network, network_kwargs, False)

    def make_net() -> QNetwork:
        return quantile_network(observation_space, action_space, network, config.hiddens,
                                config.n_quantiles, kwargs)

    jit = config.jit_compile
    if jit is None:
        jit = xla_pays_off(config.learning_starts, config.train_freq, config.gradient_steps,
                           total_timesteps, observation_space)
    return Model(make_net, num_envs, kwargs, config, jit_compile=bool(jit))
