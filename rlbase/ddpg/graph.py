"""DDPG's TensorFlow side (with the TD3 options): targets, losses, updates and the compiled
calls, as a base of :class:`rlbase.ddpg.model.Model`, which holds the variables.

One compiled call per vector step that trains does everything TensorFlow has to: the
gradient steps of its training phases (``gradient_steps`` each) on minibatches sampled
beforehand in numpy (a ``tf.while_loop``), then the actions for the current observation
from the updated actor. Crossing into TF costs more than
a 400x300 actor's forward pass, so acting is never a call of its own while training.

TD3 (Fujimoto et al. 2018) is three options on top of DDPG: ``twin_q`` (two critics, the
smaller target), ``policy_delay`` (the actor and the targets move every d-th critic step) and
``target_noise`` (clipped Gaussian noise on the target action).

Under MPI the critic's and actor's gradients (and the return statistics) are averaged over the
workers inside the graph (``tf.numpy_function`` around an Allreduce, so no XLA there), and
Adam then takes the same step on every worker.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import tensorflow as tf

from rlbase.common.families.continuous import ContinuousAgent, Critic
from rlbase.common.networks.policies import xla_is_faster
from rlbase.common.tf_util import (
    CompiledFunction,
    average_over_workers,
    clip_by_global_norm,
    compile_fn,
    spec_like,
)
from rlbase.ddpg.networks import Actor
from rlbase.ddpg.observations import MIN_VAR, ObservationStats

# Means over the call's gradient steps; actor_loss over its actor steps (nan in the graph when
# the policy delay skipped them all: the model then leaves it out of its statistics).
STAT_NAMES = ("critic_loss", "actor_loss", "q_mean", "actor_steps")


class ReturnStats:
    """Running mean and variance of the critic targets, kept in the graph (the training call
    updates them every gradient step); what return normalization and PopArt use."""

    def __init__(self) -> None:
        self.mean = tf.Variable(0.0, trainable=False)
        self.var = tf.Variable(1.0, trainable=False)
        self.count = tf.Variable(1e-4, trainable=False)

    @property
    def variables(self) -> list[tf.Variable]:
        return [self.mean, self.var, self.count]

    def std(self) -> tf.Tensor:
        return tf.sqrt(tf.maximum(self.var, MIN_VAR))

    def update(self, targets: tf.Tensor, comm: Any | None) -> tuple[tf.Tensor, tf.Tensor]:
        """Merge a batch of targets (pooled over MPI workers); returns the old mean and std."""
        old_mean, old_std = tf.identity(self.mean), self.std()
        centered = targets - old_mean
        moments = tf.stack([tf.reduce_mean(centered), tf.reduce_mean(tf.square(centered))])
        moments = average_over_workers([moments], comm)[0]
        n = tf.cast(tf.size(targets), tf.float32) * (comm.Get_size() if comm else 1)
        batch_mean, batch_var = old_mean + moments[0], moments[1] - tf.square(moments[0])
        total = self.count + n
        delta = batch_mean - old_mean
        self.var.assign((self.var * self.count + batch_var * n
                         + tf.square(delta) * self.count * n / total) / total)
        self.mean.assign(old_mean + delta * n / total)
        self.count.assign(total)
        return old_mean, old_std


class DDPGGraph(ContinuousAgent):
    """The graph code of :class:`~rlbase.ddpg.model.Model` (which creates every attribute
    declared here)."""

    actor: Actor
    target_actor: Actor
    perturbed_actor: Actor | None
    adaptive_actor: Actor | None
    returns: ReturnStats
    obs_stats: ObservationStats
    policy_delay: int
    action_l2: float
    target_min: float | None
    target_max: float | None
    target_noise: float
    target_noise_clip: float
    normalize_returns: bool
    popart: bool
    critic_l2_reg: float
    max_grad_norm: float | None
    comm: Any | None
    jit_compile: bool

    # -- variables ---------------------------------------------------------------------------
    @property
    def synced_variables(self) -> list[tf.Variable]:
        """What must be equal on every MPI worker (the targets follow from these)."""
        return self.actor.trainable_variables + self.critic_variables

    def target_pairs(self) -> list[tuple[tf.Variable, tf.Variable]]:
        """(online, target) variable pairs of the actor and every critic."""
        return [*zip(self.actor.weights, self.target_actor.weights), *super().target_pairs()]

    # -- graph pieces ------------------------------------------------------------------------
    def q_value(self, critic: Critic, obs: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
        """Q in return units (the critic's output denormalized when returns are normalized)."""
        q = critic(obs, actions)
        return q * self.returns.std() + self.returns.mean if self.normalize_returns else q

    def critic_targets(self, rewards: tf.Tensor, next_obs: tf.Tensor, dones: tf.Tensor,
                       noise: tf.Tensor | None) -> tf.Tensor:
        """r + gamma (1 - done) min_i Q'_i(s', clip(mu'(s') + clip(noise))), with ``done`` what must
        not be bootstrapped across (rlbase.common.buffers.transitions.target_dones), clipped to
        [target_min, target_max] where those are set."""
        next_actions = self.target_actor(next_obs)
        if noise is not None:
            clipped = tf.clip_by_value(noise, -self.target_noise_clip, self.target_noise_clip)
            next_actions = tf.clip_by_value(next_actions + clipped, -1.0, 1.0)
        qs = [self.q_value(t, next_obs, next_actions) for t in self.target_critics]
        next_q = qs[0] if len(qs) == 1 else tf.minimum(qs[0], qs[1])
        return tf.stop_gradient(clip_targets(rewards + self.gamma * (1.0 - dones) * next_q,
                                             self.target_min, self.target_max))

    def update_return_stats(self, targets: tf.Tensor) -> None:
        """Merge critic targets into the return statistics; with PopArt, rescale the critics'
        output layers so their outputs keep meaning the same returns."""
        old_mean, old_std = self.returns.update(targets, self.comm)
        if self.popart:
            new_mean, new_std = self.returns.mean, self.returns.std()
            for net in self.critics + self.target_critics:
                net.out.kernel.assign(net.out.kernel * old_std / new_std)
                net.out.bias.assign((net.out.bias * old_std + old_mean - new_mean) / new_std)

    def _critic_step(self, obs: tf.Tensor, actions: tf.Tensor, targets: tf.Tensor
                     ) -> tuple[tf.Tensor, tf.Tensor]:
        variables = self.critic_variables
        if self.normalize_returns:
            targets = (targets - self.returns.mean) / self.returns.std()
        with tf.GradientTape() as tape:
            outs = [c(obs, actions) for c in self.critics]
            loss = tf.add_n([tf.reduce_mean(tf.square(q - targets)) for q in outs])
            if self.critic_l2_reg > 0:
                kernels = [k for c in self.critics for k in c.regularized_kernels()]
                loss += self.critic_l2_reg * 0.5 * tf.add_n([tf.reduce_sum(tf.square(k))
                                                             for k in kernels])
        grads, _ = clip_by_global_norm(average_over_workers(tape.gradient(loss, variables),
                                                            self.comm), self.max_grad_norm)
        self.critic_optimizer.apply_gradients(zip(grads, variables))
        q = outs[0] * self.returns.std() + self.returns.mean if self.normalize_returns \
            else outs[0]
        return loss, tf.reduce_mean(q)

    def _actor_step(self, obs: tf.Tensor) -> tf.Tensor:
        variables = self.actor.trainable_variables
        with tf.GradientTape() as tape:
            loss = policy_loss(self.q_value, self.critics[0], self.actor, obs, self.action_l2)
        grads, _ = clip_by_global_norm(average_over_workers(tape.gradient(loss, variables),
                                                            self.comm), self.max_grad_norm)
        self.actor_optimizer.apply_gradients(zip(grads, variables))
        return loss

    def _act(self, obs: tf.Tensor, mean: tf.Tensor, std: tf.Tensor
             ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """Actor actions, exploring actions (the perturbed actor's, if any) and their Q."""
        o = self.obs_stats.normalize(obs, mean, std)
        clean = self.actor(o)
        explore = self.perturbed_actor(o) if self.perturbed_actor is not None else clean
        return clean, explore, self.q_value(self.critics[0], o, clean)

    def _train_graph(self, obs, actions, rewards, next_obs, dones, noise, act_obs, mean, std,
                     actor_lr, critic_lr):
        self.actor_optimizer.learning_rate.assign(actor_lr)
        self.critic_optimizer.learning_rate.assign(critic_lr)

        # The smoothing noise is drawn in numpy: XLA's random kernels differ from TF's, and
        # this way both paths compute the same updates.
        def body(i, stats, actor_steps):
            o = self.obs_stats.normalize(_at(obs, i), mean, std)
            o2 = self.obs_stats.normalize(_at(next_obs, i), mean, std)
            targets = self.critic_targets(rewards[i], o2, dones[i],
                                          noise[i] if self.target_noise > 0 else None)
            if self.normalize_returns:
                self.update_return_stats(targets)
            critic_loss, q_mean = self._critic_step(o, actions[i], targets)
            self.updates.assign_add(1)

            def delayed():
                loss = self._actor_step(o)
                self.update_targets_when_due()  # (an actor step: policy_delay's condition holds)
                return loss

            if self.policy_delay == 1:
                actor_loss, moved = delayed(), 1.0
            else:
                due = tf.equal(self.updates % self.policy_delay, 0)
                actor_loss = tf.cond(due, delayed, lambda: tf.constant(0.0))
                moved = tf.cast(due, tf.float32)
            return (i + 1, stats + tf.stack([critic_loss, actor_loss, q_mean]),
                    actor_steps + moved)

        nsteps = rewards.shape[0]  # static: one compiled call per step count
        _, stats, actor_steps = tf.while_loop(
            lambda i, *_: i < nsteps, body, (tf.constant(0), tf.zeros(3), tf.constant(0.0)))
        actor_loss = tf.where(actor_steps > 0, stats[1] / tf.maximum(actor_steps, 1.0),
                              float("nan"))
        stats = tf.stack([stats[0] / nsteps, actor_loss, stats[2] / nsteps, actor_steps])
        return (stats, *self._act(act_obs, mean, std))

    # -- compiled calls (traced once, on first use) ------------------------------------------
    @cached_property
    def act_fn(self) -> CompiledFunction:
        stat = self.obs_stats.spec()
        # XLA, except convnets (Dict/Tuple image entries) on a CPU: policies.xla_is_faster.
        return compile_fn(self._act, [self._ob_spec(None), stat, stat],
                          jit_compile=xla_is_faster(self.observation_space))

    def train_fn_for(self, steps: int) -> CompiledFunction:
        """The training call of ``steps`` gradient steps (traced once per count: a run uses
        one, or two when train_freq does not divide num_envs)."""
        if steps not in self._train_fns:
            g, b, a = steps, self.batch_size, self.num_actions
            vec, stat, scalar = spec_like([g, b], np.float32), self.obs_stats.spec(), \
                spec_like([], np.float32)
            self._train_fns[steps] = compile_fn(self._train_graph, [
                self._ob_spec(g, b), spec_like([g, b, a], np.float32), vec, self._ob_spec(g, b),
                vec, spec_like([g, b, a], np.float32), self._ob_spec(None), stat, stat, scalar,
                scalar], self.jit_compile)
        return self._train_fns[steps]

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
            assert self.perturbed_actor is not None
            self._perturb_into(self.perturbed_actor, stddev, seed)
            return stddev
        return compile_fn(perturb, [spec_like([], np.float32), spec_like([2], np.int64)])

    @cached_property
    def distance_fn(self) -> CompiledFunction:
        def distance(obs, mean, std, stddev, seed):
            assert self.adaptive_actor is not None
            self._perturb_into(self.adaptive_actor, stddev, seed)
            o = self.obs_stats.normalize(obs, mean, std)
            return tf.sqrt(tf.reduce_mean(tf.square(self.actor(o) - self.adaptive_actor(o))))
        stat = self.obs_stats.spec()
        return compile_fn(distance, [self._ob_spec(None), stat, stat, spec_like([], np.float32),
                                     spec_like([2], np.int64)])


def clip_targets(targets: tf.Tensor, low: float | None, high: float | None) -> tf.Tensor:
    """Critic targets clipped to [low, high] (a bound None: none on that side); Baselines'
    HER clips to [-1/(1-gamma), 0], the range of its returns with rewards in [-1, 0]."""
    if low is not None:
        targets = tf.maximum(targets, low)
    if high is not None:
        targets = tf.minimum(targets, high)
    return targets


def policy_loss(q_value: Any, critic: Critic, actor: Actor, obs: Any, action_l2: float
               ) -> tf.Tensor:
    """-mean Q(s, mu(s)) + action_l2 * mean(mu(s)^2): the deterministic policy gradient's
    loss, with Baselines' HER penalty on large actions ([-1, 1] units, mean over the batch
    and the action dimensions)."""
    actions = actor(obs)
    loss = -tf.reduce_mean(q_value(critic, obs, actions))
    if action_l2 > 0:
        loss += action_l2 * tf.reduce_mean(tf.square(actions))
    return loss


def _at(obs: Any, i: tf.Tensor) -> Any:
    """Minibatch ``i`` of stacked observations (nested ones leaf by leaf)."""
    return tf.nest.map_structure(lambda x: x[i], obs)
