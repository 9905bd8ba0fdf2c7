"""What SAC's and TQC's models share: the squashed-Gaussian actor, the entropy coefficient
(learned or fixed) and its optimizer, acting, the density of actions, export, the fused
training call and what a file holds. Each algorithm's model subclasses
:class:`SoftActorCriticAgent` and supplies its critics (:meth:`build_critics`), their targets
and losses (:meth:`critic_targets`, :meth:`critic_loss`) and the actor's loss
(:meth:`actor_loss`).

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

Actions live in [-1, 1] inside the model (the tanh range, the replay buffer) and are mapped
onto the env's [low, high] only when they leave it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property
from typing import Any, ClassVar, TypeVar

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.common import nested
from rlbase.common.buffers.raw_replay import random_streams, sample_minibatches
from rlbase.common.families.continuous import (
    ContinuousAgent,
    build_torso,
    check_continuous_action_space,
    check_observation_space,
)
from rlbase.common.families.soft_actor_critic_config import (
    SoftActorCriticConfig,
    parse_ent_coef,
    target_entropy_value,
)
from rlbase.common.families.squashed_gaussian import Actor, squashed_sample, temperature_loss
from rlbase.common.loops.off_policy import OffPolicyHooks, run_off_policy
from rlbase.common.loops.training_loop import LoopOptions
from rlbase.common.networks.policy_graph import PolicyGraph, scale_to_bounds
from rlbase.common.schedules import get_schedule_fn
from rlbase.common.tf_util import (
    Adam,
    CompiledFunction,
    compile_fn,
    configure_threads,
    spec_like,
)
from rlbase.common.vec_env import VecEnv

# PyTorch's Adam epsilon (the peer's); Keras' default is 1e-7.
ADAM_EPSILON = 1e-8


class SoftActorCriticAgent(ContinuousAgent):
    """A squashed-Gaussian actor, critics with soft-updated targets (the subclass's) and a
    learned (or fixed) entropy coefficient.

    observation_space: a Box, or a Dict/Tuple space (SB3's MultiInputPolicy).
    action_space: a 1-D Box with finite bounds.
    num_envs: the envs it trains on.
    network / network_kwargs: the registry network of the actor's and each critic's torso.
    config: the algorithm's parameters (the temperature and its optimizer exist whether
        ent_coef is learned or fixed).
    """

    #: the training call's statistics, means over its gradient steps (SB3's train/ keys)
    stat_names: ClassVar[tuple[str, ...]] = ("critic_loss", "actor_loss", "ent_coef",
                                             "ent_coef_loss")
    config: SoftActorCriticConfig

    def __init__(self, observation_space: gym.Space, action_space: gym.spaces.Box,
                 num_envs: int, network: Any, network_kwargs: dict[str, Any],
                 config: SoftActorCriticConfig):
        super().__init__(observation_space, action_space, network, network_kwargs, config,
                         num_envs)
        self.network_builder = network  # (``network`` keeps a builder's name only)
        self.auto_alpha, self.initial_alpha = parse_ent_coef(config.ent_coef)
        self.target_entropy = target_entropy_value(config.target_entropy, self.num_actions)
        # The training call's XLA is chosen per step count (train_fn_for).
        self.jit_compile = config.jit_compile
        self.jit_act = True if config.jit_compile is None else config.jit_compile
        # Created in this order (the actor, the critics, their targets): a seed gives the
        # same initial weights as before these models shared this class.
        self.actor = Actor(observation_space, self.num_actions, self.torso())
        self.critics, self.target_critics = self.build_critics()
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

    def torso(self) -> Any:
        """A fresh torso of the network (the actor's or one critic's)."""
        return build_torso(self.network_builder, self.network_kwargs, self.algorithm,
                           self.observation_space)

    # -- what the algorithm supplies -----------------------------------------------------------
    def build_critics(self) -> tuple[list[Any], list[Any]]:
        """(the critics, their targets), every one with its own :meth:`torso`."""
        raise NotImplementedError

    def critic_targets(self, rewards: tf.Tensor, next_obs: Any, dones: tf.Tensor,
                       noise: tf.Tensor, alpha: tf.Tensor) -> tf.Tensor:
        """The critics' regression targets (no gradient), the policy's action at s' drawn
        with ``noise``."""
        raise NotImplementedError

    def critic_loss(self, obs: Any, actions: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
        """The critics' loss on the stored ``actions`` against ``targets``."""
        raise NotImplementedError

    def actor_loss(self, obs: Any, actions: tf.Tensor, log_prob: tf.Tensor, alpha: tf.Tensor
                   ) -> tf.Tensor:
        """The actor's loss for its reparameterized ``actions`` and their ``log_prob``."""
        raise NotImplementedError

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
            return scale_to_bounds(squashed_sample(mean, log_std, noise)[0], space), state

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
        values = dict(zip(self.stat_names, stats.numpy().tolist()))
        if not self.auto_alpha:
            del values["ent_coef_loss"]
        return values, actions.numpy()

    # -- graph pieces --------------------------------------------------------------------------
    def policy(self, obs: Any, noise: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """``(a, log pi(a|s))`` for ``a = tanh(mean + std * noise)``."""
        mean, log_std = self.actor(obs)
        return squashed_sample(mean, log_std, noise)

    def temperature_step(self, log_prob: tf.Tensor) -> tf.Tensor:
        """In-graph: one step of the temperature on the actions just drawn (``ent_coef``
        'auto'); its loss (0 for a fixed temperature)."""
        if not self.auto_alpha:
            return tf.constant(0.0)
        with tf.GradientTape() as tape:
            alpha_loss = temperature_loss(self.log_alpha, log_prob, self.target_entropy)
        self.alpha_optimizer.apply_gradients(
            [(tape.gradient(alpha_loss, self.log_alpha), self.log_alpha)])
        return alpha_loss

    def _gradient_step(self, obs: Any, actions: tf.Tensor, rewards: tf.Tensor, next_obs: Any,
                       dones: tf.Tensor, noise: tf.Tensor) -> tf.Tensor:
        """One update on one minibatch; returns its four statistics (stat_names)."""
        alpha = tf.exp(self.log_alpha)  # this step's temperature, read before it moves
        actor_vars = self.actor.trainable_variables
        with tf.GradientTape(watch_accessed_variables=False) as actor_tape:
            # Only the actor: the critics' weight gradients are never needed here.
            actor_tape.watch([v.value for v in actor_vars])
            actions_pi, log_prob = self.policy(obs, noise[0])
        alpha_loss = self.temperature_step(log_prob)
        targets = self.critic_targets(rewards, next_obs, dones, noise[1], alpha)
        critic_vars = self.critic_variables
        with tf.GradientTape() as tape:
            q_loss = self.critic_loss(obs, actions, targets)
        self.critic_optimizer.apply_gradients(zip(tape.gradient(q_loss, critic_vars),
                                                  critic_vars))
        with actor_tape:  # the updated critics judge the actions drawn above
            pi_loss = self.actor_loss(obs, actions_pi, log_prob, alpha)
        self.actor_optimizer.apply_gradients(zip(actor_tape.gradient(pi_loss, actor_vars),
                                                 actor_vars))
        self.updates.assign_add(1)
        self.update_targets_when_due()
        return tf.stack([q_loss, pi_loss, alpha, alpha_loss])

    def _act(self, obs: Any, noise: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """(sampled actions, deterministic actions tanh(mean), the Gaussian's std)."""
        mean, log_std = self.actor(obs)
        sampled, _ = squashed_sample(mean, log_std, noise)
        return sampled, tf.tanh(mean), tf.exp(log_std)

    def _train_graph(self, obs: Any, actions: tf.Tensor, rewards: tf.Tensor, next_obs: Any,
                     dones: tf.Tensor, noise: tf.Tensor, act_obs: Any, act_noise: tf.Tensor,
                     lr: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """The steps on the stacked minibatches (as many as they are) (``noise``: ``[g, 2, B, A]``,
        for the policy's actions at s and at s'), then sampled actions for ``act_obs``.
        Returns (the statistics' means over the steps, those actions)."""
        for optimizer in (self.actor_optimizer, self.critic_optimizer, self.alpha_optimizer):
            optimizer.learning_rate.assign(lr)
        width = len(self.stat_names)

        def body(i: Any, stats: tf.Tensor) -> tuple[Any, tf.Tensor]:
            step = self._gradient_step(
                tf.nest.map_structure(lambda x: x[i], obs), actions[i], rewards[i],
                tf.nest.map_structure(lambda x: x[i], next_obs), dones[i], noise[i])
            return i + 1, stats + step

        nsteps = rewards.shape[0]  # static: one compiled call per step count
        if nsteps == 1:  # the usual cadence: no loop frame around the one step
            stats = body(0, tf.zeros(width))[1]
        else:
            _, stats = tf.while_loop(lambda i, _: i < nsteps, body,
                                     (tf.constant(0), tf.zeros(width)))
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
        interleaved 256x256 SAC calls: one step 8.4 ms plain, 8.8 ms XLA; inside a 64-step
        loop 8.0 ms plain, 7.3 ms XLA per step."""
        if steps not in self._train_fns:
            jit = steps > 1 if self.jit_compile is None else self.jit_compile
            g, b, a = steps, self.batch_size, self.num_actions
            vec = spec_like([g, b], np.float32)
            self._train_fns[steps] = compile_fn(self._train_graph, [
                self._ob_spec(g, b), spec_like([g, b, a], np.float32), vec, self._ob_spec(g, b),
                vec, spec_like([g, 2, b, a], np.float32), self._ob_spec(None),
                spec_like([None, a], np.float32), spec_like([], np.float32)], jit)
        return self._train_fns[steps]


class SoftActorCriticHooks(OffPolicyHooks[SoftActorCriticAgent]):
    """SAC's and TQC's part of the off-policy loop: sampled actions, trained before acting."""

    loss_names = ("critic_loss", "actor_loss")

    def random_actions(self) -> np.ndarray:
        return self.model.random_actions()

    def act(self, obs: Any, t: int) -> np.ndarray:
        return self.model.act(obs)

    def train_and_act(self, obs: Any, phases: int, lr: float
                      ) -> tuple[dict[str, float], np.ndarray]:
        return self.model.train_and_act(obs, lr, phases)

    def to_env(self, actions: np.ndarray) -> np.ndarray:
        return self.model.to_env(actions)

    def n_updates(self) -> int:
        return self.model.grad_steps


AgentT = TypeVar("AgentT", bound=SoftActorCriticAgent)


def train_soft_actor_critic(model: AgentT, env: VecEnv, total_timesteps: int, options: LoopOptions,
          hooks: type[SoftActorCriticHooks] = SoftActorCriticHooks) -> AgentT:
    """Run SAC's, TQC's or CrossQ's loop (their ``hooks``) on ``model`` for ``total_timesteps``
    more env steps (with ``resume``: up to that many in all)."""
    run_off_policy(hooks(model, model.config.lr), env, total_timesteps, options)
    return model


def checked_build_inputs(observation_space: gym.Space, action_space: gym.Space, network: Any,
                         network_kwargs: dict[str, Any], algorithm: str,
                         **mlp_defaults: Any) -> tuple[gym.spaces.Box, dict[str, Any]]:
    """What every soft actor-critic builder starts with: the spaces checked (one line naming
    ``algorithm`` for a space it cannot take), TensorFlow's own thread pools (each training
    call works on whole minibatches through wide layers), and the network kwargs with the
    'mlp' defaults (ReLU, and ``mlp_defaults`` such as num_hidden) under the user's.
    Returns (the Box action space, the kwargs)."""
    box = check_continuous_action_space(action_space, algorithm)
    check_observation_space(observation_space, algorithm)
    configure_threads("large")
    kwargs = dict(network_kwargs)
    if network == "mlp":
        kwargs.setdefault("activation", "relu")
        for key, value in mlp_defaults.items():
            kwargs.setdefault(key, value)
    return box, kwargs


#: learn()'s notes every soft actor-critic algorithm shares (rlbase.common.loops.learning's
#: config_signature); each adds its own "network" and "**network_kwargs"
LEARN_NOTES = {
    "env": "a VecEnv with a Box action space (a gymnasium env or an env id is wrapped)",
    "seed": "seed of python, numpy, TensorFlow, the envs, the policy's noise and the replay "
            "sampling",
    "eval_env": "an env (or env id, seeded with seed + 1000) to evaluate the deterministic "
                "policy (tanh of the Gaussian's mean) on",
    "callback": "called after every vectorized env step as callback(model, info); returning "
                "False stops",
    "checkpoint_path": "the checkpoints' folder (None: <log dir>/checkpoints); a checkpoint "
                       "holds the model, replay buffer and generators",
    "**network_kwargs": "passed to the network builder ('mlp': num_layers (2), num_hidden "
                        "(256 here), activation (relu here), layer_sizes, layer_norm); SB3's "
                        "names (learning_rate, target_update_interval, ...) are taken out "
                        "first",
}
