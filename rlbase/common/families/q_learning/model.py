"""The model every Q-learning algorithm (DQN, QR-DQN) builds on: online and target networks,
Adam, the replay buffer, epsilon-greedy acting, target copies, saving and resuming, and the
compiled update loop around the algorithm's own loss.

``train`` runs ``gradient_steps`` updates in one compiled call (a ``tf.while_loop`` over
minibatches sampled beforehand in numpy), because crossing into TF costs more than a small
network's update. The target network is fixed during the call, so its outputs for every
minibatch come from one batched forward pass before the loop. Acting goes through the numpy
mirror for MLP Q-networks, else through one compiled call per vectorized step.

A subclass gives ``algorithm``, ``stat_names`` and :meth:`QLearningModel.step_loss` (and may
give parameter noise or a prioritized buffer through :meth:`QLearningModel.make_param_noise`
and :meth:`QLearningModel.priority_alpha`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.common import nested
from rlbase.common.base_model import SavesExplorationRate
from rlbase.common.buffers.raw_replay import RawReplay, attach_replay_env, draw
from rlbase.common.buffers.replay_buffer import PrioritizedReplayBuffer
from rlbase.common.config import OffPolicyConfig
from rlbase.common.errors import RLBaseError
from rlbase.common.families.q_learning.acting import EpsilonGreedyQ
from rlbase.common.families.q_learning.best_model import BestModelRule
from rlbase.common.families.q_learning.networks import QNetwork
from rlbase.common.families.q_learning.numpy_q import NumpyQ
from rlbase.common.families.q_learning.replay import (
    Buffer,
    FrameLayout,
    frame_layout,
    make_replay_buffer,
)
from rlbase.common.io.checkpoint import generator_state, set_generator_state
from rlbase.common.logs import logger
from rlbase.common.networks.numpy_actor import use_numpy_actor
from rlbase.common.networks.policies import xla_is_faster
from rlbase.common.tf_model import TFModel
from rlbase.common.tf_util import (
    Adam,
    CompiledFunction,
    clip_by_global_norm,
    compile_fn,
    spec_like,
)
from rlbase.common.vec_env import VecEnv

# Updates from which XLA's ~2 s compile is repaid.
XLA_MIN_UPDATES = 2000


class QLearningConfig(Protocol):
    """The config fields the shared model and hooks read (DQN's and QR-DQN's configs have
    them, with the same names and units)."""

    lr: float | Callable[[float], float]
    buffer_size: int
    learning_starts: int
    batch_size: int
    train_freq: int
    gradient_steps: int
    gamma: float
    target_update_interval: int
    exploration_fraction: float
    exploration_initial_eps: float
    exploration_final_eps: float
    max_grad_norm: float | None
    best_model_interval: int | None
    replay_buffer_class: str | None
    replay_buffer_kwargs: dict | None
    action_masks: bool | str
    seed: int | None


class ParamNoise(Protocol):
    """What acting reads from a model's parameter noise (DQN's rlbase.dqn.param_noise)."""

    def q_values(self, obs: Any) -> np.ndarray: ...


C = TypeVar("C", bound=OffPolicyConfig)


def xla_pays_off(learning_starts: int, train_freq: int, gradient_steps: int,
                 total_timesteps: int, observation_space: gym.Space) -> bool:
    """``jit_compile=None``'s choice: XLA for runs of at least XLA_MIN_UPDATES gradient steps
    of ``total_timesteps``, except convnets on a CPU."""
    updates = max(0, total_timesteps - learning_starts) // train_freq * gradient_steps
    return updates >= XLA_MIN_UPDATES and xla_is_faster(observation_space)


class QLearningModel(EpsilonGreedyQ, SavesExplorationRate, TFModel, Generic[C]):
    """Online and target :class:`QNetwork`, the optimizer, the replay buffer, acting and the
    compiled update.

    make_net: builds a fresh QNetwork for the env's spaces (called for every copy).
    num_envs: envs per vectorized step (the frame-stack buffer's row width).
    network_kwargs: the network builder's arguments.
    config: the algorithm's parameters (:class:`QLearningConfig`'s fields at least).
    jit_compile: compile the update with XLA.
    adam_epsilon: Adam's epsilon.
    """

    #: the statistics the update returns: loss, grad_norm, then :meth:`step_loss`'s
    stat_names: ClassVar[tuple[str, ...]]

    config: C

    def __init__(self, make_net: Callable[[], QNetwork], num_envs: int,
                 network_kwargs: dict[str, Any], config: C, jit_compile: bool = False,
                 adam_epsilon: float = 1e-8):
        q = make_net()
        super().__init__(q.observation_space, q.action_space, q.network_name, network_kwargs,
                         config, num_envs)
        space = self.action_space
        assert isinstance(space, gym.spaces.Discrete)  # QNetwork checked it
        self.num_actions, self.action_start = int(space.n), int(space.start)
        self.q = q
        self.target = make_net()
        self.target.trainable = False  # changed by copies only, never by a gradient step
        settings = self.settings
        self.gamma = settings.gamma
        self.max_grad_norm: float | None = settings.max_grad_norm
        self.gradient_steps, self.batch_size = settings.gradient_steps, settings.batch_size
        self.epsilon = 0.0  # the exploration rate step(deterministic=False) acts with
        self.updates = 0    # gradient steps taken
        self.rng = np.random.default_rng(config.seed)
        self.optimizer = Adam(learning_rate=5e-4, epsilon=adam_epsilon)
        self.optimizer.build(self.q.trainable_variables)
        self.jit_compile = jit_compile
        self._act_jit = xla_is_faster(self.observation_space)
        self.mirror = NumpyQ.create(q) if use_numpy_actor() else None
        self.param_noise = self.make_param_noise(make_net)
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

    @property
    def action_masking(self) -> bool | str:
        return self.settings.action_masks

    @property
    def settings(self) -> QLearningConfig:
        """The config as the shared code reads it."""
        return cast(QLearningConfig, self.config)

    # -- what a subclass adds -------------------------------------------------------------------
    def make_param_noise(self, make_net: Callable[[], QNetwork]) -> ParamNoise | None:
        """The perturbed copy acting with ``perturbed=True`` uses (None: no parameter noise)."""
        return None

    def priority_alpha(self) -> float | None:
        """Prioritized replay's exponent (None: uniform replay)."""
        return None

    def fixed_targets(self, rewards: tf.Tensor, dones: tf.Tensor, next_target: tf.Tensor
                      ) -> tf.Tensor | None:
        """Targets of every minibatch computed before the update loop, when they depend on the
        (fixed) target network only; None: :meth:`step_loss` computes them."""
        return None

    def step_loss(self, obs: Any, actions: tf.Tensor, rewards: tf.Tensor, next_obs: Any,
                  dones: tf.Tensor, weights: tf.Tensor, next_target: tf.Tensor,
                  targets: tf.Tensor | None) -> tuple[tf.Tensor, tf.Tensor, list[tf.Tensor]]:
        """One minibatch's ``(loss, per-transition error, [statistics])`` under the gradient
        tape; the error is what a prioritized buffer takes as |priority| (``[batch_size]``).

        next_target: the target network's outputs on ``next_obs``.
        targets: this minibatch's row of :meth:`fixed_targets` (None when it gave none).
        """
        raise NotImplementedError

    # -- the replay buffer ----------------------------------------------------------------------
    def _new_buffer(self) -> Buffer:
        settings, alpha = self.settings, self.priority_alpha()
        her = (settings.replay_buffer_kwargs or {}) \
            if settings.replay_buffer_class == "her" else None
        return make_replay_buffer(self.stored_space, self.num_envs, settings.buffer_size,
                                  alpha is not None, alpha or 0.0, self.frame_layout, her)

    def attach_env(self, env: VecEnv) -> None:
        """Also lay the replay buffer out for ``env``: raw observations in their own dtype
        (uint8 images stay uint8 behind a VecNormalize), behind a VecFrameStack each frame
        stored once (see rlbase.common.families.q_learning.replay)."""
        super().attach_env(env)
        self.raw_replay = RawReplay(env)
        layout, space = frame_layout(env), self.raw_replay.stored_space(env.observation_space)
        if (layout, space) != (self.frame_layout, self.stored_space):
            if len(self.replay_buffer):
                logger.log(f"{self.algorithm}: the env stacks frames or gives raw observations "
                           f"differently; the replay buffer's {len(self.replay_buffer)} "
                           "transitions are dropped")
            self.frame_layout, self.stored_space = layout, space
            self.replay_buffer = self._new_buffer()
        self.replay_buffer = attach_replay_env(self.replay_buffer, env)

    # -- acting ---------------------------------------------------------------------------------
    def perturbed_q_values(self, obs: Any) -> np.ndarray:
        assert self.param_noise is not None
        return self.param_noise.q_values(obs)

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
        out = self.target(flat_next)
        next_target = tf.reshape(out, [g, b, *out.shape[1:]])
        # The target is fixed during the call: targets that need only it, all at once.
        targets = self.fixed_targets(rewards, dones, next_target)
        variables = self.q.trainable_variables

        def body(i, td_errors, stats):
            with tf.GradientTape() as tape:
                loss, td, extra = self.step_loss(
                    tf.nest.map_structure(lambda x: x[i], obs), actions[i], rewards[i],
                    tf.nest.map_structure(lambda x: x[i], next_obs), dones[i], weights[i],
                    next_target[i], None if targets is None else targets[i])
            grads, norm = clip_by_global_norm(tape.gradient(loss, variables),
                                              self.max_grad_norm)
            self.optimizer.apply_gradients(zip(grads, variables))
            return i + 1, td_errors.write(i, td), stats + tf.stack([loss, norm, *extra])

        _, td_errors, stats = tf.while_loop(
            lambda i, *_: i < g, body,
            (tf.constant(0), tf.TensorArray(tf.float32, size=g),
             tf.zeros(len(self.stat_names))))
        # The new weights come back with the call, for the numpy mirror.
        weights_out = [tf.identity(v) for v in self.mirror.variables] if self.mirror else []
        return (td_errors.stack(), stats / g, *weights_out)

    def train(self, obs: Any, actions: np.ndarray, rewards: np.ndarray,
              next_obs: Any, dones: np.ndarray, weights: np.ndarray, lr: float
              ) -> tuple[np.ndarray, dict[str, float]]:
        """``gradient_steps`` updates on ``[gradient_steps, batch_size, ...]`` minibatches;
        returns the per-transition errors ``[gradient_steps, batch_size]`` and mean
        statistics."""
        td_errors, stats, *values = self.train_fn(obs, actions, rewards, next_obs, dones,
                                                  weights, np.float32(lr))
        if self.mirror is not None:
            self.mirror.sync([v.numpy() for v in values])
        self._target_stale = True
        self.updates += self.gradient_steps
        return td_errors.numpy(), dict(zip(self.stat_names, stats.numpy().tolist()))

    def replay_update(self, lr: float, beta: float = 1.0, priority_eps: float = 1e-6
                      ) -> dict[str, float]:
        """One training call on minibatches drawn from the replay buffer (importance-weighted
        with exponent ``beta`` and re-prioritized by |error| + ``priority_eps`` when the
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

    # -- the declared interface -----------------------------------------------------------------
    def variable_groups(self) -> dict[str, Sequence[tf.Variable]]:
        # The group names of rlbase 0.1's DQN files, which still load.
        return {"q": self.q.weights, "target": self.target.weights,
                "optimizer": self.optimizer.variables}

    def after_load(self) -> None:
        if self.mirror is not None:
            self.mirror.sync()
        self._target_stale = False  # the file's own target network is kept

    def resume_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The replay buffer, the generator, epsilon, the update count and the running
        best-model rule."""
        meta, arrays = super().resume_state()
        replay_meta, replay_arrays = self.raw_replay.buffer_state(self.replay_buffer)
        arrays.update(replay_arrays)
        meta.update(replay=replay_meta, rng=generator_state(self.rng), epsilon=self.epsilon,
                    updates=self.updates)
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
            raise RLBaseError(f"the checkpoint lacks {self.algorithm.upper()}'s {exc.args[0]}: "
                              "it was written by another algorithm or rlbase version") from None
        self.raw_replay.restore_buffer(self.replay_buffer, replay_meta, arrays)
        set_generator_state(self.rng, rng)
        self.epsilon, self.updates = float(epsilon), int(updates)
        if self.best_model is not None and isinstance(meta.get("best_model"), dict):
            self.best_model.set_state(meta["best_model"], arrays)

    def after_pretraining(self) -> None:
        super().after_pretraining()
        self._target_stale = True  # the fitted weights become the target's too
        self.update_target()
