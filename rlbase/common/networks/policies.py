"""Actor-critic policies: observation encoding + a registry network + distribution/value heads.

Rollouts are stored env-major: row ``env * nsteps + t``. A recurrent policy is trained on
``[num_envs * nsteps]`` rows with a ``[num_envs, state_size]`` start state, so every env's sequence
stays whole. Feed-forward policies carry a zero-width state so both kinds share one code path.
"""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf
from keras import layers

from rlbase.common import nested
from rlbase.common.errors import RLBaseError
from rlbase.common.nested import is_nested, leaf_spaces
from rlbase.common.networks.distributions import Distribution, DistributionHead
from rlbase.common.networks.registry import (
    NATURE_CONVS,
    Composite,
    ConvStack,
    Dense,
    LSTMCore,
    build_network,
    is_recurrent,
    ortho,
    recurrent_state_size,
)
from rlbase.common.precision import network_dtype_policy

LEAF_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete,
               gym.spaces.MultiBinary)


def check_observation_space(space: gym.Space) -> None:
    """Box, Discrete, MultiDiscrete, MultiBinary, or Dict/Tuple spaces (nested as deep as
    they like) of those."""
    for leaf in leaf_spaces(space):
        if not isinstance(leaf, LEAF_SPACES):
            raise RLBaseError(f"unsupported observation space {leaf} (in {space}); supported: "
                              "Box, Discrete, MultiDiscrete, MultiBinary and Dict/Tuple of "
                              "those")


def is_image_space(space: gym.Space) -> bool:
    return isinstance(space, gym.spaces.Box) and space.dtype == np.uint8 and \
        len(space.shape) == 3


def has_images(space: gym.Space) -> bool:
    """An image space, or a Dict/Tuple space with an image among its entries."""
    return any(is_image_space(leaf) for leaf in leaf_spaces(space))


def xla_is_faster(ob_space: gym.Space) -> bool:
    """Whether to compile a network's calls with XLA: yes, except convnets on a CPU.

    XLA fuses an MLP's small ops into one kernel, but on a CPU its convolutions are slower
    than TF's oneDNN kernels: A2C on Pong (8 envs, Nature CNN) ran 681 steps/s with XLA and
    899 without. On a GPU XLA stays on for everything.
    """
    return not has_images(ob_space) or bool(tf.config.list_physical_devices("GPU"))


def encode_observation(space: gym.Space, obs: tf.Tensor) -> tf.Tensor:
    """Observations as the float32 tensor networks take: one-hot for discrete spaces, uint8
    pixels scaled to [0, 1] here inside the compiled call (they travel as uint8 until then)."""
    if isinstance(space, gym.spaces.Discrete):
        return tf.one_hot(tf.cast(obs, tf.int32) - int(space.start), int(space.n))
    if isinstance(space, gym.spaces.MultiDiscrete):
        # Flatten a multi-dimensional nvec first: each column pairs with its own size.
        flat = tf.reshape(tf.cast(obs, tf.int32), [-1, int(space.nvec.size)])
        parts = tf.unstack(flat, axis=-1)
        starts = np.broadcast_to(space.start, space.nvec.shape).ravel()
        return tf.concat([tf.one_hot(p - int(s), int(n))
                          for p, n, s in zip(parts, space.nvec.ravel(), starts)], -1)
    if isinstance(space, gym.spaces.Box) and space.dtype == np.uint8:
        return tf.cast(obs, tf.float32) * (1.0 / 255.0)
    return tf.cast(obs, tf.float32)


