"""A policy's inference calls (act, step, value), compiled on first use.

Shared by the actor-critic algorithms. Acting uses the numpy mirror for MLP policies and a
compiled call otherwise (XLA unless it is a convnet on a CPU); every call traces once for a
fixed signature (batch size free).
"""

from __future__ import annotations

from functools import cached_property
from typing import Sequence

import numpy as np
import tensorflow as tf

from rlbase.common import nested
from rlbase.common.networks.numpy_actor import NumpyActor, use_numpy_actor
from rlbase.common.networks.policies import ActorCriticPolicy, xla_is_faster
from rlbase.common.tf_util import CompiledFunction, compile_fn, observation_spec, spec_like


class CompiledPolicy:
    """Numpy in, numpy out: ``step``, ``act`` and ``value`` of an :class:`ActorCriticPolicy`.

    mask: 1 where an episode starts (resets the recurrent state); state None: the initial one.
    Call :meth:`sync` after the policy's weights change (the numpy mirror copies them).
    """

    def __init__(self, policy: ActorCriticPolicy, jit_compile: bool | None = None):
        self.policy = policy
        self.jit_compile = xla_is_faster(policy.ob_space) \
            if jit_compile is None else jit_compile
        self.actor = NumpyActor.create(policy, seed=int(np.random.randint(2**31 - 1))) \
            if use_numpy_actor() else None

    @property
    def signature(self) -> list:
        return [observation_spec(self.policy.ob_space, [None]),
                spec_like([None, self.policy.state_size], np.float32),
                spec_like([None], np.float32)]

    @cached_property
    def step_fn(self) -> CompiledFunction:
        policy = self.policy
        return compile_fn(lambda o, s, m: policy.step(o, s, m), self.signature,
                          self.jit_compile)

    @cached_property
    def deterministic_step_fn(self) -> CompiledFunction:
        policy = self.policy
        return compile_fn(lambda o, s, m: policy.step(o, s, m, True), self.signature,
                          self.jit_compile)

    @property
    def masked_signature(self) -> list:
        return [*self.signature, spec_like([None, self.policy.pd_head.mask_size], np.bool_)]

    @cached_property
    def masked_step_fn(self) -> CompiledFunction:
        """``step_fn`` with action masks (traced on first use only: unmasked runs never
        trace it)."""
        policy = self.policy
        return compile_fn(lambda o, s, m, am: policy.step(o, s, m, action_masks=am),
                          self.masked_signature, self.jit_compile)

    @cached_property
    def masked_deterministic_step_fn(self) -> CompiledFunction:
        policy = self.policy
        return compile_fn(lambda o, s, m, am: policy.step(o, s, m, True, action_masks=am),
                          self.masked_signature, self.jit_compile)

    @cached_property
    def value_fn(self) -> CompiledFunction:
        return compile_fn(self.policy.value, self.signature, self.jit_compile)

    def _inputs(self, obs: np.ndarray, state: np.ndarray | None, mask: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = nested.batch_size(self.policy.ob_space, obs)
        state = self.policy.initial_state(n) if state is None else state
        mask = np.zeros(n, np.float32) if mask is None else np.asarray(mask, np.float32)
        return obs, state, mask

    def step(self, obs: np.ndarray, state: np.ndarray | None = None,
             mask: np.ndarray | None = None, deterministic: bool = False,
             action_masks: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(actions, values, next state, neglogp of the actions) for a batch; action_masks
        ``[B, logits]`` (bool): the valid actions (None: all)."""
        inputs = self._inputs(obs, state, mask)
        if action_masks is None:
            fn = self.deterministic_step_fn if deterministic else self.step_fn
            return tuple(t.numpy() for t in fn(*inputs))
        fn = self.masked_deterministic_step_fn if deterministic else self.masked_step_fn
        return tuple(t.numpy() for t in fn(*inputs, action_masks))

    def act(self, obs: np.ndarray, state: np.ndarray, mask: np.ndarray,
            action_masks: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Sample actions for a rollout: (actions, next state). The fastest path available."""
        if self.actor is not None:
            return self.actor.act(obs, action_masks=action_masks), state
        if action_masks is None:
            actions, _, new_state, _ = self.step_fn(obs, state, mask)
        else:
            actions, _, new_state, _ = self.masked_step_fn(obs, state, mask, action_masks)
        return actions.numpy(), new_state.numpy()

    def value(self, obs: np.ndarray, state: np.ndarray | None = None,
              mask: np.ndarray | None = None) -> np.ndarray:
        return self.value_fn(*self._inputs(obs, state, mask)).numpy()

    def actor_weights(self) -> list:
        """In-graph reads of the weights the numpy mirror needs (empty without one): a training
        call returns them so that :meth:`sync` costs no extra call into TF."""
        if self.actor is None:
            return []
        return [tf.identity(v) for v in self.actor.variables]

    def sync(self, values: Sequence | None = None) -> None:
        """Refresh the numpy mirror after the weights changed; ``values`` as returned by a
        training call that included :meth:`actor_weights`, or None to read them."""
        if self.actor is not None:
            self.actor.sync(None if values is None else [np.asarray(v) for v in values])
