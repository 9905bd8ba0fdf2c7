"""What the actor-critic model classes (A2C, PPO, ACER) share: action probabilities from the
policy's distribution and behaviour cloning by maximum likelihood."""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.api.base_class import BaseRLModel
from rlbase.common.errors import RLBaseError


class ActorCriticModel(BaseRLModel):
    """Base of the classes whose model holds an ActorCriticPolicy as ``model.policy``."""

    def _policy(self, ob_space: gym.Space, ac_space: gym.Space) -> Any:
        """The policy learn() would build from this class's network and policy_kwargs."""
        from rlbase.common.policies import build_policy

        kwargs = dict(self.policy_kwargs)
        return build_policy(ob_space, ac_space, self.network, kwargs.pop("value_network", None),
                            **kwargs)

    def _distribution(self, obs: np.ndarray, state: np.ndarray, mask: np.ndarray) -> Any:
        policy = self.model.policy
        params = policy.forward(tf.constant(obs), tf.constant(state), tf.constant(mask))[0]
        return policy.distribution(params)

    def _probabilities(self, obs: np.ndarray, state: np.ndarray, mask: np.ndarray
                       ) -> tuple[np.ndarray, ...]:
        pd = self._distribution(obs, state, mask)
        if isinstance(self.action_space, gym.spaces.Discrete):
            return (tf.nn.softmax(pd.logits).numpy(),)
        if isinstance(self.action_space, gym.spaces.Box):
            mean = pd.mean.numpy()
            return mean, np.broadcast_to(pd.std.numpy(), mean.shape).copy()
        raise RLBaseError(f"action_probability supports Discrete and Box action spaces, got "
                          f"{self.action_space}")

    def _pretrain_parts(self) -> tuple[list, Callable, Callable[[], None]]:
        policy = self.model.policy
        if policy.recurrent:
            raise RLBaseError(f"pretrain needs a feed-forward policy, got the recurrent "
                              f"network {policy.network_name!r}")

        def loss(obs: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
            n = tf.shape(obs)[0]
            params = policy.forward(obs, tf.zeros([n, 0]), tf.zeros([n]))[0]
            return tf.reduce_mean(policy.distribution(params).neglogp(actions))

        # The value (and Q) heads get no gradient from this loss: only the policy's path.
        heads = [policy.value_head, policy.q_head, policy.value_torso]
        skip = {id(v) for h in heads if h is not None for v in h.trainable_variables}
        variables = [v for v in policy.trainable_variables if id(v) not in skip]
        return variables, loss, self.model.calls.sync
