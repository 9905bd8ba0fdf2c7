"""CrossQ's model: SAC's actor, temperature, replay buffer, acting and fused training call
(rlbase.common.families.soft_actor_critic), with batch-renormalized networks, no target
critics and its own gradient step; made by :func:`build_model` (what learn() and
rlbase.CrossQ call).

A gradient step, in sb3-contrib's order: the next actions a' ~ pi(.|s') from the actor in
inference mode; the critics in training mode on the joined batch [(s, a); (s', a')], their
loss against r + gamma (1 - done) (min_i Q_i(s', a') - alpha log pi(a'|s')); then, every
``policy_delay``-th step, the actor's actions at s in training mode, the temperature on their
log-probabilities, and the actor against the updated critics in inference mode (alpha is the
step's, read before the temperature moves).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.common.errors import RLBaseError
from rlbase.common.families.soft_actor_critic import (
    ADAM_EPSILON,
    SoftActorCriticAgent,
    checked_build_inputs,
)
from rlbase.common.families.squashed_gaussian import squashed_sample
from rlbase.common.schedules import get_schedule_fn
from rlbase.common.tf_util import Adam
from rlbase.crossq import losses
from rlbase.crossq.config import CrossQConfig
from rlbase.crossq.networks import CrossQCritic, NormalizedMLP

ALGORITHM = "crossq"
# sb3-contrib's CrossQ actor and critic optimizers: Adam with beta_1 0.5 (PyTorch's default is
# 0.9).
BETA_1, BETA_2 = 0.5, 0.999
# The 'mlp' network's keyword arguments this model's normalized MLP takes.
NETWORK_KEYS = ("layer_sizes", "num_layers", "num_hidden", "activation")


def actor_layer_sizes(network_kwargs: dict[str, Any]) -> tuple[int, ...]:
    """The actor's hidden widths: layer_sizes, or num_layers layers of num_hidden."""
    if network_kwargs.get("layer_sizes") is not None:
        return tuple(int(w) for w in network_kwargs["layer_sizes"])
    return (int(network_kwargs["num_hidden"]),) * int(network_kwargs["num_layers"])


