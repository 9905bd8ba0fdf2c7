"""SAC's TensorFlow side: one gradient step, the loop of them, acting, and the compiled calls,
as a base of :class:`rlbase.sac.model.Model` (which creates every attribute declared here).

One compiled call per vector step that trains does everything TensorFlow has to: the
gradient steps of its training phases (``gradient_steps`` each) on minibatches sampled
beforehand in numpy (a ``tf.while_loop``; one step needs no loop), then the actions for
the current observations from the updated actor. The Gaussian noise of every sample (the
policy's actions at s and s', the acting noise) is drawn in numpy and passed in: XLA's random
kernels differ from TF's, and this way both paths compute the same updates and a resumed run
repeats an uninterrupted one exactly.

A gradient step is SB3's, in SB3's order: the temperature moves first (the step's losses use
alpha from before that move), then the critics, then the actor against the updated critics,
then the targets (every ``target_update_gradient_steps`` steps).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from rlbase.common.families.continuous import ContinuousAgent
from rlbase.common.tf_util import CompiledFunction, compile_fn, spec_like
from rlbase.sac import losses
from rlbase.sac.networks import Actor

# Means over the call's gradient steps (SB3's train/ keys).
STAT_NAMES = ("critic_loss", "actor_loss", "ent_coef", "ent_coef_loss")


class SACGraph(ContinuousAgent):
    """The graph code of :class:`~rlbase.sac.model.Model` (SAC has no target actor)."""

    actor: Actor
    log_alpha: tf.Variable
    alpha_optimizer: keras.optimizers.Optimizer
    target_entropy: float
    auto_alpha: bool
    jit_compile: bool | None
    jit_act: bool

    # -- graph pieces ------------------------------------------------------------------------
    def policy(self, obs: Any, noise: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """``(a, log pi(a|s))`` for ``a = tanh(mean + std * noise)``."""
        mean, log_std = self.actor(obs)
        return losses.squashed_sample(mean, log_std, noise)

    def critic_targets(self, rewards: tf.Tensor, next_obs: Any, dones: tf.Tensor,
                       noise: tf.Tensor, alpha: tf.Tensor) -> tf.Tensor:
        """``r + gamma (1 - d) (min_i Q'_i(s', a') - alpha log pi(a'|s'))``, ``a'`` the
        policy's action at s' drawn with ``noise``."""
        next_actions, next_log_prob = self.policy(next_obs, noise)
        q1, q2 = (t(next_obs, next_actions) for t in self.target_critics)
        return losses.critic_target(rewards, dones, q1, q2, next_log_prob, alpha, self.gamma)

    def _gradient_step(self, obs: Any, actions: tf.Tensor, rewards: tf.Tensor, next_obs: Any,
                       dones: tf.Tensor, noise: tf.Tensor) -> tf.Tensor:
        """One SAC update on one minibatch; returns its four statistics (STAT_NAMES)."""
        alpha = tf.exp(self.log_alpha)  # this step's temperature, read before it moves
        actor_vars = self.actor.trainable_variables
        with tf.GradientTape(watch_accessed_variables=False) as actor_tape:
            # Only the actor: the critics' weight gradients are never needed here.
            actor_tape.watch([v.value for v in actor_vars])
            actions_pi, log_prob = self.policy(obs, noise[0])
        if self.auto_alpha:
            with tf.GradientTape() as tape:
                alpha_loss = losses.temperature_loss(self.log_alpha, log_prob,
                                                     self.target_entropy)
            self.alpha_optimizer.apply_gradients(
                [(tape.gradient(alpha_loss, self.log_alpha), self.log_alpha)])
        else:
            alpha_loss = tf.constant(0.0)
        targets = self.critic_targets(rewards, next_obs, dones, noise[1], alpha)
        critic_vars = self.critic_variables
        with tf.GradientTape() as tape:
            q1, q2 = (c(obs, actions) for c in self.critics)
            q_loss = losses.critic_loss(q1, q2, targets)
        self.critic_optimizer.apply_gradients(zip(tape.gradient(q_loss, critic_vars),
                                                  critic_vars))
        with actor_tape:  # the updated critics judge the actions drawn above
            q1_pi, q2_pi = (c(obs, actions_pi) for c in self.critics)
            pi_loss = losses.actor_loss(log_prob, q1_pi, q2_pi, alpha)
        self.actor_optimizer.apply_gradients(zip(actor_tape.gradient(pi_loss, actor_vars),
                                                 actor_vars))
        self.updates.assign_add(1)
        self.update_targets_when_due()
        return tf.stack([q_loss, pi_loss, alpha, alpha_loss])

    def _act(self, obs: Any, noise: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """(sampled actions, deterministic actions tanh(mean), the Gaussian's std)."""
        mean, log_std = self.actor(obs)
        sampled, _ = losses.squashed_sample(mean, log_std, noise)
        return sampled, tf.tanh(mean), tf.exp(log_std)

    def _train_graph(self, obs: Any, actions: tf.Tensor, rewards: tf.Tensor, next_obs: Any,
                     dones: tf.Tensor, noise: tf.Tensor, act_obs: Any, act_noise: tf.Tensor,
                     lr: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """The steps on the stacked minibatches (as many as they are) (``noise``: ``[g, 2, B, A]``,
        for the policy's actions at s and at s'), then sampled actions for ``act_obs``.
        Returns (the statistics' means over the steps, those actions)."""
        for optimizer in (self.actor_optimizer, self.critic_optimizer, self.alpha_optimizer):
            optimizer.learning_rate.assign(lr)

        def body(i: Any, stats: tf.Tensor) -> tuple[Any, tf.Tensor]:
            step = self._gradient_step(
                tf.nest.map_structure(lambda x: x[i], obs), actions[i], rewards[i],
                tf.nest.map_structure(lambda x: x[i], next_obs), dones[i], noise[i])
            return i + 1, stats + step

        nsteps = rewards.shape[0]  # static: one compiled call per step count
        if nsteps == 1:  # the usual cadence: no loop frame around the one step
            stats = body(0, tf.zeros(len(STAT_NAMES)))[1]
        else:
            _, stats = tf.while_loop(lambda i, _: i < nsteps, body,
                                     (tf.constant(0), tf.zeros(len(STAT_NAMES))))
        return (stats / nsteps, self._act(act_obs, act_noise)[0])

    # -- compiled calls (traced once, on first use) ------------------------------------------
    @cached_property
    def policy_fn(self) -> CompiledFunction:
        """Observations -> ``(mean, log_std)`` of the pre-tanh Gaussian."""
        return compile_fn(lambda obs: self.actor(obs), [self._ob_spec(None)])

    @cached_property
    def act_fn(self) -> CompiledFunction:
        return compile_fn(self._act, [self._ob_spec(None),
                                      spec_like([None, self.num_actions], np.float32)],
                          jit_compile=self.jit_act)

    def train_fn_for(self, steps: int) -> CompiledFunction:
        """The training call of ``steps`` gradient steps (traced once per count: a run uses
        one, or two when train_freq does not divide num_envs).

        jit_compile None: XLA, except for a call of one gradient step, which is faster as a
        plain TF graph on this 2-core machine: TF runs its independent ops (the two critics,
        the target branch beside the actor's) side by side, XLA one by one. Median of
        interleaved 256x256 calls: one step 8.4 ms plain, 8.8 ms XLA; inside a 64-step loop
        8.0 ms plain, 7.3 ms XLA per step."""
        if steps not in self._train_fns:
            jit = steps > 1 if self.jit_compile is None else self.jit_compile
            g, b, a = steps, self.batch_size, self.num_actions
            vec = spec_like([g, b], np.float32)
            self._train_fns[steps] = compile_fn(self._train_graph, [
                self._ob_spec(g, b), spec_like([g, b, a], np.float32), vec, self._ob_spec(g, b),
                vec, spec_like([g, 2, b, a], np.float32), self._ob_spec(None),
                spec_like([None, a], np.float32), spec_like([], np.float32)], jit)
        return self._train_fns[steps]