class ObservationEncoder(Composite, keras.layers.Layer):
    """Observations -> what networks take.

    Box, Discrete, MultiDiscrete and MultiBinary spaces are encoded without weights (see
    :func:`encode_observation`) and the registry network does the rest. Dict and Tuple spaces
    (SB3's MultiInputPolicy) get one encoder per leaf, concatenated: images (uint8, HxWxC)
    through the Nature convnet to ``image_features`` features, vectors flattened, discrete
    leaves one-hot; the network (an mlp or an lstm) then runs on the concatenation.
    """

    def __init__(self, space: gym.Space, image_features: int = 256, **kwargs: Any):
        super().__init__(**kwargs)
        check_observation_space(space)
        self.space = space
        self.nested = is_nested(space)
        self.leaves = leaf_spaces(space)
        self.image_nets: list[keras.layers.Layer] = []
        self._image_index: dict[int, int] = {}
        if self.nested:
            for i, leaf in enumerate(self.leaves):
                if is_image_space(leaf):
                    # The Nature strides need 36x36 or more; smaller images keep their size.
                    pad = "VALID" if min((leaf.shape or (0,))[:2]) >= 36 else "SAME"
                    self._image_index[i] = len(self.image_nets)
                    with network_dtype_policy():  # (bfloat16 under mixed precision)
                        net = ConvStack(NATURE_CONVS, [image_features], pad=pad)
                    self.image_nets.append(net)

    def call(self, obs: Any) -> tf.Tensor:
        if not self.nested:
            return encode_observation(self.space, obs)
        parts = []
        for i, (leaf, sub) in enumerate(zip(tf.nest.flatten(obs), self.leaves)):
            x = encode_observation(sub, leaf)
            if i in self._image_index:
                x = self.image_nets[self._image_index[i]](x)
            else:
                x = tf.reshape(x, [tf.shape(x)[0], -1])
            parts.append(x)
        return tf.concat(parts, axis=-1)


