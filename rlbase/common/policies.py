"""Actor-critic policies: observation encoding + a registry network + distribution/value heads.

Rollouts are stored env-major: row ``env * nsteps + t``. A recurrent policy is trained on
``[nenvs * nsteps]`` rows with a ``[nenvs, state_size]`` start state, so every env's sequence
stays whole. Feed-forward policies carry a zero-width state so both kinds share one code path.
"""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf
from keras import layers

from rlbase.common.distributions import Distribution, DistributionHead
from rlbase.common.errors import RLBaseError
from rlbase.common.models import build_network, ortho


def check_observation_space(space: gym.Space) -> None:
    supported = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete,
                 gym.spaces.MultiBinary)
    if not isinstance(space, supported):
        raise RLBaseError(f"unsupported observation space {space}; supported: Box, Discrete, "
                          "MultiDiscrete, MultiBinary (flatten Dict/Tuple observations with "
                          "gymnasium.wrappers.FlattenObservation)")


def is_image_space(space: gym.Space) -> bool:
    return isinstance(space, gym.spaces.Box) and space.dtype == np.uint8 and \
        len(space.shape) == 3


def xla_is_faster(ob_space: gym.Space) -> bool:
    """Whether to compile a network's calls with XLA: yes, except convnets on a CPU.

    XLA fuses an MLP's small ops into one kernel, but on a CPU its convolutions are slower
    than TF's oneDNN kernels: A2C on Pong (8 envs, Nature CNN) ran 681 steps/s with XLA and
    899 without. On a GPU XLA stays on for everything.
    """
    return not is_image_space(ob_space) or bool(tf.config.list_physical_devices("GPU"))


def encode_observation(space: gym.Space, obs: tf.Tensor) -> tf.Tensor:
    """Observations as the float32 tensor networks take: one-hot for discrete spaces, uint8
    pixels scaled to [0, 1] here inside the compiled call (they travel as uint8 until then)."""
    if isinstance(space, gym.spaces.Discrete):
        return tf.one_hot(tf.cast(obs, tf.int32) - int(space.start), int(space.n))
    if isinstance(space, gym.spaces.MultiDiscrete):
        parts = tf.unstack(tf.cast(obs, tf.int32), axis=-1)
        starts = np.broadcast_to(getattr(space, "start", 0), space.nvec.shape).ravel()
        return tf.concat([tf.one_hot(p - int(s), int(n))
                          for p, n, s in zip(parts, space.nvec.ravel(), starts)], -1)
    if isinstance(space, gym.spaces.Box) and space.dtype == np.uint8:
        return tf.cast(obs, tf.float32) * (1.0 / 255.0)
    return tf.cast(obs, tf.float32)


