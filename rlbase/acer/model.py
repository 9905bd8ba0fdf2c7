"""ACER's learner: a policy with pi and Q heads, a Polyak-averaged copy of it, Retrace targets,
truncated importance weights with bias correction and the efficient trust-region projection
(Wang et al. 2016, "Sample Efficient Actor-Critic with Experience Replay"), one compiled call
per update (on-policy and replay updates share it, so it traces once)."""

from __future__ import annotations

from functools import cached_property
from typing import Any, Sequence

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.common.compiled_policy import CompiledPolicy
from rlbase.common.errors import RLBaseError
from rlbase.common.on_policy_model import OnPolicyModel
from rlbase.common.policies import ActorCriticPolicy, encode_observation
from rlbase.common.tf_util import (
    CompiledFunction,
    RMSprop,
    clip_by_global_norm,
    compile_fn,
    explained_variance,
    spec_like,
)

ALGORITHM = "acer"
EPS = 1e-6  # the reference's epsilon in log(f + eps), rho = f / (mu + eps), ...
STAT_NAMES = ("loss", "loss_q", "entropy", "loss_policy", "loss_f", "loss_bc",
              "explained_variance", "norm_grads", "norm_grads_q", "norm_grads_policy",
              "avg_norm_grads_f", "avg_norm_k", "avg_norm_g", "avg_norm_k_dot_g", "avg_norm_adj")


def check_action_space(space: gym.Space) -> None:
    if not isinstance(space, gym.spaces.Discrete):
        raise RLBaseError(f"ACER needs a Discrete action space, got {space}; for continuous "
                          "actions use ppo, a2c or ddpg")