class ActorCriticPolicy(Composite, keras.Model):
    """A policy head and a value head (and optionally a Q head) on a registry network.

    ob_space / ac_space: the env's single observation and action spaces.
    network: a registered network name or a builder callable.
    value_network: None or 'shared' (one torso for both heads) or 'copy' (a second torso of
        the same kind for the value head; feed-forward networks only).
    estimate_q: also output Q(s, a) for every action (Discrete actions; used by ACER).
    network_kwargs: passed to the network builder (num_layers, num_hidden, nlstm, ...).
    log_std_init: the initial log standard deviation of a Gaussian (Box action) policy.
    """

    def __init__(self, ob_space: gym.Space, ac_space: gym.Space,
                 network: str | Callable[..., keras.layers.Layer] = "mlp",
                 value_network: str | None = None, estimate_q: bool = False,
                 network_kwargs: dict[str, Any] | None = None, log_std_init: float = 0.0):
        super().__init__()
        self.encoder = ObservationEncoder(ob_space)
        self.ob_space, self.ac_space = ob_space, ac_space
        self.network_name = network if isinstance(network, str) else network.__name__
        self.network_kwargs = dict(network_kwargs or {})
        self.torso = build_network(network, **self.network_kwargs)
        self.recurrent = is_recurrent(self.torso)
        check_network_for_space(self.network_name, self.torso, ob_space)
        if value_network not in (None, "shared", "copy"):
            raise RLBaseError(f"value_network must be 'shared' or 'copy', got {value_network!r}")
        if value_network == "copy" and self.recurrent:
            raise RLBaseError("value_network='copy' needs a feed-forward network; recurrent "
                              "networks share their torso")
        self.value_torso = build_network(network, **self.network_kwargs) \
            if value_network == "copy" else None
        self.pd_head = DistributionHead(ac_space, log_std_init=log_std_init)
        self.value_head = Dense(1, kernel_initializer=ortho(1.0))
        self.q_head: layers.Dense | None = None
        if estimate_q:
            if not isinstance(ac_space, gym.spaces.Discrete):
                raise RLBaseError(f"a Q head needs a Discrete action space, got {ac_space}")
            self.q_head = Dense(int(ac_space.n), kernel_initializer=ortho(1.0))
        self.state_size = recurrent_state_size(self.torso)
        # Sampling seeds: a counter advanced on every draw, started from numpy's global RNG
        # (seeded by set_global_seeds), so seeded runs repeat exactly.
        self.sample_seed = tf.Variable([int(np.random.randint(2**31 - 1)), 0], dtype=tf.int64,
                                       trainable=False, name="sample_seed")
        # Create every weight now, eagerly, so compiled calls never create variables.
        dummy = nested.stack(ob_space, [ob_space.sample()] * 2)
        self.forward(tf.nest.map_structure(tf.constant, dummy),
                     tf.constant(self.initial_state(2)), tf.ones([2], tf.float32))

    def initial_state(self, batch: int) -> np.ndarray:
        return np.zeros((batch, self.state_size), np.float32)

    def _torso(self, torso: keras.layers.Layer, x: tf.Tensor, state: tf.Tensor,
               starts: tf.Tensor, one_step: bool = False) -> tuple[tf.Tensor, tf.Tensor]:
        if not self.recurrent:
            return torso(x), state
        if one_step:  # one row per sequence, a static length the LSTM runs without a loop
            latent, state = torso(tf.expand_dims(x, 1), state, tf.expand_dims(starts, 1))
            return latent[:, 0], state
        nseq = tf.shape(state)[0]
        steps = tf.shape(x)[0] // nseq
        seq = tf.reshape(x, tf.concat([[nseq, steps], tf.shape(x)[1:]], axis=0))
        latent, state = torso(seq, state, tf.reshape(starts, [nseq, steps]))
        return tf.reshape(latent, [nseq * steps, latent.shape[-1]]), state

    def forward(self, obs: tf.Tensor, state: tf.Tensor, starts: tf.Tensor,
                one_step: bool = False
                ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor | None]:
        """obs ``[B, ...]`` -> (distribution params, values ``[B]``, new state, Q or None).
        one_step: each row is one step of its own sequence (state ``[B, ...]``), as when
        acting: the same arithmetic without the loop over steps (for exported graphs)."""
        x = self.encoder(obs)
        latent, new_state = self._torso(self.torso, x, state, starts, one_step)
        vlatent = latent if self.value_torso is None else self.value_torso(x)
        values = tf.squeeze(self.value_head(vlatent), axis=-1)
        q = self.q_head(vlatent) if self.q_head is not None else None
        return self.pd_head(latent), values, new_state, q

    def distribution(self, params: tf.Tensor, action_masks: tf.Tensor | None = None
                     ) -> Distribution:
        """The action distribution (invalid actions masked out when ``action_masks``)."""
        return self.pd_head.distribution(params, action_masks)

    def step(self, obs: tf.Tensor, state: tf.Tensor, starts: tf.Tensor,
             deterministic: bool = False, one_step: bool = False,
             action_masks: tf.Tensor | None = None
             ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        """Act: (actions, values, new state, neglogp of the actions); ``action_masks``
        ``[B, logits]``: 1 where an action is valid (None: all are)."""
        params, values, new_state, _ = self.forward(obs, state, starts, one_step)
        pd = self.distribution(params, action_masks)
        actions = pd.mode() if deterministic else pd.sample(self.next_seed())
        return actions, values, new_state, pd.neglogp(actions)

    def next_seed(self) -> tf.Tensor:
        """A fresh ``[2]`` seed for one stateless random draw."""
        return self.sample_seed.assign_add(tf.constant([0, 1], tf.int64))

    def value(self, obs: tf.Tensor, state: tf.Tensor, starts: tf.Tensor) -> tf.Tensor:
        return self.forward(obs, state, starts)[1]


def check_network_for_space(name: str, torso: keras.layers.Layer, space: gym.Space) -> None:
    """Dict/Tuple observations are encoded leaf by leaf (images through their own convnet):
    the network on top must take a feature vector (an mlp or an lstm), not an image."""
    if is_nested(space) and isinstance(torso, ConvStack) or \
            is_nested(space) and isinstance(torso, LSTMCore) and torso.torso is not None:
        raise RLBaseError(f"network '{name}' expects images, but {space} is a Dict/Tuple "
                          "space whose image entries get their own convnet: use mlp, lstm or "
                          "lnlstm (SB3's MultiInputPolicy)")


#: keyword arguments of the policy itself, given among a network's kwargs (the rest go to the
#: network builder)
POLICY_KWARGS = ("value_network", "log_std_init")


def build_policy(ob_space: gym.Space, ac_space: gym.Space,
                 network: str | Callable[..., keras.layers.Layer] = "mlp",
                 value_network: str | None = None, estimate_q: bool = False,
                 log_std_init: float = 0.0, **network_kwargs: Any) -> ActorCriticPolicy:
    """Build an :class:`ActorCriticPolicy` for the given spaces (Baselines' build_policy)."""
    return ActorCriticPolicy(ob_space, ac_space, network, value_network, estimate_q,
                             network_kwargs, log_std_init)


def policy_from_kwargs(ob_space: gym.Space, ac_space: gym.Space, network: Any,
                       network_kwargs: dict[str, Any]) -> ActorCriticPolicy:
    """The policy for a model's ``network_kwargs`` (which may hold POLICY_KWARGS)."""
    kwargs = dict(network_kwargs)
    policy_args = {k: kwargs.pop(k) for k in POLICY_KWARGS if k in kwargs}
    return build_policy(ob_space, ac_space, network, **policy_args, **kwargs)
