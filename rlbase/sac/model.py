"""SAC's model: the actor, the twin critics and their targets, the temperature, three
optimizers, the replay buffer and the random generators, all made by :func:`build_model` (what
learn() and rlbase.SAC call).

Actions live in [-1, 1] inside the model (the tanh range, the replay buffer) and are mapped
onto the env's [low, high] only when they leave it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.common import nested
from rlbase.common.buffers.raw_replay import random_streams, sample_minibatches
from rlbase.common.families.continuous import (
    build_torso,
    check_continuous_action_space,
    check_observation_space,
)
from rlbase.common.networks.policy_graph import PolicyGraph, scale_to_bounds
from rlbase.common.schedules import get_schedule_fn
from rlbase.common.tf_util import Adam, configure_threads
from rlbase.sac import losses
from rlbase.sac.config import SACConfig, parse_ent_coef, target_entropy_value
from rlbase.sac.graph import STAT_NAMES, SACGraph
from rlbase.sac.networks import Actor, q_network

ALGORITHM = "sac"
# PyTorch's Adam epsilon (the peer's); Keras' default is 1e-7.
ADAM_EPSILON = 1e-8


class Model(SACGraph):
    """A SAC agent: a squashed-Gaussian actor, twin critics with soft-updated targets and a
    learned (or fixed) entropy coefficient.

    observation_space: a Box, or a Dict/Tuple space (SB3's MultiInputPolicy).
    action_space: a 1-D Box with finite bounds.
    num_envs: the envs it trains on.
    network / network_kwargs: the registry network of the actor's and each critic's torso.
    config: SAC's parameters (none shapes the variables: the temperature and its optimizer
        exist whether ent_coef is learned or fixed).
    """

    algorithm = ALGORITHM
    config: SACConfig

    def __init__(self, observation_space: gym.Space, action_space: gym.spaces.Box,
                 num_envs: int, network: Any, network_kwargs: dict[str, Any],
                 config: SACConfig):
        super().__init__(observation_space, action_space, network, network_kwargs, config,
                         num_envs)
        self.auto_alpha, self.initial_alpha = parse_ent_coef(config.ent_coef)
        self.target_entropy = target_entropy_value(config.target_entropy, self.num_actions)
        # The training call's XLA is chosen per step count (graph.SACGraph.train_fn_for).
        self.jit_compile = config.jit_compile
        self.jit_act = True if config.jit_compile is None else config.jit_compile

        def torso() -> Any:
            return build_torso(network, self.network_kwargs, ALGORITHM, observation_space)

        self.actor = Actor(observation_space, self.num_actions, torso())
        self.critics = [q_network(observation_space, self.num_actions, torso()) for _ in range(2)]
        self.target_critics = [q_network(observation_space, self.num_actions, torso())
                               for _ in range(2)]
        for src, dst in self.target_pairs():
            dst.assign(src)
        self.log_alpha = tf.Variable(math.log(self.initial_alpha), dtype=tf.float32,
                                     name="log_alpha")
        self.updates = tf.Variable(0, dtype=tf.int64, trainable=False, name="updates")
        lr = get_schedule_fn(config.lr)(1.0)
        self.actor_optimizer = Adam(learning_rate=lr, epsilon=ADAM_EPSILON)
        self.critic_optimizer = Adam(learning_rate=lr, epsilon=ADAM_EPSILON)
        self.alpha_optimizer = Adam(learning_rate=lr, epsilon=ADAM_EPSILON)
        self.actor_optimizer.build(self.actor.trainable_variables)
        self.critic_optimizer.build(self.critic_variables)
        self.alpha_optimizer.build([self.log_alpha])
        # Two independent streams: the Gaussian noise (training and acting); minibatches and
        # warm-up actions.
        self.noise_rng, self.loop_rng = random_streams(config.seed, 2)
        self.generators = {"noise": self.noise_rng, "loop": self.loop_rng}

    # -- what a file holds ---------------------------------------------------------------------
    def variable_groups(self) -> dict[str, Sequence[tf.Variable]]:
        groups: dict[str, Sequence[tf.Variable]] = {
            "actor": self.actor.weights,
            "actor_optimizer": self.actor_optimizer.variables,
            "critic_optimizer": self.critic_optimizer.variables,
            "alpha_optimizer": self.alpha_optimizer.variables,
            "state": [self.log_alpha, self.updates]}
        for i, (c, t) in enumerate(zip(self.critics, self.target_critics)):
            groups[f"critic{i}"], groups[f"target_critic{i}"] = c.weights, t.weights
        return groups

    def after_load(self) -> None:
        super().after_load()
        if not self.auto_alpha:  # a fixed ent_coef given now wins over the file's
            self.log_alpha.assign(math.log(self.initial_alpha))

    @property
    def ent_coef(self) -> float:
        """The current entropy coefficient alpha."""
        return float(np.exp(self.log_alpha.numpy()))

    # -- acting --------------------------------------------------------------------------------
    def _noise(self, n: int) -> np.ndarray:
        return self.noise_rng.standard_normal((n, self.num_actions), dtype=np.float32)

    def act(self, obs: Any, deterministic: bool = False) -> np.ndarray:
        """Actions in [-1, 1]: sampled from the policy, or tanh(mean) when
        ``deterministic``."""
        n = nested.batch_size(self.observation_space, obs)
        noise = np.zeros((n, self.num_actions), np.float32) if deterministic else self._noise(n)
        sampled, mean, _ = self.act_fn(obs, noise)
        return (mean if deterministic else sampled).numpy()

    def step(self, obs: Any, state: np.ndarray | None = None, mask: np.ndarray | None = None,
             deterministic: bool = False) -> tuple[np.ndarray, None, np.ndarray | None, None]:
        """(actions in the env's bounds, None, state, None): sampled from the squashed
        Gaussian, or its mean action tanh(mean) when ``deterministic``. ``state``/``mask``
        pass through (the nets are feed-forward)."""
        return self.to_env(self.act(obs, deterministic)), None, state, None

    def policy_graph(self) -> PolicyGraph:
        """The mean action tanh(mean) scaled to the bounds (``step(..., deterministic=True)``),
        and a draw from the squashed Gaussian with an explicit seed."""
        actor, space = self.actor, self.action_space
        box = not nested.is_nested(self.observation_space)  # Box observations act as float32

        def act(obs: Any, state: tf.Tensor, mask: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            mean, _ = actor(tf.cast(obs, tf.float32) if box else obs)
            return scale_to_bounds(tf.tanh(mean), space), state

        def sample(obs: Any, state: tf.Tensor, mask: tf.Tensor, seed: tf.Tensor
                   ) -> tuple[tf.Tensor, tf.Tensor]:
            mean, log_std = actor(tf.cast(obs, tf.float32) if box else obs)
            noise = tf.random.stateless_normal(tf.shape(mean), seed)
            return scale_to_bounds(losses.squashed_sample(mean, log_std, noise)[0], space), state

        return PolicyGraph(self.observation_space, 0, act, sample, [actor])

    def action_probabilities(self, obs: Any, state: np.ndarray, mask: np.ndarray
                             ) -> tuple[np.ndarray, ...]:
        """(the deterministic action tanh(mean) in the env's bounds, the std of the pre-tanh
        Gaussian). The policy is that Gaussian squashed by tanh: a Gaussian density computed
        from these two is not the policy's density (:meth:`log_prob` is)."""
        n = nested.batch_size(self.observation_space, obs)
        _, mean, std = self.act_fn(obs, np.zeros((n, self.num_actions), np.float32))
        return self.to_env(mean.numpy()), std.numpy()

    def log_prob(self, obs: Any, actions: np.ndarray) -> np.ndarray:
        """``log pi(a|s)`` of actions in the env's bounds under the squashed Gaussian policy,
        ``a = low + (tanh(u) + 1) (high - low) / 2`` with ``u ~ N(mean, std)``: ``log N(u) -
        sum_j log(1 - tanh(u_j)^2) - sum_j log((high_j - low_j) / 2)``; -inf outside the
        open box (tanh never reaches its bounds). Float64, shape ``[B]``."""
        mean, log_std = (x.numpy().astype(np.float64) for x in self.policy_fn(obs))
        half = (self.high - self.low) / 2.0
        squashed = (np.asarray(actions, np.float64) - self.low) / half - 1.0  # tanh(u)
        inside = np.all(np.abs(squashed) < 1.0, axis=-1)
        squashed = np.where(inside[:, None], squashed, 0.0)
        u = np.arctanh(squashed)
        z = (u - mean) * np.exp(-log_std)
        gaussian = np.sum(-0.5 * z ** 2 - log_std - 0.5 * math.log(2.0 * math.pi), axis=-1)
        log_det = np.sum(np.log1p(-squashed ** 2) + np.log(half), axis=-1)
        return np.where(inside, gaussian - log_det, -np.inf)

    # -- training ------------------------------------------------------------------------------
    def train_and_act(self, obs: Any, lr: float, phases: int = 1
                      ) -> tuple[dict[str, float], np.ndarray]:
        """``phases`` training phases of ``gradient_steps`` gradient steps each on minibatches
        from the buffer, then sampled actions (in [-1, 1]) for ``obs`` from the updated actor:
        one compiled call."""
        g, b = phases * self.gradient_steps, self.batch_size
        batch = sample_minibatches(self.replay_buffer, self.raw_replay, self.loop_rng, g, b)
        noise = self.noise_rng.standard_normal((g, 2, b, self.num_actions), dtype=np.float32)
        n = nested.batch_size(self.observation_space, obs)
        stats, actions = self.train_fn_for(g)(*batch, noise, obs, self._noise(n),
                                              np.float32(lr))
        self.grad_steps += g
        values = dict(zip(STAT_NAMES, stats.numpy().tolist()))
        if not self.auto_alpha:
            del values["ent_coef_loss"]
        return values, actions.numpy()


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: SACConfig, *,
                total_timesteps: int = 0) -> Model:
    """SAC's model for these spaces and ``num_envs`` envs (learn() and rlbase.SAC call this).

    network_kwargs: the registry network's arguments; 'mlp' here defaults to SB3's SAC nets,
        two ReLU layers of 256 units.
    config: SAC's parameters.
    """
    box = check_continuous_action_space(action_space, ALGORITHM)
    check_observation_space(observation_space, ALGORITHM)
    # TF's own thread pools, not one thread: each training call works on whole 256-row
    # minibatches through 256x256 layers (see rlbase/docs/algorithms/sac.md for the figures).
    configure_threads("large")
    kwargs = dict(network_kwargs)
    if network == "mlp":
        kwargs.setdefault("activation", "relu")
        kwargs.setdefault("num_hidden", 256)
    return Model(observation_space, box, num_envs, network, kwargs, config)
