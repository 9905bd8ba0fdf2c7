"""The DDPG learner (with the TD3 options): networks, targets, optimizers, compiled calls.

One compiled call per env step does everything TensorFlow has to: ``n`` gradient steps on
minibatches sampled beforehand in numpy (a ``tf.while_loop``), then the actions for the
current observation from the updated actor. Crossing into TF costs more than a 400x300
actor's forward pass, so acting is never a call of its own while training.

TD3 (Fujimoto et al. 2018) is three options on top of DDPG: ``twin_q`` (two critics, the
smaller target), ``policy_delay`` (the actor and the targets move every d-th critic step) and
``target_noise`` (clipped Gaussian noise on the target action).

Under MPI the critic's and actor's gradients (and the return statistics) are averaged over the
workers inside the graph (``tf.numpy_function`` around an Allreduce, so no XLA there), and
Adam then takes the same step on every worker.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Callable

import keras
import numpy as np
import tensorflow as tf

from rlbase.common.mpi_util import sync_variables
from rlbase.common.tf_util import (
    CompiledFunction,
    average_over_workers,
    clip_by_global_norm,
    compile_fn,
    spec_like,
)
from rlbase.ddpg.models import Actor, Critic

# Means over the call's gradient steps; loss_actor over its actor steps (nan: none, when the
# policy delay skipped them all).
STAT_NAMES = ("loss_critic", "loss_actor", "Q_batch_mean", "actor_steps")
OBS_CLIP = 5.0   # normalized observations are clipped to [-5, 5], as in Baselines
MIN_VAR = 1e-2   # Baselines' floor on normalizing variances (std >= 0.1)


class Learner:
    """Every variable DDPG trains, and the compiled calls that use them.

    make_actor / make_critic: build a fresh network (called for each copy).
    ob_shape / nb_actions: one observation's shape; the action dimension.
    gamma, tau: discount; soft target update rate (target <- (1 - tau) target + tau online).
    twin_q, policy_delay, target_noise, target_noise_clip: the TD3 options.
    normalize_returns, popart: train the critic on normalized returns; PopArt also rescales
        the critics' output layers so their outputs keep meaning the same returns.
    critic_l2_reg: L2 penalty on the critics' hidden kernels.
    actor_lr, critic_lr: Adam learning rates.
    clip_norm: clip each network's gradient global norm to this (None: no clipping).
    batch_size, max_steps: minibatch size; most gradient steps one call takes.
    param_noise: build the perturbed actor copies parameter-space noise needs.
    comm: an mpi4py communicator with more than one rank, else None.
    jit_compile: compile the training call with XLA (never under MPI).
    seed: seed of the smoothing noise and of the perturbations.
    """

    def __init__(self, make_actor: Callable[[], Actor], make_critic: Callable[[], Critic],
                 ob_shape: tuple, nb_actions: int, gamma: float, tau: float, twin_q: bool,
                 policy_delay: int, target_noise: float, target_noise_clip: float,
                 normalize_returns: bool, popart: bool, critic_l2_reg: float, actor_lr: float,
                 critic_lr: float, clip_norm: float | None, batch_size: int, max_steps: int,
                 param_noise: bool, comm: Any | None, jit_compile: bool, seed: int | None):
        self.ob_shape, self.nb_actions = tuple(ob_shape), int(nb_actions)
        self.gamma, self.tau = float(gamma), float(tau)
        self.policy_delay = int(policy_delay)
        self.target_noise, self.target_noise_clip = float(target_noise), float(target_noise_clip)
        self.normalize_returns = bool(normalize_returns or popart)
        self.popart = bool(popart)
        self.critic_l2_reg, self.clip_norm = float(critic_l2_reg), clip_norm
        self.batch_size, self.max_steps = int(batch_size), int(max_steps)
        self.comm = comm if comm is not None and comm.Get_size() > 1 else None
        self.jit_compile = bool(jit_compile) and self.comm is None
        ncritics = 2 if twin_q else 1
        self.actor, self.target_actor = make_actor(), make_actor()
        self.critics = [make_critic() for _ in range(ncritics)]
        self.target_critics = [make_critic() for _ in range(ncritics)]
        self.perturbed_actor = make_actor() if param_noise else None
        self.adaptive_actor = make_actor() if param_noise else None
        self.actor_optimizer = keras.optimizers.Adam(learning_rate=actor_lr)
        self.critic_optimizer = keras.optimizers.Adam(learning_rate=critic_lr)
        self.actor_optimizer.build(self.actor.trainable_variables)
        self.critic_optimizer.build(self.critic_variables)
        # Return statistics live in the graph: the training call updates them every step.
        self.ret_mean = tf.Variable(0.0, trainable=False)
        self.ret_var = tf.Variable(1.0, trainable=False)
        self.ret_count = tf.Variable(1e-4, trainable=False)
        self.updates = tf.Variable(0, dtype=tf.int64, trainable=False)
        rng = np.random.default_rng(seed)
        self.rng = rng
        self._zeros: np.ndarray | None = None
        if self.comm is not None:  # every worker starts from rank 0's weights
            sync_variables(self.synced_variables, self.comm)
        for src, dst in self._target_pairs():
            dst.assign(src)

    # -- variables ---------------------------------------------------------------------------
    @property
    def critic_variables(self) -> list[tf.Variable]:
        return [v for c in self.critics for v in c.trainable_variables]

    @property
    def synced_variables(self) -> list[tf.Variable]:
        """What must be equal on every MPI worker (the targets follow from these)."""
        return self.actor.trainable_variables + self.critic_variables

    def _target_pairs(self) -> list[tuple[tf.Variable, tf.Variable]]:
        pairs = list(zip(self.actor.weights, self.target_actor.weights))
        for c, t in zip(self.critics, self.target_critics):
            pairs += list(zip(c.weights, t.weights))
        return pairs

    def groups(self) -> dict[str, list[tf.Variable]]:
        """Named variable groups for saving."""
        out = {"actor": self.actor.weights, "target_actor": self.target_actor.weights,
               "actor_optimizer": self.actor_optimizer.variables,
               "critic_optimizer": self.critic_optimizer.variables,
               "state": [self.ret_mean, self.ret_var, self.ret_count, self.updates]}
        for i, (c, t) in enumerate(zip(self.critics, self.target_critics)):
            out[f"critic{i}"], out[f"target_critic{i}"] = c.weights, t.weights
        return out

    # -- graph pieces ------------------------------------------------------------------------
    def normalize_obs(self, obs: tf.Tensor, mean: tf.Tensor, std: tf.Tensor) -> tf.Tensor:
        """``mean``/``std`` come from the numpy running statistics (zeros/ones when off)."""
        return tf.clip_by_value((tf.cast(obs, tf.float32) - mean) / std, -OBS_CLIP, OBS_CLIP)

    def _ret_std(self) -> tf.Tensor:
        return tf.sqrt(tf.maximum(self.ret_var, MIN_VAR))

    def q_value(self, critic: Critic, obs: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
        """Q in return units (the critic's output denormalized when returns are normalized)."""
        q = critic(obs, actions)
        return q * self._ret_std() + self.ret_mean if self.normalize_returns else q

    def critic_targets(self, rewards: tf.Tensor, next_obs: tf.Tensor, dones: tf.Tensor,
                       noise: tf.Tensor | None) -> tf.Tensor:
        """r + gamma (1 - terminated) min_i Q'_i(s', clip(mu'(s') + clip(noise)))."""
        next_actions = self.target_actor(next_obs)
        if noise is not None:
            clipped = tf.clip_by_value(noise, -self.target_noise_clip, self.target_noise_clip)
            next_actions = tf.clip_by_value(next_actions + clipped, -1.0, 1.0)
        qs = [self.q_value(t, next_obs, next_actions) for t in self.target_critics]
        next_q = qs[0] if len(qs) == 1 else tf.minimum(qs[0], qs[1])
        return tf.stop_gradient(rewards + self.gamma * (1.0 - dones) * next_q)

    def _average(self, grads: list[tf.Tensor]) -> list[tf.Tensor]:
        return average_over_workers(grads, self.comm)

    def _update_return_stats(self, targets: tf.Tensor) -> None:
        """Merge a batch of critic targets into the return statistics (pooled over workers);
        with PopArt, rescale the critics' output layers to preserve their outputs."""
        old_mean, old_std = tf.identity(self.ret_mean), self._ret_std()
        centered = targets - old_mean
        moments = tf.stack([tf.reduce_mean(centered), tf.reduce_mean(tf.square(centered))])
        moments = self._average([moments])[0]
        n = tf.cast(tf.size(targets), tf.float32) * (self.comm.Get_size() if self.comm else 1)
        batch_mean, batch_var = old_mean + moments[0], moments[1] - tf.square(moments[0])
        total = self.ret_count + n
        delta = batch_mean - old_mean
        self.ret_var.assign((self.ret_var * self.ret_count + batch_var * n
                             + tf.square(delta) * self.ret_count * n / total) / total)
        self.ret_mean.assign(old_mean + delta * n / total)
        self.ret_count.assign(total)
        if self.popart:
            new_mean, new_std = self.ret_mean, self._ret_std()
            for net in self.critics + self.target_critics:
                net.out.kernel.assign(net.out.kernel * old_std / new_std)
                net.out.bias.assign((net.out.bias * old_std + old_mean - new_mean) / new_std)

    def _critic_step(self, obs, actions, targets) -> tuple[tf.Tensor, tf.Tensor]:
        variables = self.critic_variables
        if self.normalize_returns:
            targets = (targets - self.ret_mean) / self._ret_std()
        with tf.GradientTape() as tape:
            outs = [c(obs, actions) for c in self.critics]
            loss = tf.add_n([tf.reduce_mean(tf.square(q - targets)) for q in outs])
            if self.critic_l2_reg > 0:
                kernels = [k for c in self.critics for k in c.regularized_kernels()]
                loss += self.critic_l2_reg * 0.5 * tf.add_n([tf.reduce_sum(tf.square(k))
                                                             for k in kernels])
        grads, _ = clip_by_global_norm(self._average(tape.gradient(loss, variables)),
                                       self.clip_norm)
        self.critic_optimizer.apply_gradients(zip(grads, variables))
        q = outs[0] * self._ret_std() + self.ret_mean if self.normalize_returns else outs[0]
        return loss, tf.reduce_mean(q)

    def _actor_step(self, obs) -> tf.Tensor:
        variables = self.actor.trainable_variables
        with tf.GradientTape() as tape:
            loss = -tf.reduce_mean(self.q_value(self.critics[0], obs, self.actor(obs)))
        grads, _ = clip_by_global_norm(self._average(tape.gradient(loss, variables)),
                                       self.clip_norm)
        self.actor_optimizer.apply_gradients(zip(grads, variables))
        return loss

    def soft_update_targets(self) -> None:
        tau = self.tau
        for src, dst in self._target_pairs():
            dst.assign((1.0 - tau) * dst + tau * src)

    def _act(self, obs, mean, std) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """Actor actions, exploring actions (the perturbed actor's, if any) and their Q."""
        o = self.normalize_obs(obs, mean, std)
        clean = self.actor(o)
        explore = self.perturbed_actor(o) if self.perturbed_actor is not None else clean
        return clean, explore, self.q_value(self.critics[0], o, clean)

    def _train_graph(self, obs, actions, rewards, next_obs, dones, noise, nsteps, act_obs,
                     mean, std):
        # The smoothing noise is drawn in numpy: XLA's random kernels differ from TF's, and
        # this way both paths compute the same updates.
        def body(i, stats, actor_steps):
            o = self.normalize_obs(obs[i], mean, std)
            o2 = self.normalize_obs(next_obs[i], mean, std)
            targets = self.critic_targets(rewards[i], o2, dones[i],
                                          noise[i] if self.target_noise > 0 else None)
            if self.normalize_returns:
                self._update_return_stats(targets)
            critic_loss, q_mean = self._critic_step(o, actions[i], targets)
            self.updates.assign_add(1)

            def delayed():
                loss = self._actor_step(o)
                self.soft_update_targets()
                return loss

            if self.policy_delay == 1:
                actor_loss, moved = delayed(), 1.0
            else:
                due = tf.equal(self.updates % self.policy_delay, 0)
                actor_loss = tf.cond(due, delayed, lambda: tf.constant(0.0))
                moved = tf.cast(due, tf.float32)
            return (i + 1, stats + tf.stack([critic_loss, actor_loss, q_mean]),
                    actor_steps + moved)

        _, stats, actor_steps = tf.while_loop(
            lambda i, *_: i < nsteps, body,
            (tf.constant(0), tf.zeros(3), tf.constant(0.0)))
        n = tf.maximum(tf.cast(nsteps, tf.float32), 1.0)
        actor_loss = tf.where(actor_steps > 0, stats[1] / tf.maximum(actor_steps, 1.0),
                              float("nan"))
        stats = tf.stack([stats[0] / n, actor_loss, stats[2] / n, actor_steps])
        return (stats, *self._act(act_obs, mean, std))

    # -- compiled calls ----------------------------------------------------------------------
    def _ob_spec(self, *lead: int | None) -> tf.TensorSpec:
        return spec_like([*lead, *self.ob_shape], np.float32)

    @cached_property
    def act_fn(self) -> CompiledFunction:
        stat = self._ob_spec()
        return compile_fn(self._act, [self._ob_spec(None), stat, stat], jit_compile=True)

    @cached_property
    def train_fn(self) -> CompiledFunction:
        g, b, a = self.max_steps, self.batch_size, self.nb_actions
        vec, stat = spec_like([g, b], np.float32), self._ob_spec()
        return compile_fn(self._train_graph, [
            self._ob_spec(g, b), spec_like([g, b, a], np.float32), vec, self._ob_spec(g, b),
            vec, spec_like([g, b, a], np.float32), spec_like([], np.int32),
            self._ob_spec(None), stat, stat], self.jit_compile)

    def smoothing_noise(self) -> np.ndarray:
        """``[max_steps, batch_size, nb_actions]`` target-policy noise (zeros when off)."""
        shape = (self.max_steps, self.batch_size, self.nb_actions)
        if self.target_noise <= 0:
            if self._zeros is None:
                self._zeros = np.zeros(shape, np.float32)
            return self._zeros
        return (self.target_noise * self.rng.standard_normal(shape)).astype(np.float32)

    def _perturb_into(self, dst: Actor, stddev: tf.Tensor, seed: tf.Tensor) -> None:
        noisy = {id(v) for v in self.actor.perturbable_variables()}
        for k, (src, out) in enumerate(zip(self.actor.weights, dst.weights)):
            if id(src) in noisy:
                noise = tf.random.stateless_normal(src.shape, seed=seed + [0, k])
                out.assign(src + stddev * noise)
            else:
                out.assign(src)

    @cached_property
    def perturb_fn(self) -> CompiledFunction:
        def perturb(stddev, seed):
            self._perturb_into(self.perturbed_actor, stddev, seed)
            return stddev
        return compile_fn(perturb, [spec_like([], np.float32), spec_like([2], np.int64)])

    @cached_property
    def distance_fn(self) -> CompiledFunction:
        def distance(obs, mean, std, stddev, seed):
            self._perturb_into(self.adaptive_actor, stddev, seed)
            o = self.normalize_obs(obs, mean, std)
            return tf.sqrt(tf.reduce_mean(tf.square(self.actor(o) - self.adaptive_actor(o))))
        stat = self._ob_spec()
        return compile_fn(distance, [self._ob_spec(None), stat, stat, spec_like([], np.float32),
                                     spec_like([2], np.int64)])

    def noise_seed_pair(self) -> np.ndarray:
        return self.rng.integers(0, 2**31 - 1, size=2, dtype=np.int64)
