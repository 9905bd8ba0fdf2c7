"""GAIL's model: TRPO's policy update on the discriminator's rewards, and the discriminator."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.common.errors import RLBaseError
from rlbase.common.families.trust_region.model import TrustRegionModel, trust_region_policy
from rlbase.common.io.checkpoint import generator_state, set_generator_state
from rlbase.common.mpi_util import get_comm, sync_variables
from rlbase.common.networks.policies import ActorCriticPolicy
from rlbase.common.tf_util import (
    Adam,
    CompiledFunction,
    compile_fn,
    observation_spec,
    spec_like,
)
from rlbase.gail.adversary import Discriminator, check_spaces
from rlbase.gail.config import GAILConfig
from rlbase.gail.losses import discriminator_loss, imitation_reward

DISCRIMINATOR_STATS = ("discriminator_loss", "policy_pairs_loss", "expert_pairs_loss",
                       "discriminator_entropy", "policy_pairs_accuracy",
                       "expert_pairs_accuracy", "imitation_reward")


class Model(TrustRegionModel):
    """The GAIL learner (Ho & Ermon 2016, Baselines' setting): the trust-region update of
    :class:`~rlbase.common.families.trust_region.model.TrustRegionModel` on the reward
    ``-log(1 - D(s, a))``, added to the rollout's rewards inside the same compiled call, and a
    discriminator phase (one compiled call) training D to tell expert pairs from the policy's.

    The rollout passed to :meth:`train` carries only the truncation bootstraps as rewards: the
    env's rewards never reach the update (they are still what the episode statistics report).
    """

    algorithm = "gail"

    config: GAILConfig

    def __init__(self, policy: ActorCriticPolicy, num_envs: int, config: GAILConfig,
                 network_kwargs: dict[str, Any] | None = None, comm: Any | None = None):
        check_spaces(policy.ob_space, policy.ac_space)
        self.discriminator = Discriminator(policy.ob_space, policy.ac_space,
                                           config.adversary_hidden_size)
        self.d_optimizer = Adam(learning_rate=config.d_lr, epsilon=1e-8)
        self.d_optimizer.build(self.discriminator.trainable_variables)
        #: draws the expert pairs of each discriminator phase (saved with checkpoints)
        self.expert_rng = np.random.default_rng(int(np.random.randint(2**31 - 1)))
        super().__init__(policy, num_envs, config, network_kwargs, comm)
        if self.comm is not None:
            sync_variables(self.discriminator.weights, self.comm)

    # -- saving ---------------------------------------------------------------------------------
    def variable_groups(self) -> dict[str, Sequence[tf.Variable]]:
        return {**super().variable_groups(), "discriminator": self.discriminator.weights,
                "discriminator_optimizer": self.d_optimizer.variables}

    def resume_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta, arrays = super().resume_state()
        meta["expert_rng"] = generator_state(self.expert_rng)
        return meta, arrays

    def restore_resume_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super().restore_resume_state(meta, arrays)
        if meta.get("expert_rng") is None:
            raise RLBaseError("the checkpoint lacks GAIL's expert sampling state (expert_rng): "
                              "it was written by another algorithm")
        set_generator_state(self.expert_rng, meta["expert_rng"])

    # -- the policy's update --------------------------------------------------------------------
    def train_graph(self, obs, actions, rewards, dones, starts, state, last_obs, last_state,
                    last_starts):
        imitation = imitation_reward(self.discriminator.logits(obs, actions))
        rewards = rewards + tf.reshape(imitation, [self.num_envs, self.nsteps])
        return super().train_graph(obs, actions, rewards, dones, starts, state, last_obs,
                                   last_state, last_starts)

    # -- the discriminator's phase --------------------------------------------------------------
    @cached_property
    def _train_discriminator(self) -> CompiledFunction:
        ob, ac = self.policy.ob_space, self.policy.ac_space
        nbatch = self.num_envs * self.nsteps
        pairs = [observation_spec(ob, [nbatch]), spec_like([nbatch, *(ac.shape or ())], ac.dtype)]
        return compile_fn(self._discriminator_graph, pairs + pairs)

    def _discriminator_graph(self, obs, actions, expert_obs, expert_actions):
        """``d_step`` Adam steps, the i-th on the i-th of d_step equal slices of the policy's
        pairs and of the expert's (a last partial slice left out). Before each step the
        observation statistics take in both slices, as Baselines did."""
        disc, config = self.discriminator, self.config
        nbatch = self.num_envs * self.nsteps
        size = max(1, nbatch // config.d_step)
        variables = disc.trainable_variables
        imitation = tf.reduce_mean(imitation_reward(disc.logits(obs, actions)))

        def rows(x: tf.Tensor, i: tf.Tensor) -> tf.Tensor:
            return x[i * size:(i + 1) * size]

        def body(i: tf.Tensor, total: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            p_obs = tf.nest.map_structure(lambda x: rows(x, i), obs)
            e_obs = tf.nest.map_structure(lambda x: rows(x, i), expert_obs)
            features = tf.concat([disc.features(p_obs), disc.features(e_obs)], 0)
            disc.update_statistics(*self._feature_moments(features))
            with tf.GradientTape() as tape:
                terms = discriminator_loss(disc.logits(p_obs, rows(actions, i)),
                                           disc.logits(e_obs, rows(expert_actions, i)),
                                           config.adversary_entcoeff)
            grads = self._average(tape.gradient(terms[0], variables))
            self.d_optimizer.apply_gradients(zip(grads, variables))
            return i + 1, total + tf.stack(terms)

        steps = min(config.d_step, nbatch)
        _, total = tf.while_loop(lambda i, _t: i < steps, body,
                                 (tf.constant(0), tf.zeros([6])))
        return tf.concat([total / steps, [imitation]], 0)

    def _feature_moments(self, features: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """(mean, variance, count) of the features, pooled over the MPI workers so that all
        of them keep the same statistics."""
        n = tf.shape(features)[0]
        mean, var = tf.nn.moments(features, axes=[0])
        if self.comm is None:
            return mean, var, n
        mean, square = self._average([mean, var + tf.square(mean)])
        return mean, tf.maximum(square - tf.square(mean), 0.0), n * self.comm.Get_size()

    def train_discriminator(self, obs: Any, actions: np.ndarray, expert_obs: Any,
                            expert_actions: np.ndarray) -> dict[str, float]:
        """One discriminator phase on the policy's last rollout and as many expert pairs."""
        stats = self._train_discriminator(obs, actions, expert_obs, expert_actions)
        return dict(zip(DISCRIMINATOR_STATS, stats.numpy().tolist()))


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: GAILConfig, *,
                total_timesteps: int = 0) -> Model:
    """GAIL's model for these spaces and ``num_envs`` envs (learn() and rlbase.GAIL call this);
    the policy as :func:`~rlbase.common.families.trust_region.model.trust_region_policy`
    builds it."""
    del total_timesteps  # no XLA choice to make
    check_spaces(observation_space, action_space)
    policy, kwargs = trust_region_policy(observation_space, action_space, network,
                                         network_kwargs, config.algorithm)
    return Model(policy, num_envs, config, kwargs, comm=get_comm())

__all__: Sequence[str] = ("DISCRIMINATOR_STATS", "Model", "build_model")
