"""Acting with a Q-network, shared by the replay-based Q-learners (DQN, QR-DQN) and PQN:
epsilon-greedy actions, the greedy step, the exported policy and its distribution.

Acting goes through the numpy mirror for MLP Q-networks (``mirror``), else through one
compiled call per vectorized step.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.common import nested
from rlbase.common.errors import RLBaseError
from rlbase.common.families.q_learning.networks import QNetwork
from rlbase.common.families.q_learning.numpy_q import NumpyQ
from rlbase.common.loops.action_masks import check_masks
from rlbase.common.networks.policy_graph import PolicyGraph
from rlbase.common.tf_util import CompiledFunction, compile_fn, observation_spec


class EpsilonGreedyQ:
    """The acting half of a Q-learning model (a mixin before its model base class).

    The model sets: ``q`` (the online :class:`QNetwork`), ``mirror`` (its :class:`NumpyQ`,
    or None), ``rng`` (the exploration's generator), ``epsilon`` (the rate
    ``step(deterministic=False)`` acts with), ``num_actions``, ``action_start`` and
    ``_act_jit`` (compile acting with XLA).
    """

    observation_space: gym.Space
    action_space: gym.Space
    algorithm: ClassVar[str]
    q: QNetwork
    mirror: NumpyQ | None
    rng: np.random.Generator
    epsilon: float
    num_actions: int
    action_start: int
    _act_jit: bool

    def _obs_spec(self, batch: int | None, *lead: int) -> Any:
        return observation_spec(self.observation_space, [*lead, batch])

    @cached_property
    def q_fn(self) -> CompiledFunction:
        q = self.q if self.q.atoms == 1 else self.q.q_values
        return compile_fn(q, [self._obs_spec(None)], self._act_jit)

    def perturbed_q_values(self, obs: Any) -> np.ndarray:
        """The Q-values of a parameter-noise copy (models with parameter noise override)."""
        raise RLBaseError(f"{self.algorithm} has no parameter noise to act with")

    def q_values(self, obs: Any, perturbed: bool = False) -> np.ndarray:
        """``[B, num_actions]`` Q-values of the online (or the perturbed) network."""
        if perturbed:
            return self.perturbed_q_values(obs)
        if self.mirror is not None:
            return self.mirror.q_values(obs)
        return self.q_fn(obs).numpy()

    @property
    def action_masking(self) -> bool | str:
        """Where the masks of the actions this model may take come from (its config's
        ``action_masks``, rlbase/docs/action_masking.md; False: every action is valid)."""
        return False

    def act(self, obs: Any, epsilon: float, perturbed: bool = False,
            action_masks: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Epsilon-greedy action indices (0..n-1) and the Q-value of the greedy action; with
        ``action_masks`` ``[B, n]`` both the greedy and the exploring choice are among each
        row's valid actions."""
        q = self.q_values(obs, perturbed)
        if action_masks is not None:
            q = np.where(action_masks, q, -np.inf)
        greedy = q.argmax(axis=1)
        qmax = q[np.arange(len(q)), greedy]
        if epsilon > 0:
            explore = self.rng.random(len(q)) < epsilon
            if explore.any():
                greedy = np.where(explore, self._random_actions(q.shape, action_masks),
                                  greedy)
        return greedy, qmax

    def _random_actions(self, shape: tuple[int, ...], action_masks: np.ndarray | None
                        ) -> np.ndarray:
        """A uniform action per row, among the row's valid ones under ``action_masks``."""
        if action_masks is None:
            return self.rng.integers(0, shape[1], shape[0])
        # The largest of uniform draws over the valid entries is uniform among them.
        return np.where(action_masks, self.rng.random(shape), -1.0).argmax(axis=1)

    def step(self, obs: Any, state: np.ndarray | None = None, mask: np.ndarray | None = None,
             deterministic: bool = False, action_masks: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, Any, None]:
        """(actions, Q-value of the greedy action, state, None) for a batch of observations:
        the greedy action, or epsilon-greedy with ``model.epsilon`` unless deterministic;
        ``action_masks`` ``[B, n]``: the valid actions (None: all)."""
        obs = self._observations(obs)
        if action_masks is not None:
            action_masks = check_masks(action_masks, self.action_space,
                                       nested.batch_size(self.observation_space, obs))
        actions, qmax = self.act(obs, 0.0 if deterministic else self.epsilon,
                                 action_masks=action_masks)
        return actions + self.action_start, qmax, state, None

    def policy_graph(self) -> PolicyGraph:
        """The greedy action of the online Q-network (``step(..., deterministic=True)``), and
        epsilon-greedy at the current exploration rate with an explicit seed; a model that
        acts with action masks takes them as its last input (both choices among the valid
        actions, as :meth:`act`)."""
        q, start, n, eps = self.q, self.action_start, self.num_actions, float(self.epsilon)

        def values(obs: Any, action_masks: tf.Tensor | None) -> tf.Tensor:
            if action_masks is None:
                return q.q_values(obs)
            return tf.where(action_masks, q.q_values(obs), -np.inf)

        def act(obs: Any, state: tf.Tensor, mask: tf.Tensor,
                action_masks: tf.Tensor | None = None) -> tuple[tf.Tensor, tf.Tensor]:
            return tf.argmax(values(obs, action_masks), axis=1) + start, state

        def sample(obs: Any, state: tf.Tensor, mask: tf.Tensor, seed: tf.Tensor,
                   action_masks: tf.Tensor | None = None) -> tuple[tf.Tensor, tf.Tensor]:
            greedy = tf.argmax(values(obs, action_masks), axis=1)
            batch = tf.shape(greedy)[:1]
            explore = tf.random.stateless_uniform(batch, seed) < eps
            other_seed = seed + tf.constant([0, 1], tf.int64)
            if action_masks is None:
                other = tf.random.stateless_uniform(batch, other_seed, maxval=n,
                                                    dtype=tf.int64)
            else:  # the largest of uniform draws over the valid actions: uniform among them
                draws = tf.random.stateless_uniform(tf.shape(action_masks), other_seed)
                other = tf.argmax(tf.where(action_masks, draws, -1.0), axis=1)
            return tf.where(explore, other, greedy) + start, state

        size = self.num_actions if self.action_masking is not False else 0
        return PolicyGraph(self.observation_space, 0, act, sample, [q], action_mask_size=size)

    def action_probabilities(self, obs: Any, state: np.ndarray, mask: np.ndarray
                             ) -> tuple[np.ndarray, ...]:
        """The epsilon-greedy distribution ``step`` samples from."""
        q = self.q_values(self._observations(obs))
        n, eps = q.shape[1], float(self.epsilon)
        greedy = np.eye(n)[q.argmax(axis=1)]
        return (eps / n + (1.0 - eps) * greedy,)

    def _observations(self, obs: Any) -> Any:
        """A batch as the Q-values take it: an array, or nested for Dict/Tuple spaces."""
        return obs if nested.is_nested(self.observation_space) else np.asarray(obs)

    def pretrain_parts(self) -> tuple[list[Any], Any, Any]:
        """Behaviour cloning with the Q-values as logits: the greedy action becomes the
        expert's."""
        start = self.action_start

        def loss(obs: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
            labels = tf.cast(actions, tf.int32) - start
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels, self.q.q_values(obs)))

        return self.q.trainable_variables, loss, self.after_pretraining

    def after_pretraining(self) -> None:
        """Refresh what mirrors the fitted weights."""
        if self.mirror is not None:
            self.mirror.sync()
