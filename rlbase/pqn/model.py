"""PQN's model: a layer-normalized Q-network that acts epsilon-greedily, and one compiled call
per rollout that computes the rollout's Q(lambda) returns and runs every epoch and minibatch."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from rlbase.common.base_model import SavesExplorationRate
from rlbase.common.errors import RLBaseError
from rlbase.common.families.actor_critic import new_shuffle_seed, restore_seed
from rlbase.common.families.q_learning.acting import EpsilonGreedyQ
from rlbase.common.families.q_learning.networks import QNetwork, check_action_space
from rlbase.common.families.q_learning.numpy_q import NumpyQ
from rlbase.common.io.checkpoint import generator_state, set_generator_state
from rlbase.common.loops.rollout import Rollout
from rlbase.common.networks.numpy_actor import use_numpy_actor
from rlbase.common.networks.policies import has_images, xla_is_faster
from rlbase.common.networks.registry import get_network_builder
from rlbase.common.tf_model import TFModel
from rlbase.common.tf_util import (
    Adam,
    CompiledFunction,
    clip_by_global_norm,
    compile_fn,
    configure_threads,
    spec_like,
)
from rlbase.pqn.config import PQNConfig
from rlbase.pqn.losses import q_lambda_returns, q_loss
from rlbase.pqn.radam import RAdam

STAT_NAMES = ("loss", "q_values", "grad_norm")
# Updates from which XLA's compile time is repaid.
XLA_MIN_UPDATES = 200
# The mlp's shape in PQN's reference code for vector observations (ReLU, 120 then 84 units,
# each layer-normalized); the user's num_layers / num_hidden / layer_sizes replace it.
MLP_SIZES = (120, 84)


class Model(EpsilonGreedyQ, SavesExplorationRate, TFModel):
    """PQN (Gallici et al., ICLR 2025): Q-learning on ``num_envs`` parallel envs with no
    replay buffer and no target network, the Q-network's layers normalized instead.

    Each update takes one rollout of ``nsteps`` steps of every env, computes its Q(lambda)
    returns with the weights that acted (:func:`~rlbase.pqn.losses.q_lambda_returns`), then
    runs ``noptepochs`` shuffled passes of ``nminibatches`` gradient steps on the squared
    error of the taken actions' Q-values, all in one compiled call.
    """

    algorithm = "pqn"
    architecture = ("nsteps", "nminibatches", "layer_norm")
    stat_names = STAT_NAMES

    config: PQNConfig

    def __init__(self, q: QNetwork, num_envs: int, network_kwargs: dict[str, Any],
                 config: PQNConfig, jit_compile: bool = False):
        super().__init__(q.observation_space, q.action_space, q.network_name, network_kwargs,
                         config, num_envs)
        nbatch = num_envs * config.nsteps
        if nbatch % config.nminibatches:
            raise RLBaseError(f"pqn: nsteps * num_envs ({config.nsteps} * {num_envs} = "
                              f"{nbatch}) must be divisible by nminibatches "
                              f"({config.nminibatches})")
        space = self.action_space
        assert isinstance(space, gym.spaces.Discrete)  # QNetwork checked it
        self.q = q
        self.num_actions, self.action_start = int(space.n), int(space.start)
        self.nsteps = config.nsteps
        self.epsilon = 0.0  # the exploration rate step(deterministic=False) acts with
        self.updates = 0
        self.rng = np.random.default_rng(config.seed)
        optimizer = RAdam if config.optimizer == "radam" else Adam
        self.optimizer: keras.optimizers.Optimizer = optimizer(learning_rate=2.5e-4,
                                                               epsilon=1e-8)
        self.optimizer.build(q.trainable_variables)
        # The minibatches' order, drawn in the graph from this seed (checkpointed).
        self.shuffle_seed = new_shuffle_seed()
        self.jit_compile = jit_compile
        self._act_jit = xla_is_faster(self.observation_space)
        self.mirror = NumpyQ.create(q) if use_numpy_actor() else None

    # -- acting ---------------------------------------------------------------------------------
    def value(self, obs: Any, state: np.ndarray | None = None,
              mask: np.ndarray | None = None) -> np.ndarray:
        """``max_a Q(s, a)``: the value of the greedy policy (what a truncated episode's
        last step bootstraps from)."""
        return self.q_values(self._observations(obs)).max(axis=1)

    # -- training -------------------------------------------------------------------------------
    @cached_property
    def train_fn(self) -> CompiledFunction:
        num_envs, nbatch = self.num_envs, self.num_envs * self.nsteps
        rows = spec_like([num_envs, self.nsteps], np.float32)
        return compile_fn(self.train_graph, [
            self._obs_spec(nbatch), spec_like([nbatch], np.int32), rows, rows,
            self._obs_spec(num_envs), spec_like([], np.float32)], self.jit_compile)

    def train_graph(self, obs, actions, rewards, dones, last_obs, lr):
        config, q = self.config, self.q
        num_envs, nsteps = self.num_envs, self.nsteps
        nbatch = num_envs * nsteps
        # The returns, from the weights that acted: max Q of every next observation.
        max_q = tf.reshape(tf.reduce_max(q.q_values(obs), axis=1), [num_envs, nsteps])
        last_max_q = tf.reduce_max(q.q_values(last_obs), axis=1)
        next_max_q = tf.concat([max_q[:, 1:], last_max_q[:, None]], axis=1)
        returns = tf.reshape(q_lambda_returns(rewards, dones, next_max_q, config.gamma,
                                              config.lam), [nbatch])

        per_mb = nbatch // config.nminibatches
        nupdates = config.noptepochs * config.nminibatches
        seed = self.shuffle_seed.assign_add(tf.constant([0, 1], tf.int64))
        noise = tf.random.stateless_uniform([config.noptepochs, nbatch], seed)
        plan = tf.reshape(tf.argsort(noise, axis=1), [nupdates, per_mb])
        self.optimizer.learning_rate.assign(lr)
        variables = q.trainable_variables

        def minibatch_step(i: tf.Tensor, totals: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            rows = plan[i]
            mb_obs = tf.nest.map_structure(lambda x: tf.gather(x, rows), obs)
            with tf.GradientTape() as tape:
                taken = tf.gather(q.q_values(mb_obs), tf.gather(actions, rows), batch_dims=1)
                loss = q_loss(taken, tf.gather(returns, rows))
            grads, norm = clip_by_global_norm(tape.gradient(loss, variables),
                                              config.max_grad_norm)
            self.optimizer.apply_gradients(zip(grads, variables))
            return i + 1, totals + tf.stack([loss, tf.reduce_mean(taken), norm])

        _, totals = tf.while_loop(lambda i, _: i < nupdates, minibatch_step,
                                  (tf.constant(0), tf.zeros([len(STAT_NAMES)])))
        # The new weights come back with the call, for the numpy mirror.
        weights = [tf.identity(v) for v in self.mirror.variables] if self.mirror else []
        return (totals / nupdates, *weights)

    def train(self, rollout: Rollout, lr: float) -> dict[str, float]:
        """One update on ``rollout`` (actions as the env took them); the mean statistics of
        its minibatch steps."""
        actions = np.asarray(rollout.actions, np.int64) - self.action_start
        stats, *weights = self.train_fn(rollout.obs, actions.astype(np.int32), rollout.rewards,
                                        rollout.dones, rollout.last_obs, np.float32(lr))
        if self.mirror is not None:
            self.mirror.sync([w.numpy() for w in weights])
        self.updates += 1
        return dict(zip(STAT_NAMES, stats.numpy().tolist()))

    # -- the declared interface -----------------------------------------------------------------
    def variable_groups(self) -> dict[str, Sequence[tf.Variable]]:
        return {"q": self.q.weights, "optimizer": self.optimizer.variables}

    def after_load(self) -> None:
        if self.mirror is not None:
            self.mirror.sync()

    def resume_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The exploration's generator and rate, the update count and the shuffling seed."""
        meta, arrays = super().resume_state()
        meta.update(rng=generator_state(self.rng), epsilon=self.epsilon, updates=self.updates)
        arrays["loop/shuffle_seed"] = self.shuffle_seed.numpy()
        return meta, arrays

    def restore_resume_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super().restore_resume_state(meta, arrays)
        try:
            rng, epsilon, updates = meta["rng"], meta["epsilon"], meta["updates"]
        except KeyError as exc:
            raise RLBaseError(f"the checkpoint lacks PQN's {exc.args[0]}: it was written by "
                              "another algorithm or rlbase version") from None
        set_generator_state(self.rng, rng)
        self.epsilon, self.updates = float(epsilon), int(updates)
        restore_seed(arrays, "loop/shuffle_seed", self.shuffle_seed,
                     "PQN's minibatch shuffling seed", "another algorithm")