class AcerPolicy(ActorCriticPolicy):
    """An actor-critic policy whose critic is Q(s, .): the state value is ``sum_a pi(a|s)
    Q(s, a)``, so ``value`` (truncation bootstraps) and ``step`` need no separate value head
    (it is never called, so it holds no weights)."""

    def __init__(self, ob_space: gym.Space, ac_space: gym.Space, network: Any = "mlp",
                 value_network: str | None = None,
                 network_kwargs: dict[str, Any] | None = None):
        check_action_space(ac_space)
        super().__init__(ob_space, ac_space, network, value_network, estimate_q=True,
                         network_kwargs=network_kwargs)

    def forward(self, obs: tf.Tensor, state: tf.Tensor, starts: tf.Tensor
                ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        x = encode_observation(self.ob_space, obs)
        latent, new_state = self._torso(self.torso, x, state, starts)
        qlatent = latent if self.value_torso is None else self.value_torso(x)
        logits = self.pd_head(latent)
        q = self.q_head(qlatent)
        values = tf.reduce_sum(tf.nn.softmax(logits) * q, axis=-1)
        return logits, values, new_state, q


def q_retrace(rewards: tf.Tensor, dones: tf.Tensor, q_i: tf.Tensor, values: tf.Tensor,
              rho_bar: tf.Tensor, gamma: float) -> tf.Tensor:
    """Retrace targets of ``[nenvs, nsteps]`` sequences.

    values: ``[nenvs, nsteps + 1]``, the last column bootstraps the sequence. Going backwards,
    ``Qret_t = r_t + gamma (1 - d_t) X_{t+1}`` with ``X_t = rho_bar_t (Qret_t - Q_t) + V_t``:
    at an episode end the target is the reward alone (a truncated step's reward already holds
    gamma V(final observation)).
    """
    def backward(acc: tuple[tf.Tensor, tf.Tensor], elems: tuple[tf.Tensor, ...]
                 ) -> tuple[tf.Tensor, tf.Tensor]:
        reward, done, q, v, rho = elems
        qret = reward + gamma * (1.0 - done) * acc[1]
        return qret, rho * (qret - q) + v

    elems = tuple(tf.transpose(x) for x in (rewards, dones, q_i, values[:, :-1], rho_bar))
    last = values[:, -1]
    qret_t, _ = tf.scan(backward, elems, initializer=(tf.zeros_like(last), last), reverse=True)
    return tf.transpose(qret_t)


def trust_region_adjust(g: tf.Tensor, k: tf.Tensor, delta: float
                        ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Project each row of the gradient ``g`` (w.r.t. the policy's probabilities) so that the
    linearized KL to the average policy, ``k . z`` with ``k`` its gradient, stays <= delta:
    ``z = g - max(0, (k.g - delta) / |k|^2) k``. Returns (z, k.g, the adjustment)."""
    k_dot_g = tf.reduce_sum(k * g, axis=-1)
    adj = tf.maximum(0.0, (k_dot_g - delta) / (tf.reduce_sum(tf.square(k), axis=-1) + EPS))
    return g - adj[:, None] * k, k_dot_g, adj


def _avg_norm(t: tf.Tensor) -> tf.Tensor:
    return tf.reduce_mean(tf.sqrt(tf.reduce_sum(tf.square(t), axis=-1)))


def _add_grads(a: Sequence[tf.Tensor | None], b: Sequence[tf.Tensor | None]
               ) -> list[tf.Tensor]:
    return [x if y is None else y if x is None else x + y for x, y in zip(a, b)]


class Model(OnPolicyModel):
    """The ACER learner. ``train(sequences, lr)`` is one compiled call, on fresh or replayed
    sequences alike (the batch shape is the same: one ``nsteps`` sequence per env)."""

    algorithm = ALGORITHM
    stat_names = STAT_NAMES

    def __init__(self, policy: AcerPolicy, average: AcerPolicy, nenvs: int, nsteps: int,
                 q_coef: float = 0.5, ent_coef: float = 0.01, max_grad_norm: float | None = 10,
                 rprop_alpha: float = 0.99, rprop_epsilon: float = 1e-5, gamma: float = 0.99,
                 c: float = 10.0, trust_region: bool = True, alpha: float = 0.99,
                 delta: float = 1.0, hyperparameters: dict[str, Any] | None = None,
                 jit_compile: bool = False):
        self.average = average
        self.q_coef, self.ent_coef, self.max_grad_norm = q_coef, ent_coef, max_grad_norm
        self.gamma, self.c, self.trust_region = gamma, c, trust_region
        self.alpha, self.delta = alpha, delta
        self.nact = int(policy.ac_space.n)
        self.ac_start = int(policy.ac_space.start)
        for avg, var in zip(average.trainable_variables, policy.trainable_variables):
            avg.assign(var)  # the average starts where the policy does
        # The reference's TF1 RMSProp: mean square started at one, epsilon inside the root.
        optimizer = RMSprop(7e-4, rprop_alpha, rprop_epsilon, initial_accumulator=1.0,
                            epsilon_inside_sqrt=True)
        # OnPolicyModel's set-up, except that the training and act calls compile on first use
        # (tracing this update takes seconds; tests of its parts never need it).
        self.policy, self.optimizer = policy, optimizer
        self.optimizer.build(policy.trainable_variables)
        self.nenvs, self.nsteps = nenvs, nsteps
        self.hyperparameters = dict(hyperparameters or {})
        self.num_timesteps = 0
        self.vec_normalize = None
        self.initial_state = policy.initial_state
        self.calls = CompiledPolicy(policy)
        self.step, self.value = self.calls.step, self.calls.value
        self.jit_compile = jit_compile
        # Set by learn(): the replay buffer (None without replay) and the generator that samples
        # it, kept for inspection and checkpoint tests.
        self.replay_buffer: Any = None
        self.replay_rng: np.random.Generator | None = None

    @cached_property
    def _train(self) -> CompiledFunction:
        return compile_fn(self.train_graph, self._signature(), self.jit_compile)

    @cached_property
    def _act(self) -> CompiledFunction:
        return compile_fn(self._act_graph, self.calls.signature, self.calls.jit_compile)

    # -- acting ----------------------------------------------------------------------------
    def _act_graph(self, obs: tf.Tensor, state: tf.Tensor, starts: tf.Tensor
                   ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        logits, _, new_state, _ = self.policy.forward(obs, state, starts)
        actions = self.policy.distribution(logits).sample(self.policy.next_seed())
        return actions, tf.nn.softmax(logits), new_state

    def act(self, obs: np.ndarray, state: np.ndarray, mask: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sample actions: (actions, the behaviour policy's probabilities, next state)."""
        actor = self.calls.actor
        if actor is None:
            actions, mus, state = self._act(obs, state, mask)
            return actions.numpy(), mus.numpy(), state.numpy()
        logits = actor.params(obs)
        logits = logits - logits.max(axis=-1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=-1, keepdims=True)
        actions = np.argmax(logits + actor.rng.gumbel(size=logits.shape), axis=-1) + \
            self.ac_start
        return actions.astype(actor.head.action_dtype), probs.astype(np.float32), state

    # -- training --------------------------------------------------------------------------
    def _signature(self) -> list[tf.TensorSpec]:
        ob, ac, p = self.policy.ob_space, self.policy.ac_space, self.policy
        nenvs, nsteps = self.nenvs, self.nsteps
        return [spec_like([nenvs * (nsteps + 1), *ob.shape], ob.dtype),   # obs
                spec_like([nenvs * nsteps], ac.dtype),                    # actions
                spec_like([nenvs, nsteps], np.float32),                   # rewards
                spec_like([nenvs, nsteps], np.float32),                   # dones
                spec_like([nenvs * nsteps, self.nact], np.float32),       # mus
                spec_like([nenvs * (nsteps + 1)], np.float32),            # starts
                spec_like([nenvs, p.state_size], np.float32),             # state
                spec_like([], np.float32)]                                # lr

    def gradients(self, obs: tf.Tensor, actions: tf.Tensor, rewards: tf.Tensor,
                  dones: tf.Tensor, mus: tf.Tensor, starts: tf.Tensor, state: tf.Tensor
                  ) -> tuple[list[tf.Tensor], dict[str, tf.Tensor]]:
        """The (unclipped) gradients of the ACER loss for the policy's trainable variables and
        the statistics by name (STAT_NAMES)."""
        nenvs, nsteps, nbatch = self.nenvs, self.nsteps, self.nenvs * self.nsteps
        policy = self.policy
        variables = policy.trainable_variables

        def strip(x: tf.Tensor) -> tf.Tensor:
            """``[nenvs * (nsteps + 1), ...]`` -> the first nsteps of each env, flat."""
            x = tf.reshape(x, [nenvs, nsteps + 1, *x.shape[1:]])
            return tf.reshape(x[:, :-1], [nbatch, *x.shape[2:]])

        avg_logits = self.average.forward(obs, state, starts)[0]
        f_pol = strip(tf.nn.softmax(avg_logits))
        index = tf.stack([tf.range(nbatch), tf.cast(actions, tf.int32) - self.ac_start], 1)
        with tf.GradientTape(persistent=True) as tape:
            logits, values, _, q_all = policy.forward(obs, state, starts)
            f = strip(tf.nn.softmax(logits))
            q = strip(q_all)
            v_all = tf.stop_gradient(tf.reshape(values, [nenvs, nsteps + 1]))
            v = tf.reshape(v_all[:, :-1], [nbatch])
            f_i, q_i = tf.gather_nd(f, index), tf.gather_nd(q, index)
            rho = f / (mus + EPS)
            rho_i = tf.gather_nd(rho, index)
            qret = tf.reshape(q_retrace(
                rewards, dones, tf.reshape(tf.stop_gradient(q_i), [nenvs, nsteps]), v_all,
                tf.reshape(tf.minimum(1.0, tf.stop_gradient(rho_i)), [nenvs, nsteps]),
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
        grads = _add_grads(grads_policy, grads_q)
        loss = loss_policy + self.q_coef * loss_q - self.ent_coef * entropy
        values = [
            loss, loss_q, entropy, loss_policy, loss_f, loss_bc, explained_variance(q_i, qret),
            tf.linalg.global_norm(grads),
            tf.linalg.global_norm([x for x in grads_q if x is not None]),
            tf.linalg.global_norm([x for x in grads_policy if x is not None]),
            _avg_norm(grads_f) * nbatch, _avg_norm(k), _avg_norm(g),
            tf.reduce_mean(tf.abs(k_dot_g)), tf.reduce_mean(tf.abs(adj))]
        return grads, dict(zip(STAT_NAMES, values))

    def train_graph(self, obs, actions, rewards, dones, mus, starts, state, lr):
        variables = self.policy.trainable_variables
        grads, stats = self.gradients(obs, actions, rewards, dones, mus, starts, state)
        grads, _ = clip_by_global_norm(grads, self.max_grad_norm)
        self.optimizer.learning_rate.assign(lr)
        self.optimizer.apply_gradients(zip(grads, variables))
        # Polyak averaging after the step (the loss above used the average from before it).
        for avg, var in zip(self.average.trainable_variables, variables):
            avg.assign(self.alpha * avg + (1.0 - self.alpha) * var)
        return (tf.stack([stats[name] for name in STAT_NAMES]), *self.calls.actor_weights())

    def train(self, seq: Any, lr: float) -> dict[str, float]:  # type: ignore[override]
        """One update on a batch of sequences (runner.Sequences); returns the statistics."""
        n, t = self.nenvs, self.nsteps
        stats, *weights = self._train(
            seq.obs.reshape(n * (t + 1), *seq.obs.shape[2:]), seq.actions.reshape(n * t),
            seq.rewards, seq.dones, seq.mus.reshape(n * t, self.nact),
            seq.starts.reshape(n * (t + 1)), seq.state, np.float32(lr))
        self.calls.sync(weights)
        return dict(zip(self.stat_names, stats.numpy().tolist()))

    def _groups(self) -> dict[str, Sequence[tf.Variable]]:
        return {**super()._groups(), "average": self.average.trainable_variables}
