"""DQN's model: online and target Q-networks, Adam, the replay buffer, and the compiled calls.

``train`` runs ``gradient_steps`` updates in one compiled call (a ``tf.while_loop`` over
minibatches sampled beforehand in numpy), because crossing into TF costs more than a small
network's update. The target network is fixed during the call, so its Q-values for every
minibatch come from one batched forward pass before the loop. Acting goes through the numpy
mirror for MLP Q-networks, else through one compiled call per vectorized step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.common import nested
from rlbase.common.base_model import SavesExplorationRate
from rlbase.common.buffers.raw_replay import RawReplay, attach_replay_env, draw
from rlbase.common.buffers.replay_buffer import PrioritizedReplayBuffer
from rlbase.common.errors import RLBaseError
from rlbase.common.io.checkpoint import generator_state, set_generator_state
from rlbase.common.logs import logger
from rlbase.common.networks.numpy_actor import use_numpy_actor
from rlbase.common.networks.policies import has_images, xla_is_faster
from rlbase.common.networks.policy_graph import PolicyGraph
from rlbase.common.tf_model import TFModel
from rlbase.common.tf_util import (
    Adam,
    CompiledFunction,
    clip_by_global_norm,
    compile_fn,
    configure_threads,
    observation_spec,
    spec_like,
)
from rlbase.common.vec_env import VecEnv
from rlbase.dqn.best_model import BestModelRule
from rlbase.dqn.config import DQNConfig
from rlbase.dqn.losses import huber, next_values, td_target
from rlbase.dqn.networks import QNetwork, check_action_space, network_builder_kwargs
from rlbase.dqn.numpy_q import NumpyQ
from rlbase.dqn.param_noise import PerturbedQ, kl_threshold
from rlbase.dqn.replay import Buffer, FrameLayout, frame_layout, make_replay_buffer

STAT_NAMES = ("loss", "grad_norm", "q_mean", "td_abs_mean")
# Updates from which XLA's ~2 s compile is repaid.
XLA_MIN_UPDATES = 2000


class Model(SavesExplorationRate, TFModel):
    """Online and target :class:`QNetwork`, the optimizer, the replay buffer, acting and the
    compiled update.

    make_net: builds a fresh QNetwork for the env's spaces (called for every copy).
    num_envs: envs per vectorized step (the frame-stack buffer's row width).
    network_kwargs: the network builder's arguments.
    config: DQN's parameters (gamma, double_q, max_grad_norm, gradient_steps, batch_size,
        buffer_size, prioritized_replay, param_noise, seed, ...).
    jit_compile: compile the update with XLA.
    """

    algorithm = "dqn"

    config: DQNConfig

    def __init__(self, make_net: Callable[[], QNetwork], num_envs: int,
                 network_kwargs: dict[str, Any], config: DQNConfig, jit_compile: bool = False):
        q = make_net()
        super().__init__(q.observation_space, q.action_space, q.network_name, network_kwargs,
                         config, num_envs)
        space = self.action_space
        assert isinstance(space, gym.spaces.Discrete)  # QNetwork checked it
        self.num_actions, self.action_start = int(space.n), int(space.start)
        self.q = q
        self.target = make_net()
        self.target.trainable = False  # changed by copies only, never by a gradient step
        self.gamma, self.double_q = config.gamma, config.double_q
        self.max_grad_norm: float | None = config.max_grad_norm
        self.gradient_steps, self.batch_size = config.gradient_steps, config.batch_size
        self.epsilon = 0.0  # the exploration rate step(deterministic=False) acts with
        self.updates = 0    # gradient steps taken
        self.rng = np.random.default_rng(config.seed)
        self.optimizer = Adam(learning_rate=5e-4, epsilon=1e-8)
        self.optimizer.build(self.q.trainable_variables)
        self.jit_compile = jit_compile
        self._act_jit = xla_is_faster(self.observation_space)
        self.mirror = NumpyQ.create(q) if use_numpy_actor() else None
        self.param_noise = PerturbedQ(q, make_net, self.mirror is not None, self._act_jit) \
            if config.param_noise else None
        self.frame_layout: FrameLayout | None = None
        # What the buffer stores: the raw observations below a VecNormalize (see attach_env).
        self.stored_space: gym.Space = self.observation_space
        self.replay_buffer: Buffer = self._new_buffer()
        self.raw_replay = RawReplay()  # set by attach_env
        # The best-model rule of the train() running on this model: its state goes into that
        # run's checkpoints (None outside train(), or when the rule is off).
        self.best_model: BestModelRule | None = None
        self._target_stale = True
        self.update_target()

    # -- the replay buffer ----------------------------------------------------------------------
    def _new_buffer(self) -> Buffer:
        config = self.config
        her = (config.replay_buffer_kwargs or {}) if config.replay_buffer_class == "her" \
            else None
        return make_replay_buffer(self.stored_space, self.num_envs, config.buffer_size,
                                  config.prioritized_replay, config.prioritized_replay_alpha,
                                  self.frame_layout, her)

    def attach_env(self, env: VecEnv) -> None:
        """Also lay the replay buffer out for ``env``: raw observations in their own dtype
        (uint8 images stay uint8 behind a VecNormalize), behind a VecFrameStack each frame
        stored once (see rlbase.dqn.replay)."""
        super().attach_env(env)
        self.raw_replay = RawReplay(env)
        layout, space = frame_layout(env), self.raw_replay.stored_space(env.observation_space)
        if (layout, space) != (self.frame_layout, self.stored_space):
            if len(self.replay_buffer):
                logger.log(f"dqn: the env stacks frames or gives raw observations differently; "
                           f"the replay buffer's {len(self.replay_buffer)} transitions are "
                           "dropped")
            self.frame_layout, self.stored_space = layout, space
            self.replay_buffer = self._new_buffer()
        self.replay_buffer = attach_replay_env(self.replay_buffer, env)

    # -- acting ---------------------------------------------------------------------------------
    def _obs_spec(self, batch: int | None, *lead: int) -> Any:
        return observation_spec(self.observation_space, [*lead, batch])

    @cached_property
    def q_fn(self) -> CompiledFunction:
        return compile_fn(self.q, [self._obs_spec(None)], self._act_jit)

    def q_values(self, obs: Any, perturbed: bool = False) -> np.ndarray:
        """``[B, num_actions]`` Q-values of the online (or the perturbed) network."""
        if perturbed:
            assert self.param_noise is not None
            return self.param_noise.q_values(obs)
        if self.mirror is not None:
            return self.mirror.q_values(obs)
        return self.q_fn(obs).numpy()

    def act(self, obs: Any, epsilon: float, perturbed: bool = False
            ) -> tuple[np.ndarray, np.ndarray]:
        """Epsilon-greedy action indices (0..n-1) and the Q-value of the greedy action."""
        q = self.q_values(obs, perturbed)
        greedy = q.argmax(axis=1)
        qmax = q[np.arange(len(q)), greedy]
        if epsilon > 0:
            explore = self.rng.random(len(q)) < epsilon
            if explore.any():
                greedy = np.where(explore, self.rng.integers(0, q.shape[1], len(q)), greedy)
        return greedy, qmax

    def step(self, obs: Any, state: np.ndarray | None = None, mask: np.ndarray | None = None,
             deterministic: bool = False) -> tuple[np.ndarray, np.ndarray, Any, None]:
        """(actions, Q-value of the greedy action, state, None) for a batch of observations:
        the greedy action, or epsilon-greedy with ``model.epsilon`` unless deterministic."""
        actions, qmax = self.act(self._observations(obs),
                                 0.0 if deterministic else self.epsilon)
        return actions + self.action_start, qmax, state, None

    def policy_graph(self) -> PolicyGraph:
        """The greedy action of the online Q-network (``step(..., deterministic=True)``), and
        epsilon-greedy at the current exploration rate with an explicit seed."""
        q, start, n, eps = self.q, self.action_start, self.num_actions, float(self.epsilon)

        def act(obs: Any, state: tf.Tensor, mask: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            return tf.argmax(q(obs), axis=1) + start, state

        def sample(obs: Any, state: tf.Tensor, mask: tf.Tensor, seed: tf.Tensor
                   ) -> tuple[tf.Tensor, tf.Tensor]:
            greedy = tf.argmax(q(obs), axis=1)
            batch = tf.shape(greedy)[:1]
            explore = tf.random.stateless_uniform(batch, seed) < eps
            other = tf.random.stateless_uniform(batch, seed + tf.constant([0, 1], tf.int64),
                                                maxval=n, dtype=tf.int64)
            return tf.where(explore, other, greedy) + start, state

        return PolicyGraph(self.observation_space, 0, act, sample, [q])

    def __call__(self, obs: Any, stochastic: bool = True, update_eps: float = -1.0
                 ) -> np.ndarray:
        """Baselines' ``act(obs[None])``: actions for a batch of observations, epsilon-greedy
        with the model's exploration rate (``stochastic=False``: greedy); ``update_eps >= 0``
        sets that rate first, for this and later calls."""
        shape = self.observation_space.shape
        if shape is not None and not nested.is_nested(self.observation_space) and \
                np.ndim(obs) == len(shape):
            raise RLBaseError(f"act takes a batch of observations, got one observation of "
                              f"shape {np.shape(obs)}: write act(obs[None])")
        if update_eps >= 0:
            self.epsilon = float(update_eps)
        return self.step(obs, deterministic=not stochastic)[0]

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

    # -- training -------------------------------------------------------------------------------
    @cached_property
    def train_fn(self) -> CompiledFunction:
        g, b = self.gradient_steps, self.batch_size
        vec = spec_like([g, b], np.float32)
        return compile_fn(self._train_graph, [
            self._obs_spec(b, g), spec_like([g, b], np.int32), vec, self._obs_spec(b, g), vec,
            vec, spec_like([], np.float32)], self.jit_compile)

    def _train_graph(self, obs, actions, rewards, next_obs, dones, weights, lr):
        g, b = self.gradient_steps, self.batch_size
        self.optimizer.learning_rate.assign(lr)
        flat_next = tf.nest.map_structure(lambda x: tf.reshape(x, [g * b, *x.shape[2:]]),
                                          next_obs)
        next_q_target = tf.reshape(self.target(flat_next), [g, b, -1])
        targets = None
        if not self.double_q:  # the target is fixed during the call: all targets at once
            targets = td_target(rewards, dones, self.gamma, next_values(next_q_target, None))
        variables = self.q.trainable_variables

        def body(i, td_errors, stats):
            with tf.GradientTape() as tape:
                if targets is None:
                    # One forward pass over obs and next_obs together (one bigger matmul).
                    both = self.q(tf.nest.map_structure(
                        lambda x, y: tf.concat([x[i], y[i]], axis=0), obs, next_obs))
                    q_all, next_online = both[:b], tf.stop_gradient(both[b:])
                    target = td_target(rewards[i], dones[i], self.gamma,
                                       next_values(next_q_target[i], next_online))
                else:
                    q_all, target = self.q(tf.nest.map_structure(lambda x: x[i], obs)), \
                        targets[i]
                q_taken = tf.gather(q_all, actions[i], batch_dims=1)
                td = q_taken - tf.stop_gradient(target)
                loss = tf.reduce_mean(weights[i] * huber(td))
            grads, norm = clip_by_global_norm(tape.gradient(loss, variables),
                                              self.max_grad_norm)
            self.optimizer.apply_gradients(zip(grads, variables))
            step_stats = tf.stack([loss, norm, tf.reduce_mean(q_taken),
                                   tf.reduce_mean(tf.abs(td))])
            return i + 1, td_errors.write(i, td), stats + step_stats

        _, td_errors, stats = tf.while_loop(
            lambda i, *_: i < g, body,
            (tf.constant(0), tf.TensorArray(tf.float32, size=g), tf.zeros(len(STAT_NAMES))))
        # The new weights come back with the call, for the numpy mirror.
        weights_out = [tf.identity(v) for v in self.mirror.variables] if self.mirror else []
        return (td_errors.stack(), stats / g, *weights_out)

    def train(self, obs: Any, actions: np.ndarray, rewards: np.ndarray,
              next_obs: Any, dones: np.ndarray, weights: np.ndarray, lr: float
              ) -> tuple[np.ndarray, dict[str, float]]:
        """``gradient_steps`` updates on ``[gradient_steps, batch_size, ...]`` minibatches;
        returns the TD errors ``[gradient_steps, batch_size]`` and mean statistics."""
        td_errors, stats, *values = self.train_fn(obs, actions, rewards, next_obs, dones,
                                                  weights, np.float32(lr))
        if self.mirror is not None:
            self.mirror.sync([v.numpy() for v in values])
        self._target_stale = True
        self.updates += self.gradient_steps
        return td_errors.numpy(), dict(zip(STAT_NAMES, stats.numpy().tolist()))

    def replay_update(self, lr: float, beta: float, priority_eps: float) -> dict[str, float]:
        """One training call on minibatches drawn from the replay buffer (importance-weighted
        with exponent ``beta`` and re-prioritized by |TD error| + ``priority_eps`` when the
        replay is prioritized)."""
        buffer, g, b = self.replay_buffer, self.gradient_steps, self.batch_size
        idx, batch = draw(buffer, g * b, self.rng, b)
        batch = self.raw_replay.normalize(batch)
        weights = buffer.weights(idx, beta) if isinstance(buffer, PrioritizedReplayBuffer) \
            else np.ones(g * b, np.float32)

        def stacked(x: np.ndarray) -> np.ndarray:
            return x.reshape(g, b, *x.shape[1:])

        td_errors, stats = self.train(nested.map_structure(stacked, batch.obs),
                                      stacked(batch.actions), stacked(batch.rewards),
                                      nested.map_structure(stacked, batch.next_obs),
                                      stacked(batch.dones), stacked(weights), lr)
        # A non-finite loss stops training in the loop, naming it; no priority is kept.
        if isinstance(buffer, PrioritizedReplayBuffer) and np.isfinite(td_errors).all():
            buffer.update_priorities(idx, np.abs(td_errors).ravel() + priority_eps)
        return stats

    @cached_property
    def _copy_target_fn(self) -> CompiledFunction:
        def copy():
            for src, dst in zip(self.q.weights, self.target.weights):
                dst.assign(src)
            return tf.constant(0)
        return compile_fn(copy, [])

    def update_target(self) -> None:
        """Copy the online weights into the target network (skipped when they are equal)."""
        if self._target_stale:
            self._copy_target_fn()
            self._target_stale = False

    # -- parameter noise ------------------------------------------------------------------------
    def _noise_seed(self) -> np.ndarray:
        return self.rng.integers(0, 2**31 - 1, size=2, dtype=np.int64)

    def perturb(self, scale: float) -> None:
        """Draw a new perturbation of the online weights into the acting copy."""
        assert self.param_noise is not None
        self.param_noise.perturb(scale, self._noise_seed())

    def perturbation_distance(self, obs: Any, scale: float) -> float:
        """Mean KL between the softmax of Q and of Q under a fresh perturbation of ``scale``."""
        assert self.param_noise is not None
        return self.param_noise.distance(obs, scale, self._noise_seed())

    def adapt_param_noise(self, epsilon: float) -> None:
        """Move the noise scale towards the KL that epsilon-greedy with ``epsilon`` would
        cause, measured on a replay minibatch."""
        assert self.param_noise is not None
        buffer, adaptation = self.replay_buffer, self.param_noise.adaptation
        sample = self.raw_replay.normalize_obs(
            buffer.get(buffer.sample_indices(self.batch_size, self.rng)).obs)
        distance = self.perturbation_distance(sample, adaptation.scale)
        adaptation.adapt(distance, kl_threshold(epsilon, self.num_actions))

    # -- the declared interface -----------------------------------------------------------------
    def variable_groups(self) -> dict[str, Sequence[tf.Variable]]:
        # The group names of rlbase 0.1's files, which still load.
        return {"q": self.q.weights, "target": self.target.weights,
                "optimizer": self.optimizer.variables}

    def after_load(self) -> None:
        if self.mirror is not None:
            self.mirror.sync()
        self._target_stale = False  # the file's own target network is kept

    def resume_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The replay buffer, the generator, epsilon, the update count, the noise scale and
        the running best-model rule."""
        meta, arrays = super().resume_state()
        replay_meta, replay_arrays = self.raw_replay.buffer_state(self.replay_buffer)
        arrays.update(replay_arrays)
        noise = self.param_noise
        meta.update(replay=replay_meta, rng=generator_state(self.rng), epsilon=self.epsilon,
                    updates=self.updates,
                    noise_scale=None if noise is None else noise.adaptation.scale)
        if self.best_model is not None:
            best_meta, best_arrays = self.best_model.state()
            meta["best_model"] = best_meta
            arrays.update(best_arrays)
        return meta, arrays

    def restore_resume_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super().restore_resume_state(meta, arrays)
        try:
            replay_meta, rng, epsilon, updates = (meta["replay"], meta["rng"], meta["epsilon"],
                                                  meta["updates"])
        except KeyError as exc:
            raise RLBaseError(f"the checkpoint lacks DQN's {exc.args[0]}: it was written by "
                              "another algorithm or rlbase version") from None
        self.raw_replay.restore_buffer(self.replay_buffer, replay_meta, arrays)
        set_generator_state(self.rng, rng)
        self.epsilon, self.updates = float(epsilon), int(updates)
        if self.param_noise is not None and meta.get("noise_scale") is not None:
            self.param_noise.adaptation.scale = float(meta["noise_scale"])
        if self.best_model is not None and isinstance(meta.get("best_model"), dict):
            self.best_model.set_state(meta["best_model"], arrays)

    def pretrain_parts(self) -> tuple[list[Any], Any, Any]:
        """Behaviour cloning with the Q-values as logits: the greedy action becomes the
        expert's."""
        start = self.action_start

        def loss(obs: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
            labels = tf.cast(actions, tf.int32) - start
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels, self.q(obs)))

        def after() -> None:
            if self.mirror is not None:
                self.mirror.sync()
            self._target_stale = True  # the fitted weights become the target's too
            self.update_target()

        return self.q.trainable_variables, loss, after


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: DQNConfig, *,
                total_timesteps: int = 0) -> Model:
    """DQN's model for these spaces and ``num_envs`` envs (learn() and rlbase.DQN call this).

    network: a registered feed-forward network name or a builder callable (the torso).
    network_kwargs: the network builder's arguments; ``layer_norm`` there also normalizes the
        heads (Baselines' deepq), and entries rlbase 0.1 saved beside them (hiddens, dueling)
        are set aside.
    config: DQN's parameters (``jit_compile`` None: XLA for runs of at least 2000 gradient
        steps of ``total_timesteps``, except convnets on a CPU).
    """
    check_action_space(action_space)
    configure_threads("convnet" if has_images(observation_space) else "small")
    kwargs, layer_norm = network_builder_kwargs(network, network_kwargs, config.layer_norm)
    config = config.replace(layer_norm=layer_norm)

    def make_net() -> QNetwork:
        return QNetwork(observation_space, action_space, network, config.hiddens,
                        config.dueling, layer_norm, kwargs)

    jit = config.jit_compile
    if jit is None:
        updates = max(0, total_timesteps - config.learning_starts) // config.train_freq * \
            config.gradient_steps
        jit = updates >= XLA_MIN_UPDATES and xla_is_faster(observation_space)
    return Model(make_net, num_envs, kwargs, config, jit_compile=bool(jit))