def q_network_kwargs(network: Any, network_kwargs: dict[str, Any], layer_norm: bool
                     ) -> tuple[dict[str, Any], bool]:
    """The network builder's arguments and whether its layers are normalized: for 'mlp',
    ReLU and :data:`MLP_SIZES` under the user's; ``layer_norm`` among the network's
    arguments decides over the config's. A builder that cannot normalize its layers is
    refused in one line while layer_norm is on (it would be silently dropped)."""
    kwargs = dict(network_kwargs)
    if network == "mlp":
        kwargs.setdefault("activation", "relu")
        if not {"num_layers", "num_hidden", "layer_sizes"} & set(kwargs):
            kwargs["layer_sizes"] = MLP_SIZES
    layer_norm = bool(kwargs.pop("layer_norm", layer_norm))
    params = inspect.signature(get_network_builder(network)).parameters
    if "layer_norm" in params:
        kwargs["layer_norm"] = layer_norm
    elif layer_norm:
        name = network if isinstance(network, str) else network.__name__
        raise RLBaseError(f"pqn: network {name!r} takes no layer_norm, which PQN needs in "
                          "place of a target network; use mlp, cnn, cnn_small, conv_only or a "
                          "builder with a layer_norm argument, or pass layer_norm=False")
    return kwargs, layer_norm


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: PQNConfig, *,
                total_timesteps: int = 0) -> Model:
    """PQN's model for these spaces and ``num_envs`` envs (learn() and rlbase.PQN call this).

    network: a registered feed-forward network name or a builder callable: the whole
        Q-network but its linear output layer.
    network_kwargs: the network builder's arguments (see :func:`q_network_kwargs`).
    config: PQN's parameters (``jit_compile`` None: XLA for runs of at least 200 updates of
        ``total_timesteps``, except convnets on a CPU).
    """
    check_action_space(action_space, "pqn")
    configure_threads("convnet" if has_images(observation_space) else "small")
    kwargs, layer_norm = q_network_kwargs(network, network_kwargs, config.layer_norm)
    config = config.replace(layer_norm=layer_norm)
    q = QNetwork(observation_space, action_space, network, hiddens=(), dueling=False,
                 layer_norm=False, network_kwargs=kwargs, algorithm="pqn")
    jit = config.jit_compile
    if jit is None:
        updates = total_timesteps // max(1, num_envs * config.nsteps)
        jit = updates >= XLA_MIN_UPDATES and xla_is_faster(observation_space)
    return Model(q, num_envs, kwargs, config, jit_compile=bool(jit))
