"""The shared shape of on-policy actor-critic models (A2C, PPO, ACER).

A subclass builds its optimizer and defines ``train_graph(rollout tensors..., *scalars)``
returning ``(stats, *extra)`` where ``extra`` comes from :meth:`after_update`. One compiled
call then does a whole update, and this class does the rest: acting, saving, loading, and
keeping the numpy act path in step with the trained weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from rlbase.common import nested
from rlbase.common.config import AlgorithmConfig
from rlbase.common.errors import RLBaseError
from rlbase.common.io.checkpoint import generator_state, set_generator_state
from rlbase.common.loops.action_masks import check_masks, mask_size
from rlbase.common.loops.rollout import Rollout
from rlbase.common.mpi_util import allreduce_mean, check_synced, sync_variables
from rlbase.common.networks.compiled_policy import CompiledPolicy
from rlbase.common.networks.distributions import Categorical, DiagGaussian
from rlbase.common.networks.policies import (
    ActorCriticPolicy,
    has_images,
    policy_from_kwargs,
    xla_is_faster,
)
from rlbase.common.networks.policy_graph import PolicyGraph
from rlbase.common.tf_model import TFModel
from rlbase.common.tf_util import (
    CompiledFunction,
    compile_fn,
    configure_threads,
    observation_spec,
    spec_like,
)

# Frames per forward pass when recomputing a rollout's behaviour policy (OnPolicyModel.behaviour).
BEHAVIOUR_ROWS = 1024


class OnPolicyModel(TFModel):
    """A policy, its optimizer, and one compiled training call per rollout (traced for the
    rollout's shape, ``num_envs`` by ``nsteps``; with XLA when ``jit_compile``)."""

    #: names of the ``stats`` vector the training graph returns
    stat_names: tuple[str, ...] = ()
    #: per-update scalars the training call takes after the rollout (lr, ...)
    scalar_names: tuple[str, ...] = ("lr",)
    #: the MPI communicator the update averages over (None: single-process)
    comm: Any = None
    #: a model that shuffles its minibatches: the seed of their order (checkpointed) and what
    #: a checkpoint without it is said to lack
    shuffle_seed: tf.Variable | None = None
    shuffle_what = ""

    def __init__(self, policy: ActorCriticPolicy, optimizer: keras.optimizers.Optimizer,
                 num_envs: int, nsteps: int, network_kwargs: dict[str, Any],
                 config: AlgorithmConfig, jit_compile: bool = True):
        super().__init__(policy.ob_space, policy.ac_space, policy.network_name, network_kwargs,
                         config, num_envs)
        if nsteps < 1:
            raise RLBaseError(f"nsteps must be at least 1, got {nsteps}")
        self.policy = policy
        self.optimizer = optimizer
        self.optimizer.build(policy.trainable_variables)
        self.num_envs, self.nsteps = num_envs, nsteps
        self.state_size = policy.state_size
        self.calls = CompiledPolicy(policy)
        self.jit_compile = jit_compile
        # On the TF act path, the last training call's step on the next observations:
        # (observation leaves, outputs). A checkpoint keeps it, since drawing those actions
        # again outside the training call may give others (XLA samples differently).
        self._next_step: tuple[list[np.ndarray], tuple[np.ndarray, ...]] | None = None
        self._resumed_step: tuple[list[np.ndarray], tuple[np.ndarray, ...]] | None = None

    @cached_property
    def _train(self) -> CompiledFunction:
        """The update, traced at its first use (a model built only to act never traces it)."""
        return compile_fn(self.train_graph, self._signature(), self.jit_compile)

    @cached_property
    def _train_masked(self) -> CompiledFunction:
        """The update of a rollout with action masks (the rollout's and ``last_obs``'s, after
        the scalars): traced only when a rollout has them, so unmasked runs are unchanged."""
        size = self.policy.pd_head.mask_size

        def masked(*args: tf.Tensor) -> tuple[tf.Tensor, ...]:
            *inputs, masks, last_masks = args
            return self.train_graph(*inputs, action_masks=masks, last_action_masks=last_masks)

        return compile_fn(masked, self._signature() + [
            spec_like([self.num_envs * self.nsteps, size], np.bool_),
            spec_like([self.num_envs, size], np.bool_)], self.jit_compile)

    def _signature(self) -> list[Any]:
        ob, ac, p = self.policy.ob_space, self.policy.ac_space, self.policy
        num_envs, nbatch = self.num_envs, self.num_envs * self.nsteps
        return [observation_spec(ob, [nbatch]),                        # obs
                spec_like([nbatch, *(ac.shape or ())], ac.dtype),     # actions
                spec_like([num_envs, self.nsteps], np.float32),          # rewards
                spec_like([num_envs, self.nsteps], np.float32),          # dones
                spec_like([nbatch], np.float32),                      # starts
                spec_like([num_envs, p.state_size], np.float32),         # state
                observation_spec(ob, [num_envs]),                         # last_obs
                spec_like([num_envs, p.state_size], np.float32),         # last_state
                spec_like([num_envs], np.float32)] + \
            [spec_like([], np.float32) for _ in self.scalar_names]   # lr, ...

    # -- the declared interface -----------------------------------------------------------------
    def variable_groups(self) -> dict[str, Sequence[tf.Variable]]:
        return {"policy": self.policy.weights, "optimizer": self.optimizer.variables}

    def after_load(self) -> None:
        self.calls.sync()

    def step(self, obs: Any, state: np.ndarray | None = None, mask: np.ndarray | None = None,
             deterministic: bool = False, action_masks: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(actions, values, next state, neglogp of the actions) for a batch; action_masks
        ``[B, logits]``: the valid actions (None: all; see
        :func:`~rlbase.common.loops.action_masks.check_masks`)."""
        if action_masks is not None:
            action_masks = check_masks(action_masks, self.action_space,
                                       nested.batch_size(self.observation_space, obs))
        return self.calls.step(obs, state, mask, deterministic, action_masks)

    def value(self, obs: Any, state: np.ndarray | None = None,
              mask: np.ndarray | None = None) -> np.ndarray:
        return self.calls.value(obs, state, mask)

    def policy_graph(self) -> PolicyGraph:
        """``policy.step(..., deterministic=True)`` itself (the mode of the policy's
        distribution: argmax, per-dimension argmax, p > 0.5, the Gaussian mean), and a draw
        from that distribution with an explicit seed; a model that acts with action masks
        takes them as its last input (the masked distribution's mode and draws)."""
        policy = self.policy

        def act(obs: Any, state: tf.Tensor, mask: tf.Tensor,
                action_masks: tf.Tensor | None = None) -> tuple[tf.Tensor, tf.Tensor]:
            actions, _, new_state, _ = policy.step(obs, state, mask, True, one_step=True,
                                                   action_masks=action_masks)
            return actions, new_state

        def sample(obs: Any, state: tf.Tensor, mask: tf.Tensor, seed: tf.Tensor,
                   action_masks: tf.Tensor | None = None) -> tuple[tf.Tensor, tf.Tensor]:
            params, _, new_state, _ = policy.forward(obs, state, mask, one_step=True)
            return policy.distribution(params, action_masks).sample(seed), new_state

        size = mask_size(self.action_space) if self.action_masking is not False else 0
        return PolicyGraph(self.observation_space, policy.state_size, act, sample, [policy],
                           action_mask_size=size)

    def resume_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The policy's sampling counter (the TF act path's stateless draws) and the numpy
        actor's generator: neither is a saved weight, both decide the next actions."""
        meta, arrays = super().resume_state()
        arrays["loop/sample_seed"] = self.policy.sample_seed.numpy()
        actor = self.calls.actor
        meta["actor_rng"] = None if actor is None else generator_state(actor.rng)
        if self._next_step is not None:
            leaves, outputs = self._next_step
            arrays.update({f"loop/next_obs/{i:04d}": x for i, x in enumerate(leaves)})
            arrays.update({f"loop/next_step/{i}": x for i, x in enumerate(outputs)})
        if self.shuffle_seed is not None:
            arrays["loop/shuffle_seed"] = self.shuffle_seed.numpy()
        return meta, arrays

    def restore_resume_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super().restore_resume_state(meta, arrays)
        restore_seed(arrays, "loop/sample_seed", self.policy.sample_seed,
                     "the policy's sampling counter", "a run with other settings")
        actor = self.calls.actor
        if actor is not None and meta.get("actor_rng") is not None:
            set_generator_state(actor.rng, meta["actor_rng"])
        leaves = _numbered(arrays, "loop/next_obs/")
        outputs = _numbered(arrays, "loop/next_step/")
        self._resumed_step = (leaves, tuple(outputs)) if leaves and len(outputs) == 4 \
            else None
        if self.shuffle_seed is not None:
            restore_seed(arrays, "loop/shuffle_seed", self.shuffle_seed, self.shuffle_what,
                         "another algorithm")

    def workers_mean(self, stats: dict[str, float], check: bool) -> dict[str, float]:
        """Under MPI: the update's statistics averaged over the workers and, when ``check``,
        a check that the workers still hold the same weights. Unchanged without MPI."""
        if self.comm is None:
            return stats
        if check:
            check_synced(self.policy.trainable_variables, self.comm)
        return dict(zip(stats, allreduce_mean(np.array(list(stats.values())), self.comm)))

    def resumed_step(self, obs: Any) -> tuple[np.ndarray, ...] | None:
        """Once after a resume: the checkpointed run's last step (actions, values, state,
        neglogp) when it was computed on exactly ``obs`` (at an episode boundary the reset
        observations are the ones it saw), else None: the caller acts anew."""
        if self._resumed_step is None:
            return None
        leaves, outputs = self._resumed_step
        self._resumed_step = None
        current = nested.flatten(self.policy.ob_space, obs)
        same = len(current) == len(leaves) and all(
            np.array_equal(a, b) for a, b in zip(current, leaves))
        return outputs if same else None

    def action_probabilities(self, obs: Any, state: np.ndarray, mask: np.ndarray
                             ) -> tuple[np.ndarray, ...]:
        policy = self.policy
        params = policy.forward(tf.nest.map_structure(tf.constant, obs), tf.constant(state),
                                tf.constant(mask))[0]
        pd = policy.distribution(params)
        if isinstance(pd, Categorical):
            return (tf.nn.softmax(pd.logits).numpy(),)
        if isinstance(pd, DiagGaussian):
            mean = pd.mean.numpy()
            return mean, np.broadcast_to(pd.std.numpy(), mean.shape).copy()
        raise RLBaseError(f"action probabilities need a Discrete or Box action space, got "
                          f"{self.action_space}")

    def pretrain_parts(self) -> tuple[list[Any], Any, Any]:
        policy = self.policy
        if policy.recurrent:
            raise RLBaseError(f"pretrain needs a feed-forward policy, got the recurrent "
                              f"network {policy.network_name!r}")

        def loss(obs: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
            n = tf.shape(tf.nest.flatten(obs)[0])[0]  # Dict/Tuple observations: any leaf
            params = policy.forward(obs, tf.zeros([n, 0]), tf.zeros([n]))[0]
            return tf.reduce_mean(policy.distribution(params).neglogp(actions))

        # The value (and Q) heads get no gradient from this loss: only the policy's path.
        heads = [policy.value_head, policy.q_head, policy.value_torso]
        skip = {id(v) for h in heads if h is not None for v in h.trainable_variables}
        variables = [v for v in policy.trainable_variables if id(v) not in skip]
        return variables, loss, self.calls.sync

    # -- training ---------------------------------------------------------------------------------
    def behaviour(self, obs: Any, state: tf.Tensor, starts: tf.Tensor, actions: tf.Tensor,
                  action_masks: tf.Tensor | None = None) -> tuple[tf.Tensor, tf.Tensor]:
        """In-graph: (neglogp of ``actions``, values) of the policy that collected the rollout
        (the weights have not changed since; its ``action_masks`` applied). A feed-forward
        policy on images takes the rollout in blocks of ``BEHAVIOUR_ROWS`` frames, one after
        the other: PPO's 16,384-frame Atari rollouts in one pass held ~5 GB of activations."""
        policy = self.policy

        def outputs(o: Any, s: tf.Tensor, m: tf.Tensor, a: tf.Tensor,
                    am: tf.Tensor | None = None) -> tuple[tf.Tensor, tf.Tensor]:
            params, values, _, _ = policy.forward(o, s, m)
            return policy.distribution(params, am).neglogp(a), values

        rows = self.num_envs * self.nsteps
        if policy.recurrent or not has_images(policy.ob_space) or rows <= BEHAVIOUR_ROWS:
            return outputs(obs, state, starts, actions, action_masks)
        blocks = -(-rows // BEHAVIOUR_ROWS)

        def block(i: tf.Tensor, neglogps: tf.TensorArray, values: tf.TensorArray
                  ) -> tuple[tf.Tensor, tf.TensorArray, tf.TensorArray]:
            rows_i = slice(i * BEHAVIOUR_ROWS, (i + 1) * BEHAVIOUR_ROWS)
            neglogp, value = outputs(tf.nest.map_structure(lambda t: t[rows_i], obs),
                                     state[rows_i], starts[rows_i], actions[rows_i],
                                     None if action_masks is None else action_masks[rows_i])
            return i + 1, neglogps.write(i, neglogp), values.write(i, value)

        pieces = [tf.TensorArray(tf.float32, size=blocks, infer_shape=False,
                                 element_shape=tf.TensorShape([None])) for _ in range(2)]
        # One block at a time: blocks in flight side by side would hold their activations too.
        _, neglogps, values = tf.while_loop(lambda i, *_: i < blocks, block,
                                            (tf.constant(0), *pieces), parallel_iterations=1)
        return tf.ensure_shape(neglogps.concat(), [rows]), tf.ensure_shape(values.concat(), [rows])

    def train_graph(self, *args: tf.Tensor, action_masks: tf.Tensor | None = None,
                    last_action_masks: tf.Tensor | None = None) -> tuple[tf.Tensor, ...]:
        """The update (see the module's docstring). A model whose rollouts can carry action
        masks (A2C, PPO) takes them as ``action_masks`` (``[nbatch, logits]``) and
        ``last_action_masks`` (``[num_envs, logits]``, for :meth:`after_update`)."""
        raise NotImplementedError

    def after_update(self, last_obs: tf.Tensor, last_state: tf.Tensor,
                     last_starts: tf.Tensor, last_action_masks: tf.Tensor | None = None
                     ) -> tuple[tf.Tensor, ...]:
        """In-graph, after the weights changed: the weights the numpy act path copies, or (on the
        TF act path) the policy's step on the next observation (with its action masks),
        saving the next rollout's first call."""
        if self.calls.actor is not None:
            return tuple(self.calls.actor_weights())
        if last_action_masks is None:
            return tuple(self.policy.step(last_obs, last_state, last_starts))
        return tuple(self.policy.step(last_obs, last_state, last_starts,
                                      action_masks=last_action_masks))

    def train(self, rollout: Rollout, *scalars: float) -> tuple[dict[str, float], tuple | None]:
        """One update on a rollout. Returns the statistics and, on the TF act path, the policy's
        outputs (actions, values, state, neglogp) for ``rollout.last_obs`` under the new weights
        (None when acting in numpy: the mirror is refreshed instead)."""
        inputs = (rollout.obs, rollout.actions, rollout.rewards, rollout.dones, rollout.starts,
                  rollout.state, rollout.last_obs, rollout.last_state, rollout.last_starts,
                  *[np.float32(s) for s in scalars])
        if rollout.action_masks is None:
            stats, *outputs = self._train(*inputs)
        else:
            stats, *outputs = self._train_masked(*inputs, rollout.action_masks,
                                                 rollout.last_action_masks)
        values = dict(zip(self.stat_names, stats.numpy().tolist()))
        if self.calls.actor is not None:
            self.calls.sync(outputs)
            self._next_step = None
            return values, None
        step = tuple(t.numpy() for t in outputs)
        leaves = [np.array(x, copy=True) for x in nested.flatten(self.policy.ob_space,
                                                                rollout.last_obs)]
        self._next_step = (leaves, step)
        return values, step

    def act(self, obs: np.ndarray, state: np.ndarray, mask: np.ndarray,
            action_masks: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Sample actions for the rollout: (actions, next recurrent state); ``action_masks``
        (checked bool ``[B, logits]``): the valid actions."""
        return self.calls.act(obs, state, mask, action_masks)


def new_shuffle_seed() -> tf.Variable:
    """A stateless-shuffling seed, drawn from numpy's global generator."""
    return tf.Variable([int(np.random.randint(2**31 - 1)), 0], dtype=tf.int64, trainable=False)


def workers(comm: Any, variables: list[tf.Variable]) -> Any:
    """``comm`` when it spans several workers, after giving them all root's ``variables``
    (so they start equal); else None."""
    if comm is None or comm.Get_size() == 1:
        return None
    sync_variables(variables, comm)
    return comm


def actor_critic_losses(neglogp: tf.Tensor, entropy: tf.Tensor, values: tf.Tensor,
                        returns: tf.Tensor, ent_coef: float, vf_coef: float,
                        normalize_advantage: bool = False
                        ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
    """A2C's (and ACKTR's) loss ``L = mean(A * -log pi(a|s)) + vf_coef * mean((V - R)^2) -
    ent_coef * H`` with the advantage ``A = R - V`` held constant (with
    ``normalize_advantage``: ``(A - mean A) / (std A + 1e-8)`` over the batch); returns
    (total, policy, value, entropy)."""
    advantages = tf.stop_gradient(returns - values)
    if normalize_advantage:
        advantages = (advantages - tf.reduce_mean(advantages)) / (
            tf.math.reduce_std(advantages) + 1e-8)
    policy_loss = tf.reduce_mean(advantages * neglogp)
    value_loss = tf.reduce_mean(tf.square(values - returns))
    entropy = tf.reduce_mean(entropy)
    return policy_loss - entropy * ent_coef + value_loss * vf_coef, policy_loss, value_loss, \
        entropy


def restore_seed(arrays: dict[str, np.ndarray], key: str, variable: tf.Variable, what: str,
                 writer: str) -> None:
    """Set a stateless-sampling seed variable from a checkpoint's ``key`` array; a missing or
    misshapen one is a one-line error saying what the checkpoint lacks and who wrote it."""
    seed = arrays.get(key)
    if seed is None or seed.shape != (2,):
        raise RLBaseError(f"the checkpoint lacks {what} ({key}): it was written by {writer}")
    variable.assign(seed)


def actor_critic_parts(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                       network: Any, network_kwargs: dict[str, Any], config: Any,
                       total_timesteps: int, xla_min_updates: int
                       ) -> tuple[ActorCriticPolicy, bool]:
    """The policy of an actor-critic model (TF's threads sized for it first) and
    :func:`use_xla`."""
    configure_threads("convnet" if has_images(observation_space) else "small")
    policy = policy_from_kwargs(observation_space, action_space, network, network_kwargs)
    return policy, use_xla(observation_space, num_envs, config, total_timesteps,
                           xla_min_updates)


def use_xla(observation_space: gym.Space, num_envs: int, config: Any, total_timesteps: int,
            xla_min_updates: int) -> bool:
    """The config's ``jit_compile``, or (None) whether the run has at least
    ``xla_min_updates`` updates and XLA is not slower there (convnets on a CPU)."""
    jit = config.jit_compile
    if jit is None:
        jit = total_timesteps // (num_envs * config.nsteps) >= xla_min_updates and \
            xla_is_faster(observation_space)
    return bool(jit)


def _numbered(arrays: dict[str, np.ndarray], prefix: str) -> list[np.ndarray]:
    """The arrays named ``<prefix><number>``, in number order."""
    keys = sorted((k for k in arrays if k.startswith(prefix)), key=lambda k: int(k[len(prefix):]))
    return [arrays[k] for k in keys]
