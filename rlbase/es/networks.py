"""ES policies: defined by the network registry, evaluated in numpy on flat parameter vectors.

ES scores one parameter vector per episode, so a TensorFlow call per env step (~120 us here)
would cost more than the env itself. The Keras network is built once from the registry to fix
the architecture and its initial weights; episodes then run a numpy forward pass on slices
of a flat vector, many perturbed vectors at once (``params`` of shape [P, dim]).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from rlbase.common import nested
from rlbase.common.errors import RLBaseError
from rlbase.common.networks.numpy_actor import ACTIVATIONS, observation_encoder
from rlbase.common.networks.policies import (
    check_observation_space,
    encode_observation,
    is_image_space,
)
from rlbase.common.networks.policy_graph import scale_to_bounds
from rlbase.common.networks.registry import MLP, Composite, Dense, build_network, ortho

OBS_CLIP = 5.0  # normalized observations are clipped to +-5 (Salimans et al.)
# The reference (evolution-strategies-starter's RunningStat) floors the variance at 1e-2, so
# std >= 0.1: a near-constant observation dimension is amplified at most 10x, not 100x.
OBS_VAR_FLOOR = 1e-2
# numpy_actor.ACTIVATIONS in TF (the exported twin of the numpy forward pass)
GRAPH_ACTIVATIONS: dict[str, Callable[[tf.Tensor], tf.Tensor]] = {
    "tanh": tf.tanh, "relu": tf.nn.relu, "elu": tf.nn.elu, "sigmoid": tf.sigmoid,
    "linear": tf.identity}


def flat_encoder(space: gym.Space) -> Callable[[Any], np.ndarray]:
    """A batch of observations -> ``[B, ob_dim]`` float32, as the other algorithms encode
    them (one-hot for discrete spaces, flattened floats for Box). A Dict/Tuple space is
    encoded entry by entry and concatenated (what gymnasium's ``flatten`` makes of it); image
    entries are refused: ES's numpy policy is an mlp."""
    if not nested.is_nested(space):
        return observation_encoder(space)
    check_observation_space(space)
    images = [name for name, leaf in zip(nested.leaf_names(space), nested.leaf_spaces(space))
              if is_image_space(leaf)]
    if images:
        raise RLBaseError(f"es flattens Dict/Tuple observations for its mlp policy and takes "
                          f"no image entries, got {', '.join(images)} in {space}")
    encoders = [observation_encoder(leaf) for leaf in nested.leaf_spaces(space)]

    def encode(obs: Any) -> np.ndarray:
        leaves = nested.flatten(space, obs)
        return np.concatenate([enc(leaf) for enc, leaf in zip(encoders, leaves)], axis=1)
    return encode


class PolicyNet(Composite, keras.Model):
    """The registry's torso and a linear head: logits (Discrete) or the action mean (Box)."""

    def __init__(self, torso: keras.layers.Layer, num_outputs: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.torso = torso
        # A small head: the initial policy is near-uniform / near-zero, and perturbations of
        # the hidden layers are not swamped by a large output layer.
        self.head = Dense(num_outputs, kernel_initializer=ortho(0.01))

    def call(self, x: tf.Tensor) -> tf.Tensor:
        return self.head(self.torso(x))


class ESPolicy:
    """The flat-vector view of a :class:`PolicyNet` and its numpy forward pass: observations
    encoded by :func:`flat_encoder`, a Discrete or 1-D Box action space, and an ``mlp`` network
    (``num_layers=0`` gives a linear policy)."""

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, network: Any,
                 network_kwargs: dict[str, Any]):
        if not isinstance(action_space, gym.spaces.Discrete) and not (
                isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1):
            raise RLBaseError(f"es supports Discrete and 1-D Box action spaces, got "
                              f"{action_space}")
        self.observation_space, self.action_space = observation_space, action_space
        torso = build_network(network, **network_kwargs)
        if type(torso) is not MLP or torso.activation_name not in ACTIVATIONS:
            raise RLBaseError(f"es evaluates policies in numpy and supports mlp networks (any "
                              f"size; num_layers=0 is a linear policy) with activation in "
                              f"{sorted(ACTIVATIONS)}, got network {network!r}")
        self.encode = flat_encoder(observation_space)
        sample = nested.stack(observation_space, [observation_space.sample()])
        self.ob_dim = int(self.encode(sample).shape[1])
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        self.action_start = 0
        # Box bounds, float64 (the squashing's arithmetic); unbounded: no squashing.
        self.low = self.high = np.zeros(0)
        self.bounded = False
        if isinstance(action_space, gym.spaces.Discrete):
            num_outputs, self.action_start = int(action_space.n), int(action_space.start)
        else:
            assert isinstance(action_space, gym.spaces.Box)  # checked above
            num_outputs = int(action_space.shape[0])
            self.low = action_space.low.astype(np.float64)
            self.high = action_space.high.astype(np.float64)
            self.bounded = bool(np.all(np.isfinite(self.low)) and np.all(np.isfinite(self.high)))
        self.net = PolicyNet(torso, num_outputs)
        self.net(tf.zeros([1, self.ob_dim], tf.float32))
        self.activation_name = str(torso.activation_name)
        self.activation = ACTIVATIONS[torso.activation_name]
        self.layer_norm_eps = [norm.epsilon for norm in torso.norms]
        self.variables = [v for dense in torso.hidden for v in (dense.kernel, dense.bias)]
        self.variables += [v for norm in torso.norms for v in (norm.gamma, norm.beta)]
        self.variables += [self.net.head.kernel, self.net.head.bias]
        self.shapes = [tuple(v.shape) for v in self.variables]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.dim = int(sum(self.sizes))
        self.num_layers = len(torso.hidden)
        self.obs_mean = np.zeros(self.ob_dim, np.float32)
        self.obs_std = np.ones(self.ob_dim, np.float32)

    # -- the flat vector ------------------------------------------------------------------
    def get_flat(self) -> np.ndarray:
        return np.concatenate([np.asarray(v.numpy(), np.float32).ravel()
                               for v in self.variables])

    def set_flat(self, theta: np.ndarray) -> None:
        """Write ``theta`` into the Keras variables (for saving and for checks)."""
        for v, part in zip(self.variables, self.unflatten(theta[None])):
            v.assign(part[0])

    def unflatten(self, params: np.ndarray) -> list[np.ndarray]:
        """Views of ``params`` [P, dim] as the layers' arrays, each [P, *shape] (no copies:
        a column block of a row-major array reshapes to a strided view)."""
        columns = np.split(params, np.cumsum(self.sizes)[:-1], axis=1)
        return [part.reshape(len(params), *shape) for part, shape in zip(columns, self.shapes)]

    # -- acting ---------------------------------------------------------------------------
    def set_obs_stats(self, mean: np.ndarray, var: np.ndarray) -> None:
        """Normalize by these statistics (the variance floored at OBS_VAR_FLOOR)."""
        self.obs_mean = np.asarray(mean, np.float32)
        floored = np.maximum(np.asarray(var, np.float64), OBS_VAR_FLOOR)
        self.obs_std = np.sqrt(floored).astype(np.float32)

    def normalize(self, x: np.ndarray) -> np.ndarray:
        """Encoded observations [P, ob_dim] -> normalized and clipped."""
        return np.clip((x - self.obs_mean) / self.obs_std, -OBS_CLIP, OBS_CLIP)

    def outputs(self, params: np.ndarray | list[np.ndarray], x: np.ndarray) -> np.ndarray:
        """Network outputs [P, num_outputs]: row p uses parameters ``params[p]`` on the
        normalized observation ``x[p]``; a single parameter row is shared by every x.
        ``params`` may also be ``unflatten(params)``, made once for many steps."""
        parts = self.unflatten(params) if isinstance(params, np.ndarray) else params
        n = self.num_layers
        norms = parts[2 * n:2 * n + 2 * len(self.layer_norm_eps)]
        shared = len(parts[-1]) == 1
        h = x.astype(np.float32, copy=False)
        for i in range(n):
            h = self._dense(h, parts[2 * i], parts[2 * i + 1], shared)
            if norms:
                gamma, beta = norms[2 * i], norms[2 * i + 1]
                mean = h.mean(axis=-1, keepdims=True)
                var = h.var(axis=-1, keepdims=True)
                h = (h - mean) / np.sqrt(var + self.layer_norm_eps[i])
                h = h * (gamma[0] if shared else gamma) + (beta[0] if shared else beta)
            h = self.activation(h)
        return self._dense(h, parts[-2], parts[-1], shared)

    @staticmethod
    def _dense(h: np.ndarray, kernel: np.ndarray, bias: np.ndarray, shared: bool
               ) -> np.ndarray:
        if shared:
            return h @ kernel[0] + bias[0]
        return np.matmul(h[:, None, :], kernel)[:, 0, :] + bias

    def actions(self, out: np.ndarray) -> np.ndarray:
        """Deterministic actions from outputs: argmax of the logits (Discrete); the mean,
        squashed into the bounds with tanh when the Box is bounded (Box)."""
        if self.discrete:
            return np.argmax(out, axis=-1) + self.action_start
        if self.bounded:
            squashed = (np.tanh(out) + 1.0) * 0.5
            return (self.low + squashed * (self.high - self.low)).astype(self.action_space.dtype)
        return out.astype(self.action_space.dtype)

    def act(self, params: np.ndarray, raw_obs: Any) -> np.ndarray:
        """Actions for a batch of raw observations (deterministic; nested for Dict/Tuple
        spaces)."""
        x = self.normalize(self.encode(raw_obs))
        return self.actions(self.outputs(params, x))

    def graph_act(self, theta: np.ndarray) -> Callable[..., tuple[tf.Tensor, tf.Tensor]]:
        """The TF twin of :meth:`act` with ``theta`` and the statistics as constants (what
        ``export`` writes): (observations, state, mask) -> (actions, state)."""
        parts = [tf.constant(np.asarray(p[0], np.float32)) for p in
                 self.unflatten(np.asarray(theta, np.float32)[None])]
        n, eps = self.num_layers, list(self.layer_norm_eps)
        norms = parts[2 * n:2 * n + 2 * len(eps)]
        activation = GRAPH_ACTIVATIONS[self.activation_name]
        mean, std = tf.constant(self.obs_mean), tf.constant(self.obs_std)
        leaves = nested.leaf_spaces(self.observation_space)
        space, start = self.action_space, self.action_start

        def act(obs: Any, state: tf.Tensor, mask: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            flat = [tf.reshape(encode_observation(leaf, x), [tf.shape(x)[0], -1])
                    for leaf, x in zip(leaves, tf.nest.flatten(obs))]
            h = tf.clip_by_value((tf.concat(flat, axis=1) - mean) / std, -OBS_CLIP, OBS_CLIP)
            for i in range(n):
                h = tf.matmul(h, parts[2 * i]) + parts[2 * i + 1]
                if norms:
                    m, v = tf.nn.moments(h, axes=[-1], keepdims=True)
                    h = (h - m) / tf.sqrt(v + eps[i]) * norms[2 * i] + norms[2 * i + 1]
                h = activation(h)
            out = tf.matmul(h, parts[-2]) + parts[-1]
            if self.discrete:
                return tf.argmax(out, axis=-1) + start, state
            if self.bounded:
                assert isinstance(space, gym.spaces.Box)
                return scale_to_bounds(tf.tanh(out), space), state
            return tf.cast(out, tf.as_dtype(space.dtype)), state
        return act