class ActorCriticPolicy(keras.Model):
    """A policy head and a value head (and optionally a Q head) on a registry network.

    ob_space / ac_space: the env's single observation and action spaces.
    network: a registered network name or a builder callable.
    value_network: None or 'shared' (one torso for both heads) or 'copy' (a second torso of
        the same kind for the value head; feed-forward networks only).
    estimate_q: also output Q(s, a) for every action (Discrete actions; used by ACER).
    network_kwargs: passed to the network builder (num_layers, num_hidden, nlstm, ...).
    """

    def __init__(self, ob_space: gym.Space, ac_space: gym.Space,
                 network: str | Callable[..., keras.layers.Layer] = "mlp",
                 value_network: str | None = None, estimate_q: bool = False,
                 network_kwargs: dict[str, Any] | None = None):
        super().__init__()
        check_observation_space(ob_space)
        self.ob_space, self.ac_space = ob_space, ac_space
        self.network_name = network if isinstance(network, str) else network.__name__
        self.network_kwargs = dict(network_kwargs or {})
        self.torso = build_network(network, **self.network_kwargs)
        self.recurrent = bool(getattr(self.torso, "recurrent", False))
        if value_network not in (None, "shared", "copy"):
            raise RLBaseError(f"value_network must be 'shared' or 'copy', got {value_network!r}")
        if value_network == "copy" and self.recurrent:
            raise RLBaseError("value_network='copy' needs a feed-forward network; recurrent "
                              "networks share their torso")
        self.value_torso = build_network(network, **self.network_kwargs) \
            if value_network == "copy" else None
        self.pd_head = DistributionHead(ac_space)
        self.value_head = layers.Dense(1, kernel_initializer=ortho(1.0))
        self.q_head: layers.Dense | None = None
        if estimate_q:
            if not isinstance(ac_space, gym.spaces.Discrete):
                raise RLBaseError(f"a Q head needs a Discrete action space, got {ac_space}")
            self.q_head = layers.Dense(int(ac_space.n), kernel_initializer=ortho(1.0))
        self.state_size = int(getattr(self.torso, "state_size", 0))
        # Sampling seeds: a counter advanced on every draw, started from numpy's global RNG
        # (seeded by set_global_seeds), so seeded runs repeat exactly.
        self.sample_seed = tf.Variable([int(np.random.randint(2**31 - 1)), 0], dtype=tf.int64,
                                       trainable=False, name="sample_seed")
        # Create every weight now, eagerly, so compiled calls never create variables.
        dummy = np.stack([ob_space.sample()] * 2)
        self.forward(tf.constant(dummy), tf.constant(self.initial_state(2)),
                     tf.ones([2], tf.float32))

    def initial_state(self, batch: int) -> np.ndarray:
        return np.zeros((batch, self.state_size), np.float32)

    def _torso(self, torso: keras.layers.Layer, x: tf.Tensor, state: tf.Tensor,
               starts: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        if not self.recurrent:
            return torso(x), state
        nseq = tf.shape(state)[0]
        steps = tf.shape(x)[0] // nseq
        seq = tf.reshape(x, tf.concat([[nseq, steps], tf.shape(x)[1:]], axis=0))
        latent, state = torso(seq, state, tf.reshape(starts, [nseq, steps]))
        return tf.reshape(latent, [nseq * steps, latent.shape[-1]]), state

    def forward(self, obs: tf.Tensor, state: tf.Tensor, starts: tf.Tensor
                ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor | None]:
        """obs ``[B, ...]`` -> (distribution params, values ``[B]``, new state, Q or None)."""
        x = encode_observation(self.ob_space, obs)
        latent, new_state = self._torso(self.torso, x, state, starts)
        vlatent = latent if self.value_torso is None else self.value_torso(x)
        values = tf.squeeze(self.value_head(vlatent), axis=-1)
        q = self.q_head(vlatent) if self.q_head is not None else None
        return self.pd_head(latent), values, new_state, q

    def distribution(self, params: tf.Tensor) -> Distribution:
        return self.pd_head.distribution(params)

    def step(self, obs: tf.Tensor, state: tf.Tensor, starts: tf.Tensor,
             deterministic: bool = False) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        """Act: (actions, values, new state, neglogp of the actions)."""
        params, values, new_state, _ = self.forward(obs, state, starts)
        pd = self.distribution(params)
        actions = pd.mode() if deterministic else pd.sample(self.next_seed())
        return actions, values, new_state, pd.neglogp(actions)

    def next_seed(self) -> tf.Tensor:
        """A fresh ``[2]`` seed for one stateless random draw."""
        return self.sample_seed.assign_add(tf.constant([0, 1], tf.int64))

    def value(self, obs: tf.Tensor, state: tf.Tensor, starts: tf.Tensor) -> tf.Tensor:
        return self.forward(obs, state, starts)[1]


def build_policy(ob_space: gym.Space, ac_space: gym.Space,
                 network: str | Callable[..., keras.layers.Layer] = "mlp",
                 value_network: str | None = None, estimate_q: bool = False,
                 **network_kwargs: Any) -> ActorCriticPolicy:
    """Build an :class:`ActorCriticPolicy` for the given spaces (Baselines' build_policy)."""
    return ActorCriticPolicy(ob_space, ac_space, network, value_network, estimate_q,
                             network_kwargs)
