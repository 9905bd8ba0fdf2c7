"""ACKTR's model: a policy, its K-FAC optimizer, and one compiled call per update."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import keras
import tensorflow as tf

from rlbase.acktr.config import ACKTRConfig
from rlbase.acktr.kfac import KFAC, check_layers, recording
from rlbase.acktr.losses import sampled_fisher_loss
from rlbase.common.errors import RLBaseError
from rlbase.common.families.actor_critic import OnPolicyModel, actor_critic_losses
from rlbase.common.networks.policies import ActorCriticPolicy, has_images, policy_from_kwargs
from rlbase.common.tf_util import configure_threads, discounted_returns, explained_variance

STAT_NAMES = ("policy_loss", "value_loss", "entropy_loss", "explained_variance",
              "trust_region_scale")


def factored_layers(policy: ActorCriticPolicy) -> list[Any]:
    """The policy's Dense and Conv2D layers; one line refusing any other layer with weights
    (LSTM, layer norm): K-FAC has no factors for them."""
    if policy.recurrent:
        raise RLBaseError(f"ACKTR's K-FAC handles Dense and Conv2D layers only, not the "
                          f"recurrent network {policy.network_name!r}; use mlp or cnn")
    layers = [layer for layer in policy._flatten_layers(include_self=False)
              if layer.weights and not layer._layers]
    plain = [layer for layer in layers
             if isinstance(layer, keras.layers.Dense | keras.layers.Conv2D)]
    others = [layer for layer in layers if layer not in plain
              and type(layer).__name__ != "DistributionHead"]
    check_layers(others)  # raises on the first unfactorable layer
    return check_layers(plain)


class Model(OnPolicyModel):
    """The ACKTR learner: A2C's n-step actor-critic loss, minimized by K-FAC, whose factors
    come from the sampled Fisher of the policy and (as a unit Gaussian) of the value. Stats,
    preconditioning and the step are one compiled call per update."""

    algorithm = "acktr"
    stat_names = STAT_NAMES

    config: ACKTRConfig

    def __init__(self, policy: ActorCriticPolicy, num_envs: int, config: ACKTRConfig,
                 network_kwargs: dict[str, Any] | None = None):
        self.ent_coef, self.vf_coef = config.ent_coef, config.vf_coef
        self.vf_fisher_coef, self.gamma = config.vf_fisher_coef, config.gamma
        self.layers = factored_layers(policy)
        optimizer = KFAC(self.layers, policy.trainable_variables, momentum=config.momentum,
                         kfac_clip=config.kfac_clip, damping=config.damping,
                         stats_decay=config.stats_decay, cold_iter=config.cold_iter,
                         inverse_interval=config.inverse_interval,
                         max_grad_norm=config.max_grad_norm)
        super().__init__(policy, optimizer, num_envs, config.nsteps,  # type: ignore[arg-type]
                         network_kwargs or {}, config, jit_compile=False)

    def train_graph(self, obs, actions, rewards, dones, starts, state, last_obs, last_state,
                    last_starts, lr):
        policy = self.policy
        last_values = policy.value(last_obs, last_state, last_starts)
        with tf.GradientTape(persistent=True) as tape:
            with recording(self.layers, tape) as recorder:
                params, values, _, _ = policy.forward(obs, state, starts)
            returns = tf.reshape(discounted_returns(
                rewards, dones, last_values, self.gamma), [-1])
            pd = policy.distribution(params)
            neglogp = pd.neglogp(actions)
            loss, policy_loss, value_loss, entropy = actor_critic_losses(
                neglogp, pd.entropy(), values, returns, self.ent_coef, self.vf_coef)
            fisher = sampled_fisher_loss(neglogp, values, tf.random.normal(tf.shape(values)),
                                         self.vf_fisher_coef)
        variables = policy.trainable_variables
        grads = tape.gradient(loss, variables)
        probe_grads = {k: tape.gradient(fisher, p) for k, p in recorder.probes.items()}
        del tape
        scale = self.optimizer.minimize(grads, recorder, probe_grads, lr)
        stats = tf.stack([policy_loss, value_loss, -entropy,
                          explained_variance(values, returns), scale])
        return (stats, *self.after_update(last_obs, last_state, last_starts))


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: ACKTRConfig, *,
                total_timesteps: int = 0) -> Model:
    """ACKTR's model for these spaces and ``num_envs`` envs."""
    del total_timesteps  # no XLA choice to make: the update stays uncompiled by XLA
    configure_threads("convnet" if has_images(observation_space) else "small")
    policy = policy_from_kwargs(observation_space, action_space, network, network_kwargs)
    return Model(policy, num_envs, config, network_kwargs)


__all__: Sequence[str] = ("Model", "build_model", "factored_layers")
