"""DQN as a model class over rlbase.dqn.dqn.learn."""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.api.base_class import FEED_FORWARD, BaseRLModel


class DQN(BaseRLModel):
    """Deep Q-learning; hyperparameters are those of :func:`rlbase.dqn.dqn.learn`.

    Acting with ``deterministic=False`` is epsilon-greedy with the model's current exploration
    rate (``model.model.epsilon``); action_probability gives that distribution. Each learn()
    call starts a new replay buffer and exploration schedule.
    """

    algorithm = "dqn"
    policies = FEED_FORWARD
    log_interval_key = "print_freq"

    @staticmethod
    def _learn_fn() -> Callable[..., Any]:
        from rlbase.dqn.dqn import learn
        return learn

    def _build(self, ob_space: gym.Space, ac_space: gym.Space, nenvs: int) -> Any:
        from rlbase.common.models import network_kwarg_names
        from rlbase.dqn.learner import Model
        from rlbase.dqn.models import QNetwork, check_action_space

        check_action_space(ac_space)
        p, kwargs = self._params(), dict(self.policy_kwargs)
        head_layer_norm = bool(kwargs.get("layer_norm", False))
        if not callable(self.network) and "layer_norm" not in network_kwarg_names(self.network):
            kwargs.pop("layer_norm", None)

        def make_net() -> QNetwork:
            return QNetwork(ob_space, ac_space, self.network, p["hiddens"], p["dueling"],
                            head_layer_norm, kwargs)

        return Model(make_net, p["gamma"], p["double_q"], p["grad_norm_clipping"],
                     p["gradient_steps"], p["batch_size"], p["param_noise"], False, self.seed,
                     self.hyperparameters)

    def _probabilities(self, obs: np.ndarray, state: np.ndarray, mask: np.ndarray
                       ) -> tuple[np.ndarray, ...]:
        q = self.model.q_values(obs)
        n, eps = q.shape[1], float(self.model.epsilon)
        greedy = np.eye(n)[q.argmax(axis=1)]
        return (eps / n + (1.0 - eps) * greedy,)

    def _pretrain_parts(self) -> tuple[list, Callable, Callable[[], None]]:
        model = self.model
        start = int(self.action_space.start)

        def loss(obs: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
            # Q-values as logits: the greedy action becomes the expert's.
            labels = tf.cast(actions, tf.int32) - start
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels, model.q(obs)))

        def after() -> None:
            if model.mirror is not None:
                model.mirror.sync()
            model.update_target()

        return model.q.trainable_variables, loss, after
