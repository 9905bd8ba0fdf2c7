"""The Q-values of an MLP :class:`QNetwork`, computed in numpy.

DQN and QR-DQN act once per vectorized env step; a call into TensorFlow costs ~100-400 us here
while a 256x256 MLP forward in numpy costs ~20 us, so MLP Q-networks act without leaving Python
(the idea of common/numpy_actor.py). The learner refreshes the mirror after each update from
weights its training call already returns. ``tests/test_dqn.py`` and ``tests/test_qrdqn.py``
check it against TF.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from rlbase.common.families.q_learning.networks import QNetwork, Stream
from rlbase.common.nested import is_nested
from rlbase.common.networks.numpy_actor import ACTIVATIONS, observation_encoder
from rlbase.common.networks.registry import MLP


class NumpyQ:
    """numpy twin of ``net``'s forward pass. Build with :meth:`create`."""

    def __init__(self, net: QNetwork):
        torso: MLP = net.torso
        self.encode = observation_encoder(net.observation_space)
        self.activation = ACTIVATIONS[str(torso.activation_name)]  # create() checked it
        self.dueling = net.value is not None
        self.shape = (net.num_actions, net.atoms)
        streams: list[Stream] = [s for s in (net.advantage, net.value) if s is not None]
        self._parts: list[tuple[int, list[float]]] = []  # (layers, norms' eps) per block
        self._variables: list[tf.Variable] = []
        blocks: list[MLP | Stream] = [torso, *streams]
        for block in blocks:
            self._variables += [v for d in block.hidden for v in (d.kernel, d.bias)]
            self._variables += [v for n in block.norms for v in (n.gamma, n.beta)]
            self._parts.append((len(block.hidden), [n.epsilon for n in block.norms]))
        self._variables += [v for s in streams for v in (s.out.kernel, s.out.bias)]
        self.sync()

    @staticmethod
    def create(net: QNetwork) -> NumpyQ | None:
        """A mirror of ``net``, or None when its torso is not a plain MLP or its observations
        are Dict/Tuple ones (those act through TF)."""
        if is_nested(net.observation_space):
            return None
        torso = net.torso
        if type(torso) is not MLP or torso.activation_name not in ACTIVATIONS:
            return None
        return NumpyQ(net)

    @property
    def variables(self) -> list[tf.Variable]:
        """The TF variables mirrored, in the order :meth:`sync` takes their values."""
        return list(self._variables)

    def sync(self, values: Sequence[np.ndarray] | None = None) -> None:
        """Copy the weights (``values``: the variables' values already read, in order)."""
        if values is None:
            values = [v.numpy() for v in self._variables]
        arrays = [np.asarray(v, np.float32) for v in values]
        pairs = zip(arrays[::2], arrays[1::2])  # (kernel, bias) or (gamma, beta), in order
        self.blocks = [([next(pairs) for _ in range(n_dense)], [(*next(pairs), e) for e in eps])
                       for n_dense, eps in self._parts]
        self.heads = list(pairs)

    @staticmethod
    def _block(h: np.ndarray, dense: list, norms: list, activation) -> np.ndarray:
        for i, (kernel, bias) in enumerate(dense):
            h = h @ kernel + bias
            if norms:
                gamma, beta, eps = norms[i]
                mean = h.mean(axis=-1, keepdims=True)
                var = h.var(axis=-1, keepdims=True)
                h = (h - mean) / np.sqrt(var + eps) * gamma + beta
            h = activation(h)
        return h

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """``[B, num_actions]`` Q-values for a batch of observations."""
        relu = ACTIVATIONS["relu"]
        latent = self._block(self.encode(obs), *self.blocks[0], self.activation)
        outs = [self._block(latent, *block, relu) @ k + b
                for block, (k, b) in zip(self.blocks[1:], self.heads)]
        if self.shape[1] > 1:  # each action's quantiles: Q is their mean
            return outs[0].reshape(-1, *self.shape).mean(axis=-1)
        if not self.dueling:
            return outs[0]
        scores, value = outs
        return value + scores - scores.mean(axis=1, keepdims=True)
