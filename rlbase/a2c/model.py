"""A2C's model: a policy, its RMSProp optimizer, and one compiled call per update."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import tensorflow as tf

from rlbase.a2c.config import A2CConfig
from rlbase.common.families.actor_critic import (
    OnPolicyModel,
    actor_critic_losses,
    actor_critic_parts,
)
from rlbase.common.networks.policies import ActorCriticPolicy
from rlbase.common.tf_util import (
    RMSprop,
    clip_by_global_norm,
    discounted_returns,
    explained_variance,
    gae_advantages,
)

STAT_NAMES = ("policy_loss", "value_loss", "entropy_loss", "explained_variance", "grad_norm")
# Updates from which XLA's ~1.5 s compile is repaid (~1 ms saved per update).
XLA_MIN_UPDATES = 1500


class Model(OnPolicyModel):
    """The A2C learner.

    Acting runs once per vectorized env step: in numpy for MLP policies (see
    common.numpy_actor), else as one compiled TF call. The update computes the bootstrapped
    n-step returns and applies one gradient step, all in one compiled call.

    RMSProp: by default the mean square starts at zero and epsilon is added outside the square
    root (PyTorch's form, ``tf1_rmsprop=False``): measured on CartPole it learns about 1.5x
    faster than TF1's form (mean square from one, epsilon inside the root), whose first few
    hundred updates are near zero. ``tf1_rmsprop=True`` is Baselines' optimizer, which its
    tuned learning rates (e.g. lr=0.05 in its CartPole test) assume.
    """

    algorithm = "a2c"
    stat_names = STAT_NAMES

    config: A2CConfig

    def __init__(self, policy: ActorCriticPolicy, num_envs: int, config: A2CConfig,
                 network_kwargs: dict[str, Any] | None = None, jit_compile: bool = True):
        self.ent_coef, self.vf_coef = config.ent_coef, config.vf_coef
        self.gamma, self.lam = config.gamma, config.lam
        self.max_grad_norm = config.max_grad_norm
        self.normalize_advantage = config.normalize_advantage
        tf1 = config.tf1_rmsprop
        optimizer = RMSprop(7e-4, config.rms_alpha, config.rms_epsilon,
                            initial_accumulator=1.0 if tf1 else 0.0, epsilon_inside_sqrt=tf1)
        super().__init__(policy, optimizer, num_envs, config.nsteps, network_kwargs or {},
                         config, jit_compile)

    @property
    def action_masking(self) -> bool | str:
        return self.config.action_masks

    def train_graph(self, obs, actions, rewards, dones, starts, state, last_obs, last_state,
                    last_starts, lr, action_masks=None, last_action_masks=None):
        policy = self.policy
        last_values = policy.value(last_obs, last_state, last_starts)
        with tf.GradientTape() as tape:
            params, values, _, _ = policy.forward(obs, state, starts)
            returns = self._returns(rewards, dones, tf.stop_gradient(values), last_values)
            # the masks the actions were taken under: log-probabilities and entropy as acting
            pd = policy.distribution(params, action_masks)
            loss, policy_loss, value_loss, entropy = actor_critic_losses(
                pd.neglogp(actions), pd.entropy(), values, returns, self.ent_coef, self.vf_coef,
                self.normalize_advantage)
        variables = policy.trainable_variables
        grads, grad_norm = clip_by_global_norm(tape.gradient(loss, variables), self.max_grad_norm)
        self.optimizer.learning_rate.assign(lr)
        self.optimizer.apply_gradients(zip(grads, variables))
        stats = tf.stack([policy_loss, value_loss, -entropy,
                          explained_variance(values, returns), grad_norm])
        return (stats, *self.after_update(last_obs, last_state, last_starts, last_action_masks))

    def _returns(self, rewards: tf.Tensor, dones: tf.Tensor, values: tf.Tensor,
                 last_values: tf.Tensor) -> tf.Tensor:
        """The critic's targets: n-step returns bootstrapped from the last value (lam = 1), or
        GAE(lam) advantages plus the values (lam < 1; SB3's gae_lambda)."""
        if self.lam == 1.0:
            return tf.reshape(discounted_returns(rewards, dones, last_values, self.gamma), [-1])
        values = tf.reshape(values, [self.num_envs, self.nsteps])
        advantages = gae_advantages(rewards, values, dones, last_values, self.gamma, self.lam)
        return tf.reshape(advantages + values, [-1])


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: A2CConfig, *,
                total_timesteps: int = 0) -> Model:
    """A2C's model for these spaces and ``num_envs`` envs (learn() and rlbase.A2C call this);
    XLA as :func:`~rlbase.common.families.actor_critic.use_xla` decides."""
    policy, jit = actor_critic_parts(observation_space, action_space, num_envs, network,
                                     network_kwargs, config, total_timesteps, XLA_MIN_UPDATES)
    return Model(policy, num_envs, config, network_kwargs, jit_compile=jit)