class Model(SoftActorCriticAgent):
    """A CrossQ agent: a batch-renormalized squashed-Gaussian actor, ``n_critics``
    batch-renormalized critics (no targets), and a learned (or fixed) entropy coefficient.

    observation_space: a Box, or a Dict/Tuple space (SB3's MultiInputPolicy).
    action_space: a 1-D Box with finite bounds.
    num_envs: the envs it trains on.
    network / network_kwargs: 'mlp' and its layer_sizes (or num_layers, num_hidden) for the
        actor and activation for every network.
    config: CrossQ's parameters.
    """

    algorithm = ALGORITHM
    config: CrossQConfig
    #: the last entry counts this call's actor steps (popped before logging)
    stat_names: ClassVar[tuple[str, ...]] = ("critic_loss", "actor_loss", "ent_coef",
                                             "ent_coef_loss", "actor_updates")

    def __init__(self, observation_space: gym.Space, action_space: gym.spaces.Box,
                 num_envs: int, network: Any, network_kwargs: dict[str, Any],
                 config: CrossQConfig):
        if network != "mlp" or set(network_kwargs) - set(NETWORK_KEYS):
            raise RLBaseError(f"crossq builds its own batch-normalized MLPs: network must be "
                              f"'mlp' with keyword arguments among {', '.join(NETWORK_KEYS)}; "
                              f"got {network!r} with {sorted(network_kwargs)}")
        self.policy_delay = config.policy_delay
        self.norm = (config.batch_norm_momentum, config.batch_norm_eps,
                     config.renorm_warmup_steps) if config.batch_norm else None
        super().__init__(observation_space, action_space, num_envs, network, network_kwargs,
                         config)
        self.actor.torso.reinit_torch_linear()
        # sb3-contrib's betas for the actor and the critics (the temperature's Adam keeps
        # PyTorch's defaults there, as SAC's here).
        lr = get_schedule_fn(config.lr)(1.0)
        self.actor_optimizer, self.critic_optimizer = (
            Adam(learning_rate=lr, beta_1=BETA_1, beta_2=BETA_2, epsilon=ADAM_EPSILON)
            for _ in range(2))
        self.actor_optimizer.build(self.actor.trainable_variables)
        self.critic_optimizer.build(self.critic_variables)

    def torso(self) -> NormalizedMLP:
        """The actor's torso: normalized before every dense layer and after the last."""
        return NormalizedMLP(actor_layer_sizes(self.network_kwargs),
                             self.network_kwargs["activation"], self.norm, norm_output=True)

    def build_critics(self) -> tuple[list[CrossQCritic], list[CrossQCritic]]:
        """``n_critics`` critics and no targets."""
        sizes, activation = self.config.critic_layer_sizes, self.network_kwargs["activation"]
        return [CrossQCritic(self.observation_space, self.num_actions, sizes, activation,
                             self.norm) for _ in range(self.config.n_critics)], []

    def variable_groups(self) -> dict[str, Sequence[tf.Variable]]:
        groups = dict(super().variable_groups())
        for i, critic in enumerate(self.critics):  # (no targets to pair them with)
            groups[f"critic{i}"] = critic.weights
        return groups

    def train_and_act(self, obs: Any, lr: float, phases: int = 1
                      ) -> tuple[dict[str, float], np.ndarray]:
        """As SAC's; the actor's and the temperature's losses are logged only from calls
        that moved the actor (means over those steps)."""
        values, actions = super().train_and_act(obs, lr, phases)
        if values.pop("actor_updates") == 0:
            values.pop("actor_loss")
            values.pop("ent_coef_loss", None)
        return values, actions

    # -- graph pieces --------------------------------------------------------------------------
    def q_values(self, obs: Any, actions: tf.Tensor) -> tf.Tensor:
        """Every critic in inference mode: ``[B, N]``."""
        return tf.stack([c(obs, actions, training=False) for c in self.critics], axis=1)

    def _critic_step(self, obs: Any, actions: tf.Tensor, rewards: tf.Tensor, next_obs: Any,
                     dones: tf.Tensor, noise: tf.Tensor, alpha: tf.Tensor) -> tf.Tensor:
        next_actions, next_log_prob = self.policy(next_obs, noise)  # inference mode
        critic_vars = self.critic_variables
        with tf.GradientTape() as tape:
            q, next_q = losses.joint_q_values(self.critics, obs, actions, next_obs,
                                              next_actions)
            targets = losses.soft_q_targets(rewards, dones, next_q, next_log_prob, alpha,
                                            self.gamma)
            loss = losses.critic_loss(q, targets)
        self.critic_optimizer.apply_gradients(zip(tape.gradient(loss, critic_vars),
                                                  critic_vars))
        return loss

    def _actor_step(self, obs: Any, noise: tf.Tensor, alpha: tf.Tensor
                    ) -> tuple[tf.Tensor, tf.Tensor]:
        actor_vars = self.actor.trainable_variables
        with tf.GradientTape() as actor_tape:
            mean, log_std = self.actor(obs, training=True)
            actions_pi, log_prob = squashed_sample(mean, log_std, noise)
        alpha_loss = self.temperature_step(log_prob)
        with actor_tape:  # the updated critics, in inference mode
            loss = losses.actor_loss(log_prob, self.q_values(obs, actions_pi), alpha)
        self.actor_optimizer.apply_gradients(zip(actor_tape.gradient(loss, actor_vars),
                                                 actor_vars))
        return loss, alpha_loss

    def _gradient_step(self, obs: Any, actions: tf.Tensor, rewards: tf.Tensor, next_obs: Any,
                       dones: tf.Tensor, noise: tf.Tensor) -> tf.Tensor:
        """One update on one minibatch; returns the critic's loss, the actor's and the
        temperature's (0 unless the actor moved), alpha, and 1 if the actor moved."""
        alpha = tf.exp(self.log_alpha)  # this step's temperature, read before it moves
        q_loss = self._critic_step(obs, actions, rewards, next_obs, dones, noise[1], alpha)
        self.updates.assign_add(1)

        def delayed() -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
            pi_loss, alpha_loss = self._actor_step(obs, noise[0], alpha)
            return pi_loss, alpha_loss, tf.constant(1.0)

        if self.policy_delay == 1:
            pi_loss, alpha_loss, moved = delayed()
        else:
            zero = tf.constant(0.0)
            pi_loss, alpha_loss, moved = tf.cond(
                tf.equal(self.updates % self.policy_delay, 0), delayed,
                lambda: (zero, zero, zero))
        return tf.stack([q_loss, pi_loss, alpha, alpha_loss, moved])

    def _train_graph(self, obs: Any, actions: tf.Tensor, rewards: tf.Tensor, next_obs: Any,
                     dones: tf.Tensor, noise: tf.Tensor, act_obs: Any, act_noise: tf.Tensor,
                     lr: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """SAC's, with the actor's and the temperature's losses averaged over the steps that
        moved the actor."""
        stats, sampled = super()._train_graph(obs, actions, rewards, next_obs, dones, noise,
                                              act_obs, act_noise, lr)
        nsteps = float(rewards.shape[0])
        moved = stats[4] * nsteps
        per_actor_step = stats[1:4:2] * nsteps / tf.maximum(moved, 1.0)
        return tf.stack([stats[0], per_actor_step[0], stats[2], per_actor_step[1], moved]), \
            sampled


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: CrossQConfig, *,
                total_timesteps: int = 0) -> Model:
    """CrossQ's model for these spaces and ``num_envs`` envs (learn() and rlbase.CrossQ call
    this).

    network_kwargs: 'mlp's layer_sizes (or num_layers and num_hidden) for the actor, 256x256
        by default, and activation (relu by default) for every network (sb3-contrib's).
    config: CrossQ's parameters (critic_layer_sizes: the critics' widths).
    """
    box, kwargs = checked_build_inputs(observation_space, action_space, network, network_kwargs,
                                       ALGORITHM, num_hidden=256, num_layers=2)
    return Model(observation_space, box, num_envs, network, kwargs, config)
