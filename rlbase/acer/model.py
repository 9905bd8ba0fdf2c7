"""ACER's learner: a policy with pi and Q heads, a Polyak-averaged copy of it, Retrace targets,
truncated importance weights with bias correction and the efficient trust-region projection
(Wang et al. 2016, "Sample Efficient Actor-Critic with Experience Replay"), one compiled call
per update (on-policy and replay updates share it, so it traces once). The model owns its
replay buffer and the generator that samples it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.acer.buffer import Buffer, NestedBuffer, normalized
from rlbase.acer.config import ACERConfig
from rlbase.acer.retrace import EPS, add_grads, avg_norm, q_retrace, trust_region_adjust
from rlbase.acer.runner import Sequences
from rlbase.common import nested
from rlbase.common.buffers.raw_replay import RawReplay
from rlbase.common.buffers.transitions import bootstraps_truncation
from rlbase.common.errors import RLBaseError
from rlbase.common.families.actor_critic import OnPolicyModel, use_xla
from rlbase.common.io.checkpoint import generator_state, set_generator_state
from rlbase.common.networks.policies import ActorCriticPolicy, has_images
from rlbase.common.tf_util import (
    CompiledFunction,
    RMSprop,
    clip_by_global_norm,
    compile_fn,
    configure_threads,
    explained_variance,
    observation_spec,
    spec_like,
)
from rlbase.common.vec_env import VecEnv

__all__ = ["AcerPolicy", "Model", "build_model", "q_retrace", "trust_region_adjust"]

ALGORITHM = "acer"
# SB3's names for what every actor-critic logs, then ACER's own.
STAT_NAMES = ("loss", "value_loss", "entropy_loss", "policy_loss", "truncated_policy_loss",
              "bias_correction_loss", "explained_variance", "grad_norm", "q_grad_norm",
              "policy_grad_norm", "avg_norm_grads_f", "avg_norm_k", "avg_norm_g",
              "avg_norm_k_dot_g", "avg_norm_adj")
# Updates from which XLA's compile time is repaid (an 8x20 CartPole update: 2.4 ms with XLA,
# 5.2 ms without; a Breakout cnn update on a CPU: 800 ms with XLA, 410 ms without).
XLA_MIN_UPDATES = 1000


def discrete_space(space: gym.Space) -> gym.spaces.Discrete:
    """``space``, which must be Discrete (a clear error otherwise)."""
    if not isinstance(space, gym.spaces.Discrete):
        raise RLBaseError(f"ACER needs a Discrete action space, got {space}; for continuous "
                          "actions use ppo, a2c or ddpg")
    return space


class AcerPolicy(ActorCriticPolicy):
    """An actor-critic policy whose critic is Q(s, .): the state value is ``sum_a pi(a|s)
    Q(s, a)``, so ``value`` (truncation bootstraps) and ``step`` need no separate value head
    (it is never called, so it holds no weights)."""

    def __init__(self, ob_space: gym.Space, ac_space: gym.Space, network: Any = "mlp",
                 value_network: str | None = None,
                 network_kwargs: dict[str, Any] | None = None):
        discrete_space(ac_space)
        super().__init__(ob_space, ac_space, network, value_network, estimate_q=True,
                         network_kwargs=network_kwargs)

    def forward(self, obs: Any, state: tf.Tensor, starts: tf.Tensor, one_step: bool = False
                ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        x = self.encoder(obs)
        latent, new_state = self._torso(self.torso, x, state, starts, one_step)
        qlatent = latent if self.value_torso is None else self.value_torso(x)
        logits = self.pd_head(latent)
        q = self.q_head(qlatent)  # type: ignore[misc]  # built: estimate_q=True
        values = tf.reduce_sum(tf.nn.softmax(logits) * q, axis=-1)
        return logits, values, new_state, q


class Model(OnPolicyModel):
    """The ACER learner. ``train(sequences, lr)`` is one compiled call, on fresh or replayed
    sequences alike (the batch shape is the same: one ``nsteps`` sequence per env).

    RMSProp is TF1's, the reference's optimizer: the mean square starts at 1 and
    ``rms_epsilon`` is added inside the square root. The averaged policy follows the policy
    after each step: ``average <- (1 - tau) * average + tau * policy``.
    A truncated step bootstraps from ``gamma * V(final observation)`` computed in the
    training call with the weights being trained (never stored), unless gamma is 1 (see
    rlbase.common.buffers.transitions).
    """

    algorithm = ALGORITHM
    stat_names = STAT_NAMES

    config: ACERConfig

    def __init__(self, policy: AcerPolicy, average: AcerPolicy, num_envs: int,
                 config: ACERConfig, network_kwargs: dict[str, Any] | None = None,
                 jit_compile: bool = False):
        self.average = average
        self.q_coef, self.ent_coef = config.q_coef, config.ent_coef
        self.max_grad_norm, self.gamma = config.max_grad_norm, config.gamma
        self.c, self.trust_region = config.c, config.trust_region
        self.tau, self.delta = config.tau, config.delta
        nsteps = config.nsteps
        ac_space = discrete_space(policy.ac_space)
        self.nact, self.ac_start = int(ac_space.n), int(ac_space.start)
        for avg, var in zip(average.trainable_variables, policy.trainable_variables):
            avg.assign(var)  # the average starts where the policy does
        optimizer = RMSprop(7e-4, config.rms_alpha, config.rms_epsilon, initial_accumulator=1.0,
                            epsilon_inside_sqrt=True)
        super().__init__(policy, optimizer, num_envs, nsteps, network_kwargs or {}, config,
                         jit_compile)
        buffer = NestedBuffer if nested.is_nested(policy.ob_space) else Buffer
        self.replay_buffer = buffer(policy.ob_space, ac_space, num_envs, nsteps,
                                    config.buffer_size_per_env, policy.state_size) \
            if config.replay_ratio > 0 else None
        self.raw_replay = RawReplay()  # set by attach_env
        # Replay's Poisson counts and sampling; seeded from numpy's global generator.
        self.replay_rng = np.random.default_rng(np.random.randint(2**31 - 1))

    # -- replay -------------------------------------------------------------------------------
    def attach_env(self, env: VecEnv) -> None:
        """Also lay the replay buffer out for ``env``'s raw observations (rlbase.acer.buffer;
        a chain whose raw stacks replay could not rebuild is refused)."""
        super().attach_env(env)
        if self.replay_buffer is not None:
            self.raw_replay = RawReplay(env)
            self.replay_buffer.configure(env)

    def stored(self, seq: Sequences) -> Sequences:
        """What the replay buffer keeps of a fresh rollout: the raw one behind a
        VecNormalize (its behaviour probabilities are those of the actions taken, valid
        under any later normalization)."""
        return seq if seq.raw is None else seq.raw

    def replayed(self, rng: np.random.Generator) -> Sequences:
        """A batch of stored sequences as the learner sees it: observations (final ones too)
        and rewards normalized with the current statistics."""
        assert self.replay_buffer is not None
        return normalized(self.replay_buffer.get(rng), self.raw_replay)

    # -- the declared interface -------------------------------------------------------------
    def variable_groups(self) -> dict[str, Sequence[tf.Variable]]:
        # The group names of files written before the one contract: they still load.
        return {**super().variable_groups(), "average": self.average.trainable_variables}

    def resume_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Also the replay buffer and its generator."""
        meta, arrays = super().resume_state()
        meta["replay"] = None
        if self.replay_buffer is not None:
            meta["replay"], replay_arrays = self.raw_replay.buffer_state(self.replay_buffer)
            arrays.update(replay_arrays)
        meta["replay_rng"] = generator_state(self.replay_rng)
        return meta, arrays

    def restore_resume_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super().restore_resume_state(meta, arrays)
        if self.replay_buffer is not None:
            if meta.get("replay") is None:
                raise RLBaseError("the checkpoint holds no replay buffer (written with "
                                  "replay_ratio=0): resume it with replay_ratio=0")
            self.raw_replay.restore_buffer(self.replay_buffer, meta["replay"], arrays)
        set_generator_state(self.replay_rng, meta.get("replay_rng"))

    # -- acting -----------------------------------------------------------------------------
    @cached_property
    def _act(self) -> CompiledFunction:
        return compile_fn(self._act_graph, self.calls.signature, self.calls.jit_compile)

    def _act_graph(self, obs: tf.Tensor, state: tf.Tensor, starts: tf.Tensor
                   ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        logits, _, new_state, _ = self.policy.forward(obs, state, starts)
        actions = self.policy.distribution(logits).sample(self.policy.next_seed())
        return actions, tf.nn.softmax(logits), new_state

    def act_with_probabilities(self, obs: Any, state: np.ndarray, mask: np.ndarray
                               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sample actions for a rollout: (actions, the behaviour policy's probabilities of
        every action, next state)."""
        actor = self.calls.actor
        if actor is None:
            actions, mus, new_state = self._act(obs, state, mask)
            return actions.numpy(), mus.numpy(), new_state.numpy()
        logits = actor.params(obs)
        logits = logits - logits.max(axis=-1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=-1, keepdims=True)
        actions = np.argmax(logits + actor.rng.gumbel(size=logits.shape), axis=-1) + \
            self.ac_start
        return actions.astype(actor.head.action_dtype), probs.astype(np.float32), state

    # -- training ---------------------------------------------------------------------------
    def _signature(self) -> list[tf.TensorSpec]:
        ob, ac, p = self.policy.ob_space, self.policy.ac_space, self.policy
        num_envs, nsteps = self.num_envs, self.nsteps
        return [observation_spec(ob, [num_envs * (nsteps + 1)]),            # obs
                spec_like([num_envs * nsteps], ac.dtype),                    # actions
                spec_like([num_envs, nsteps], np.float32),                   # rewards
                spec_like([num_envs, nsteps], np.float32),                   # dones
                spec_like([num_envs * nsteps, self.nact], np.float32),       # mus
                spec_like([num_envs * (nsteps + 1)], np.float32),            # starts
                spec_like([num_envs, p.state_size], np.float32),             # state
                # Truncated steps' final observations, recurrent states and step indices;
                # their number varies (padded to whole multiples of num_envs: few shapes).
                observation_spec(ob, [None]),                             # final_obs
                spec_like([None, p.state_size], np.float32),              # final_state
                spec_like([None], np.int32),                              # final_index
                spec_like([], np.float32)]                                # lr

    def batch(self, seq: Sequences) -> tuple[Any, ...]:
        """The training call's inputs (all but lr) for a batch of sequences (observations
        nested for Dict/Tuple spaces, leaf by leaf)."""
        n, t, space = self.num_envs, self.nsteps, self.policy.ob_space
        index = np.flatnonzero(seq.truncated).astype(np.int32)
        found = nested.batch_size(space, seq.final_obs)
        if found != len(index):
            raise RLBaseError(f"{len(index)} truncated steps but {found} final observations")
        # At least one row: a recurrent torso infers its sequence length from the batch.
        rows = n * max(1, math.ceil(len(index) / n))
        final_obs = nested.map_structure(
            lambda x: np.pad(x, [(0, rows - len(x))] + [(0, 0)] * (x.ndim - 1)), seq.final_obs)
        final_state = np.zeros((rows, self.state_size), np.float32)
        final_index = np.full(rows, n * t, np.int32)  # padding lands past the last step
        final_state[:len(index)] = seq.final_state
        final_index[:len(index)] = index
        obs = nested.map_structure(lambda x: x.reshape(n * (t + 1), *x.shape[2:]), seq.obs)
        return (obs, seq.actions.reshape(n * t),
                seq.rewards, seq.dones, seq.mus.reshape(n * t, self.nact),
                seq.starts.reshape(n * (t + 1)), seq.state, final_obs, final_state, final_index)

    def truncation_bootstrap(self, final_obs: tf.Tensor, final_state: tf.Tensor,
                             final_index: tf.Tensor) -> tf.Tensor:
        """``[num_envs, nsteps]``: ``gamma * V(final observation)`` at truncated steps under the
        current weights (0 elsewhere, and everywhere when gamma is 1)."""
        nbatch = self.num_envs * self.nsteps
        if not bootstraps_truncation(self.gamma):
            return tf.zeros([self.num_envs, self.nsteps])
        rows = tf.shape(final_index)[0]
        values = self.policy.forward(final_obs, final_state, tf.zeros([rows]))[1]
        boot = tf.scatter_nd(final_index[:, None], self.gamma * tf.stop_gradient(values),
                             [nbatch + 1])
        return tf.reshape(boot[:nbatch], [self.num_envs, self.nsteps])

    def gradients(self, obs: tf.Tensor, actions: tf.Tensor, rewards: tf.Tensor,
                  dones: tf.Tensor, mus: tf.Tensor, starts: tf.Tensor, state: tf.Tensor,
                  final_obs: tf.Tensor, final_state: tf.Tensor, final_index: tf.Tensor
                  ) -> tuple[list[tf.Tensor | None], dict[str, tf.Tensor]]:
        """The (unclipped) gradients of the ACER loss for the policy's trainable variables and
        the statistics by name (STAT_NAMES)."""
        num_envs, nsteps, nbatch = self.num_envs, self.nsteps, self.num_envs * self.nsteps
        policy = self.policy
        variables = policy.trainable_variables

        def strip(x: tf.Tensor) -> tf.Tensor:
            """``[num_envs * (nsteps + 1), ...]`` -> the first nsteps of each env, flat."""
            x = tf.reshape(x, [num_envs, nsteps + 1, *x.shape[1:]])
            return tf.reshape(x[:, :-1], [nbatch, *x.shape[2:]])

        rewards = rewards + self.truncation_bootstrap(final_obs, final_state, final_index)
        avg_logits = self.average.forward(obs, state, starts)[0]
        f_pol = strip(tf.nn.softmax(avg_logits))
        index = tf.stack([tf.range(nbatch), tf.cast(actions, tf.int32) - self.ac_start], 1)
        with tf.GradientTape(persistent=True) as tape:
            logits, values, _, q_all = policy.forward(obs, state, starts)
            f = strip(tf.nn.softmax(logits))
            q = strip(q_all)
            v_all = tf.stop_gradient(tf.reshape(values, [num_envs, nsteps + 1]))
            v = tf.reshape(v_all[:, :-1], [nbatch])
            f_i, q_i = tf.gather_nd(f, index), tf.gather_nd(q, index)
            rho = f / (mus + EPS)
            rho_i = tf.gather_nd(rho, index)
            qret = tf.reshape(q_retrace(
                rewards, dones, tf.reshape(tf.stop_gradient(q_i), [num_envs, nsteps]), v_all,
                tf.reshape(tf.minimum(1.0, tf.stop_gradient(rho_i)), [num_envs, nsteps]),
                self.gamma), [nbatch])
            entropy = tf.reduce_mean(-tf.reduce_sum(f * tf.math.log(f + EPS), axis=-1))
            # Truncated importance weights on the Retrace advantage...
            adv = qret - v
            loss_f = -tf.reduce_mean(tf.math.log(f_i + EPS) *
                                     tf.stop_gradient(adv * tf.minimum(self.c, rho_i)))
            # ...and the bias correction for the truncated part, over all actions.
            adv_bc = q - v[:, None]
            gain_bc = tf.reduce_sum(tf.math.log(f + EPS) * tf.stop_gradient(
                adv_bc * tf.nn.relu(1.0 - self.c / (rho + EPS)) * f), axis=-1)
            loss_bc = -tf.reduce_mean(gain_bc)
            loss_policy = loss_f + loss_bc
            loss_q = tf.reduce_mean(0.5 * tf.square(tf.stop_gradient(qret) - q_i))
            objective = -(loss_policy - self.ent_coef * entropy) * nbatch
            scaled_loss_q = self.q_coef * loss_q  # inside the tape, or it has no gradient
        # The policy's gradient is taken w.r.t. its probabilities f, projected per sample
        # against the KL to the average policy (k = d KL(f_pol || f) / d f), then pushed back
        # through the network.
        g = tape.gradient(objective, f)
        k = -f_pol / (f + EPS)
        if self.trust_region:
            g_adj, k_dot_g, adj = trust_region_adjust(g, k, self.delta)
        else:
            g_adj, k_dot_g, adj = g, tf.reduce_sum(k * g, axis=-1), tf.zeros([nbatch])
        grads_f = -g_adj / nbatch
        grads_policy = tape.gradient(f, variables, output_gradients=grads_f)
        grads_q = tape.gradient(scaled_loss_q, variables)
        del tape
        grads = add_grads(grads_policy, grads_q)
        loss = loss_policy + self.q_coef * loss_q - self.ent_coef * entropy
        stats = [
            loss, loss_q, -entropy, loss_policy, loss_f, loss_bc, explained_variance(q_i, qret),
            tf.linalg.global_norm([x for x in grads if x is not None]),
            tf.linalg.global_norm([x for x in grads_q if x is not None]),
            tf.linalg.global_norm([x for x in grads_policy if x is not None]),
            avg_norm(grads_f) * nbatch, avg_norm(k), avg_norm(g),
            tf.reduce_mean(tf.abs(k_dot_g)), tf.reduce_mean(tf.abs(adj))]
        return grads, dict(zip(STAT_NAMES, stats))

    def train_graph(self, obs, actions, rewards, dones, mus, starts, state, final_obs,
                    final_state, final_index, lr):
        variables = self.policy.trainable_variables
        grads, stats = self.gradients(obs, actions, rewards, dones, mus, starts, state,
                                      final_obs, final_state, final_index)
        grads, _ = clip_by_global_norm(grads, self.max_grad_norm)
        self.optimizer.learning_rate.assign(lr)
        self.optimizer.apply_gradients(zip(grads, variables))
        # Polyak averaging after the step (the loss above used the average from before it).
        for avg, var in zip(self.average.trainable_variables, variables):
            avg.assign((1.0 - self.tau) * avg + self.tau * var)
        return (tf.stack([stats[name] for name in STAT_NAMES]), *self.calls.actor_weights())

    # ACER trains on sequences with behaviour probabilities, not on OnPolicyModel's Rollouts.
    def train(self, seq: Sequences, lr: float) -> dict[str, float]:  # type: ignore[override]
        """One update on a batch of sequences (fresh or replayed); returns the statistics."""
        stats, *weights = self._train(*self.batch(seq), np.float32(lr))
        self.calls.sync(weights)
        return dict(zip(self.stat_names, stats.numpy().tolist()))


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: ACERConfig, *,
                total_timesteps: int = 0) -> Model:
    """ACER's model for these spaces and ``num_envs`` envs (learn() and rlbase.ACER call this):
    the policy, its Polyak average, the optimizer, the replay buffer and its generator.
    ``value_network`` stays in the model's network_kwargs, so a file rebuilds the Q head's
    torso."""
    discrete_space(action_space)
    configure_threads("convnet" if has_images(observation_space) else "small")
    kwargs = dict(network_kwargs)
    value_network = kwargs.pop("value_network", None)
    policy, average = (AcerPolicy(observation_space, action_space, network, value_network,
                                  kwargs) for _ in range(2))
    jit = use_xla(observation_space, num_envs, config, total_timesteps, XLA_MIN_UPDATES)
    return Model(policy, average, num_envs, config, network_kwargs, jit_compile=jit)
