"""The act path of small feed-forward policies, mirrored in numpy.

Calling into TensorFlow costs 100-500 us here however small the network (far more than a
64x64 MLP's arithmetic), and acting happens once per vectorized env step. For MLP policies
the same forward pass in numpy costs ~20 us, so acting never leaves Python; training stays in
TensorFlow, and :meth:`NumpyActor.sync` copies the weights back after each update.
``tests/test_numpy_actor.py`` checks it against the TF policy on every supported space.

Supported: an ``mlp`` torso (any depth/width, layer norm, activations below) on Box,
Discrete, MultiDiscrete or MultiBinary observations, and any action space the policy has.
Anything else (convnets, LSTMs, custom networks) keeps the compiled TF act path.
"""

from __future__ import annotations

import os
from typing import Callable

import gymnasium as gym
import numpy as np

from rlbase.common.nested import is_nested
from rlbase.common.networks.distributions import MASKED_LOGIT
from rlbase.common.networks.policies import ActorCriticPolicy
from rlbase.common.networks.registry import MLP

ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "tanh": np.tanh,
    "relu": lambda x: np.maximum(x, 0.0),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0.0))),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "linear": lambda x: x,
}


def use_numpy_actor() -> bool:
    """False when ``RLBASE_NUMPY_ACT=0``: act through TensorFlow even for MLPs (for checks)."""
    return os.environ.get("RLBASE_NUMPY_ACT", "1") != "0"


def observation_encoder(space: gym.Space) -> Callable[[np.ndarray], np.ndarray]:
    """numpy twin of policies.encode_observation (flattened, float32)."""
    if isinstance(space, gym.spaces.Discrete):
        eye = np.eye(int(space.n), dtype=np.float32)
        return lambda obs: eye[np.asarray(obs, np.int64) - int(space.start)]
    if isinstance(space, gym.spaces.MultiDiscrete):
        eyes = [np.eye(int(n), dtype=np.float32) for n in space.nvec.ravel()]
        starts = np.asarray(space.start).ravel()

        def multi(obs: np.ndarray) -> np.ndarray:
            obs = np.asarray(obs, np.int64).reshape(len(obs), -1) - starts
            return np.concatenate([eye[obs[:, i]] for i, eye in enumerate(eyes)], axis=1)
        return multi
    if isinstance(space, gym.spaces.Box) and space.dtype == np.uint8:
        return lambda obs: np.asarray(obs, np.float32).reshape(len(obs), -1) * (1.0 / 255.0)
    return lambda obs: np.asarray(obs, np.float32).reshape(len(obs), -1)


class NumpyActor:
    """Samples actions like ``policy.step`` does, in numpy. Build with :meth:`create`."""

    def __init__(self, policy: ActorCriticPolicy, seed: int):
        self.policy = policy
        torso: MLP = policy.torso
        self.encode = observation_encoder(policy.ob_space)
        self.activation = ACTIVATIONS[str(torso.activation_name)]
        self.head = policy.pd_head
        self.rng = np.random.default_rng(seed)
        self._variables = [v for dense in torso.hidden for v in (dense.kernel, dense.bias)]
        for norm in torso.norms:
            self._variables += [norm.gamma, norm.beta]
        self._variables += [self.head.dense.kernel, self.head.dense.bias]
        if self.head.kind == "gaussian":
            self._variables.append(self.head.logstd)
        self._eps = [norm.epsilon for norm in torso.norms]
        self._nlayers = len(torso.hidden)
        self.sync()

    @staticmethod
    def create(policy: ActorCriticPolicy, seed: int) -> NumpyActor | None:
        """A numpy actor for ``policy``, or None when its network is not a plain MLP."""
        if is_nested(policy.ob_space):  # Dict/Tuple observations act through TF
            return None
        torso = policy.torso
        if policy.recurrent or type(torso) is not MLP or \
                torso.activation_name not in ACTIVATIONS:
            return None
        return NumpyActor(policy, seed)

    @property
    def variables(self) -> list:
        """The TF variables the mirror copies, in the order :meth:`sync` takes them."""
        return list(self._variables)

    def sync(self, values: list[np.ndarray] | None = None) -> None:
        """Copy the current weights from the TF policy (after every update). ``values``: the
        variables already read (a training call returns them, saving one read per variable,
        ~100 us each)."""
        if values is None:
            values = [v.numpy() for v in self._variables]
        values = [np.asarray(v, np.float32) for v in values]
        end = 2 * self._nlayers
        self.dense = list(zip(values[0:end:2], values[1:end:2]))
        start, end = end, end + 2 * len(self._eps)
        self.norms = list(zip(values[start:end:2], values[start + 1:end:2]))
        self.head_kernel, self.head_bias, *logstd = values[end:]
        self.logstd = logstd[0] if logstd else None

    def params(self, obs: np.ndarray) -> np.ndarray:
        """The distribution parameters (logits, or the Gaussian mean) for a batch."""
        h = self.encode(obs)
        for i, (kernel, bias) in enumerate(self.dense):
            h = h @ kernel + bias
            if self.norms:
                gamma, beta = self.norms[i]
                mean = h.mean(axis=-1, keepdims=True)
                var = h.var(axis=-1, keepdims=True)
                h = (h - mean) / np.sqrt(var + self._eps[i]) * gamma + beta
            h = self.activation(h)
        return h @ self.head_kernel + self.head_bias

    def act(self, obs: np.ndarray, deterministic: bool = False,
            action_masks: np.ndarray | None = None) -> np.ndarray:
        """One action per observation, with the dtype of the action space; ``action_masks``
        ``[B, logits]`` (Discrete/MultiDiscrete/MultiBinary): invalid actions' logits set to
        MASKED_LOGIT, as the TF policy does."""
        params = self.params(obs)
        space, kind = self.head.action_space, self.head.kind
        if action_masks is not None and kind == "bernoulli":  # as masked_binary_logits
            zero, one = action_masks[:, 0::2], action_masks[:, 1::2]
            params = np.where(one & ~zero, np.float32(-MASKED_LOGIT),
                              np.where(zero & ~one, np.float32(MASKED_LOGIT), params))
        elif action_masks is not None:
            params = np.where(action_masks, params, np.float32(MASKED_LOGIT))
        if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)) and not deterministic:
            params = params + self.rng.gumbel(size=params.shape)
        if isinstance(space, gym.spaces.Discrete):
            actions = np.argmax(params, axis=-1) + int(space.start)
        elif isinstance(space, gym.spaces.MultiDiscrete):
            bounds = np.cumsum(space.nvec)[:-1]
            actions = np.stack([np.argmax(p, axis=-1) for p in np.split(params, bounds, -1)],
                               axis=-1)
        elif kind == "bernoulli":
            threshold = 0.5 if deterministic else self.rng.random(params.shape)
            with np.errstate(over="ignore"):  # a masked logit's exp is inf: P(1) = 0
                actions = (1.0 / (1.0 + np.exp(-params))) > threshold
        else:
            assert self.logstd is not None
            actions = params if deterministic else \
                params + np.exp(self.logstd) * self.rng.standard_normal(params.shape)
        return actions.astype(self.head.action_dtype, copy=False)
