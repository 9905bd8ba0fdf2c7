"""The DQN learner: online and target Q-networks, Adam, and the compiled calls.

``train`` runs ``gradient_steps`` updates in one compiled call (a ``tf.while_loop`` over
minibatches sampled beforehand in numpy), because crossing into TF costs more than a small
network's update. The target network is fixed during the call, so its Q-values for every
minibatch come from one batched forward pass before the loop. Acting goes through the numpy
mirror for MLP Q-networks, else through one compiled call per vectorized step.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import tensorflow as tf

from rlbase.common.model_io import load_model, save_model
from rlbase.common.numpy_actor import use_numpy_actor
from rlbase.common.policies import xla_is_faster
from rlbase.common.tf_util import (
    Adam,
    CompiledFunction,
    clip_by_global_norm,
    compile_fn,
    spec_like,
)
from rlbase.dqn.models import QNetwork
from rlbase.dqn.numpy_q import NumpyQ

ALGORITHM = "dqn"
STAT_NAMES = ("loss", "grad_norm", "q_mean", "td_abs_mean")


def huber(x: tf.Tensor, delta: float = 1.0) -> tf.Tensor:
    """Quadratic within ``delta`` of zero, linear outside (the gradient never exceeds delta)."""
    ax = tf.abs(x)
    return tf.where(ax < delta, 0.5 * tf.square(x), delta * (ax - 0.5 * delta))


class Model:
    """Online and target :class:`QNetwork`, the optimizer, acting and the compiled update.

    make_net: builds a fresh QNetwork for the env's spaces (called for every copy).
    gamma: discount factor.
    double_q: pick the target's next action with the online network (van Hasselt et al.).
    grad_norm_clipping: clip the gradient's global norm to this (None: no clipping).
    gradient_steps: updates per :meth:`train` call (the minibatch stack's leading axis).
    batch_size: transitions per update.
    param_noise: also build the perturbed copies parameter-space noise acts with.
    jit_compile: compile the update with XLA.
    seed: seed of the numpy generator for epsilon-greedy draws and noise seeds.
    """

    def __init__(self, make_net: Any, gamma: float, double_q: bool,
                 grad_norm_clipping: float | None, gradient_steps: int, batch_size: int,
                 param_noise: bool = False, jit_compile: bool = False, seed: int | None = None,
                 hyperparameters: dict[str, Any] | None = None):
        self.q: QNetwork = make_net()
        self.target: QNetwork = make_net()
        self.gamma, self.double_q = float(gamma), bool(double_q)
        self.grad_norm_clipping = grad_norm_clipping
        self.gradient_steps, self.batch_size = int(gradient_steps), int(batch_size)
        self.hyperparameters = dict(hyperparameters or {})
        self.num_timesteps = 0
        self.epsilon = 0.0  # the exploration rate step(deterministic=False) acts with
        self.rng = np.random.default_rng(seed)
        self.optimizer = Adam(learning_rate=5e-4, epsilon=1e-8)
        self.optimizer.build(self.q.trainable_variables)
        self.jit_compile = jit_compile
        self._act_jit = xla_is_faster(self.q.ob_space)
        self.mirror = NumpyQ.create(self.q) if use_numpy_actor() else None
        self.perturbed = make_net() if param_noise else None
        self.adaptive = make_net() if param_noise else None
        self.perturbed_mirror = NumpyQ.create(self.perturbed) \
            if param_noise and self.mirror is not None else None
        self._target_stale = True
        self.update_target()
        self.replay_buffer: Any = None   # set by learn()
        self.param_noise: Any = None     # the AdaptiveParamNoise learn() used, if any

    # -- acting ----------------------------------------------------------------------------
    def _obs_spec(self, batch: int | None, *lead: int) -> tf.TensorSpec:
        ob = self.q.ob_space
        return spec_like([*lead, batch, *ob.shape], ob.dtype)

    @cached_property
    def q_fn(self) -> CompiledFunction:
        return compile_fn(self.q, [self._obs_spec(None)], self._act_jit)

    @cached_property
    def perturbed_q_fn(self) -> CompiledFunction:
        return compile_fn(self.perturbed, [self._obs_spec(None)], self._act_jit)

    def q_values(self, obs: np.ndarray, perturbed: bool = False) -> np.ndarray:
        """``[B, num_actions]`` Q-values of the online (or the perturbed) network."""
        if perturbed:
            if self.perturbed_mirror is not None:
                return self.perturbed_mirror.q_values(obs)
            return self.perturbed_q_fn(obs).numpy()
        if self.mirror is not None:
            return self.mirror.q_values(obs)
        return self.q_fn(obs).numpy()

    def act(self, obs: np.ndarray, epsilon: float, perturbed: bool = False
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

    def step(self, obs: np.ndarray, state: np.ndarray | None = None,
             mask: np.ndarray | None = None, deterministic: bool = False
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, None]:
        """(actions, Q-value of the greedy action, state, None) for a batch of observations.

        deterministic: the greedy action; otherwise epsilon-greedy with the current
        exploration rate (``model.epsilon``). ``state`` and ``mask`` are passed through
        (Q-networks are feed-forward).
        """
        obs = np.asarray(obs)
        actions, qmax = self.act(obs, 0.0 if deterministic else self.epsilon)
        return actions + int(self.q.ac_space.start), qmax, state, None

    def initial_state(self, batch: int) -> np.ndarray:
        return np.zeros((batch, 0), np.float32)

    # -- training --------------------------------------------------------------------------
    @cached_property
    def train_fn(self) -> CompiledFunction:
        g, b = self.gradient_steps, self.batch_size
        vec = spec_like([g, b], np.float32)
        return compile_fn(self._train_graph, [
            self._obs_spec(b, g), spec_like([g, b], np.int32), vec, self._obs_spec(b, g), vec,
            vec, spec_like([], np.float32)], self.jit_compile)

    def _next_values(self, next_q_target: tf.Tensor, next_q_online: tf.Tensor | None
                     ) -> tf.Tensor:
        if next_q_online is None:
            return tf.reduce_max(next_q_target, axis=-1)
        best = tf.argmax(next_q_online, axis=-1, output_type=tf.int32)
        return tf.gather(next_q_target, best, batch_dims=1)

    def _train_graph(self, obs, actions, rewards, next_obs, dones, weights, lr):
        g, b = self.gradient_steps, self.batch_size
        self.optimizer.learning_rate.assign(lr)
        flat_next = tf.reshape(next_obs, [g * b, *next_obs.shape[2:]])
        next_q_target = tf.reshape(self.target(flat_next), [g, b, -1])
        targets = None
        if not self.double_q:  # the target is fixed during the call: all targets at once
            targets = rewards + self.gamma * (1.0 - dones) * self._next_values(next_q_target,
                                                                                None)
        variables = self.q.trainable_variables

        def body(i, td_errors, stats):
            with tf.GradientTape() as tape:
                if targets is None:
                    # One forward pass over obs and next_obs together (one bigger matmul).
                    both = self.q(tf.concat([obs[i], next_obs[i]], axis=0))
                    q_all, next_online = both[:b], tf.stop_gradient(both[b:])
                    target = rewards[i] + self.gamma * (1.0 - dones[i]) * \
                        self._next_values(next_q_target[i], next_online)
                else:
                    q_all, target = self.q(obs[i]), targets[i]
                q_taken = tf.gather(q_all, actions[i], batch_dims=1)
                td = q_taken - tf.stop_gradient(target)
                loss = tf.reduce_mean(weights[i] * huber(td))
            grads, norm = clip_by_global_norm(tape.gradient(loss, variables),
                                              self.grad_norm_clipping)
            self.optimizer.apply_gradients(zip(grads, variables))
            step_stats = tf.stack([loss, norm, tf.reduce_mean(q_taken),
                                   tf.reduce_mean(tf.abs(td))])
            return i + 1, td_errors.write(i, td), stats + step_stats

        _, td_errors, stats = tf.while_loop(
            lambda i, *_: i < g, body,
            (tf.constant(0), tf.TensorArray(tf.float32, size=g), tf.zeros(len(STAT_NAMES))))
        weights_out = [tf.identity(v) for v in self.mirror.variables] if self.mirror else []
        return (td_errors.stack(), stats / g, *weights_out)

    def train(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
              next_obs: np.ndarray, dones: np.ndarray, weights: np.ndarray, lr: float
              ) -> tuple[np.ndarray, dict[str, float]]:
        """``gradient_steps`` updates on ``[gradient_steps, batch_size, ...]`` minibatches;
        returns the TD errors ``[gradient_steps, batch_size]`` and mean statistics."""
        td_errors, stats, *values = self.train_fn(obs, actions, rewards, next_obs, dones,
                                                  weights, np.float32(lr))
        if self.mirror is not None:
            self.mirror.sync([v.numpy() for v in values])
        self._target_stale = True
        return td_errors.numpy(), dict(zip(STAT_NAMES, stats.numpy().tolist()))

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

    # -- parameter noise ---------------------------------------------------------------------
    def _perturb_into(self, dst: QNetwork, scale: tf.Tensor, seed: tf.Tensor) -> None:
        noisy = {id(v) for v in self.q.perturbable_variables()}
        for k, (src, out) in enumerate(zip(self.q.weights, dst.weights)):
            if id(src) in noisy:
                noise = tf.random.stateless_normal(src.shape, seed=seed + [0, k], dtype=src.dtype)
                out.assign(src + scale * noise)
            else:
                out.assign(src)

    @cached_property
    def _perturb_fn(self) -> CompiledFunction:
        def perturb(scale, seed):
            self._perturb_into(self.perturbed, scale, seed)
            mirror = self.perturbed_mirror
            return tuple(tf.identity(v) for v in mirror.variables) if mirror else (scale,)
        return compile_fn(perturb, [spec_like([], np.float32), spec_like([2], np.int64)])

    def perturb(self, scale: float) -> None:
        """Draw a new perturbation of the online weights into the acting copy."""
        values = self._perturb_fn(np.float32(scale), self._noise_seed())
        if self.perturbed_mirror is not None:
            self.perturbed_mirror.sync([v.numpy() for v in values])

    @cached_property
    def _distance_fn(self) -> CompiledFunction:
        def distance(obs, scale, seed):
            self._perturb_into(self.adaptive, scale, seed)
            logp = tf.nn.log_softmax(self.q(obs))
            logp_noisy = tf.nn.log_softmax(self.adaptive(obs))
            return tf.reduce_mean(tf.reduce_sum(tf.exp(logp) * (logp - logp_noisy), axis=-1))
        return compile_fn(distance, [self._obs_spec(None), spec_like([], np.float32),
                                     spec_like([2], np.int64)])

    def perturbation_distance(self, obs: np.ndarray, scale: float) -> float:
        """Mean KL between the softmax of Q and of Q under a fresh perturbation of ``scale``
        (the distance parameter noise adapts its scale on, as in Baselines' deepq)."""
        return float(self._distance_fn(obs, np.float32(scale), self._noise_seed()))

    def _noise_seed(self) -> np.ndarray:
        return self.rng.integers(0, 2**31 - 1, size=2, dtype=np.int64)

    # -- saving ------------------------------------------------------------------------------
    def _groups(self) -> dict[str, list[tf.Variable]]:
        return {"q": self.q.weights, "target": self.target.weights,
                "optimizer": self.optimizer.variables}

    def save(self, path: str, extra_arrays: dict[str, np.ndarray] | None = None,
             extra_metadata: dict[str, Any] | None = None) -> None:
        """Write both networks, the optimizer state and metadata to one file (atomically);
        ``extra_*`` add entries (checkpoints put their resume state there)."""
        q = self.q
        save_model(path, ALGORITHM, self._groups(), q.ob_space, q.ac_space, q.network_name,
                   {**q.network_kwargs, **q.config()}, self.hyperparameters,
                   self.num_timesteps, extra_arrays, extra_metadata)

    def load(self, path: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Load a file written by :meth:`save` for the same spaces and network; returns the
        file's metadata and arrays."""
        q = self.q
        metadata, arrays = load_model(path, ALGORITHM, self._groups(), q.ob_space, q.ac_space)
        self.num_timesteps = int(metadata.get("num_timesteps", 0))
        if self.mirror is not None:
            self.mirror.sync()
        self._target_stale = False
        return metadata, arrays

    def get_weights(self) -> list[np.ndarray]:
        """A snapshot of every saved variable (for restoring the best model in memory)."""
        return [v.numpy() for vs in self._groups().values() for v in vs]

    def set_weights(self, values: list[np.ndarray]) -> None:
        for v, value in zip((v for vs in self._groups().values() for v in vs), values):
            v.assign(value)
        if self.mirror is not None:
            self.mirror.sync()
