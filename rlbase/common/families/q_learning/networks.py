"""Q-networks for DQN and QR-DQN: a registry torso, optional dense hidden layers, and a plain
or dueling head giving one value per action (Q) or ``atoms`` values per action (quantiles)."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf
from keras import layers

from rlbase.common import nested
from rlbase.common.errors import RLBaseError
from rlbase.common.networks.policies import ObservationEncoder, check_network_for_space
from rlbase.common.networks.registry import (
    Composite,
    Dense,
    build_network,
    get_network_builder,
    is_recurrent,
)

# What each action space can be trained with, for the error Q-learning gives on the others.
OTHER_ALGORITHMS = {
    gym.spaces.Box: "a2c, ppo, ddpg",
    gym.spaces.MultiDiscrete: "a2c, ppo",
    gym.spaces.MultiBinary: "a2c, ppo",
}


def check_action_space(space: gym.Space, algorithm: str = "dqn") -> None:
    """Value-based learning picks the argmax over a finite action set: Discrete only."""
    if isinstance(space, gym.spaces.Discrete):
        return
    others = next((algs for kind, algs in OTHER_ALGORITHMS.items() if isinstance(space, kind)),
                  None)
    hint = f"; for {type(space).__name__} actions use {others}" if others else ""
    raise RLBaseError(f"{algorithm} needs a Discrete action space, got {space}{hint}")


def network_builder_kwargs(network: str | Callable[..., keras.layers.Layer],
                           network_kwargs: dict[str, Any], layer_norm: bool
                           ) -> tuple[dict[str, Any], bool]:
    """The network builder's own arguments, and whether the heads are layer-normalized.

    layer_norm: learn()'s setting for the heads; ``layer_norm`` among the network's arguments
        turns it on too (Baselines' deepq), and a builder that takes ``layer_norm`` gets it
        when the heads are normalized. Arguments the builder does not take among hiddens,
        dueling and layer_norm are set aside: rlbase 0.1 saved the heads' settings beside the
        network's.
    """
    kwargs = dict(network_kwargs)
    layer_norm = bool(layer_norm) or bool(kwargs.get("layer_norm", False))
    params = inspect.signature(get_network_builder(network)).parameters
    takes_any = any(p.kind == p.VAR_KEYWORD for p in params.values())
    for name in ("hiddens", "dueling", "layer_norm"):
        if name in kwargs and name not in params and not takes_any:
            kwargs.pop(name)
    if layer_norm and "layer_norm" in params:
        kwargs.setdefault("layer_norm", True)
    return kwargs, layer_norm


def fan_in_uniform_init(model: keras.layers.Layer) -> None:
    """Redraw every dense and convolution weight (kernels and biases) from
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)), PyTorch's default for these layers.

    Why: measured on CartPole-v1 at the rl-zoo settings (5e4 steps, seeds 0-7), Q-networks
    started this way evaluated at 475+ on 6 of 8 seeds, against 1 of 8 with the registry's
    orthogonal (gain sqrt 2) torso and Glorot heads, whose larger initial Q-values learn
    slower.
    """
    for layer in model._flatten_layers():
        if isinstance(layer, (layers.Dense, layers.Conv2D)):
            kernel = layer.kernel
            bound = 1.0 / float(np.sqrt(np.prod(kernel.shape[:-1])))
            init = keras.initializers.RandomUniform(-bound, bound)
            kernel.assign(init(kernel.shape))
            if layer.bias is not None:
                layer.bias.assign(init(layer.bias.shape))


class Stream(Composite, keras.layers.Layer):
    """Dense hidden layers (ReLU, optional layer norm) and a linear output of ``units``."""

    def __init__(self, hiddens: Sequence[int], units: int, layer_norm: bool, **kwargs: Any):
        super().__init__(**kwargs)
        self.hidden = [Dense(int(n)) for n in hiddens]
        self.norms = [layers.LayerNormalization() for _ in hiddens] if layer_norm else []
        self.out = Dense(units)

    def call(self, x: tf.Tensor) -> tf.Tensor:
        for i, dense in enumerate(self.hidden):
            x = dense(x)
            if self.norms:
                x = self.norms[i](x)
            x = tf.nn.relu(x)
        return self.out(x)


class QNetwork(Composite, keras.Model):
    """Q(s, .) (or ``atoms`` values) for every action of a Discrete space.

    observation_space / action_space: the env's single observation and (Discrete) action
        spaces; a Dict/Tuple observation is encoded entry by entry (images through their own
        convnet, see :class:`~rlbase.common.networks.policies.ObservationEncoder`) for an mlp torso.
    network: a registered feed-forward network name or a builder callable (the torso).
    hiddens: sizes of the dense ReLU layers each head puts on the torso's output.
    dueling: Q = V(s) + A(s, a) - mean_a A(s, a) from two heads (Wang et al., 2016).
    layer_norm: layer-normalize the heads' hidden layers (helps parameter noise).
    network_kwargs: passed to the network builder.
    atoms: values per action: 1 gives Q(s, .) as ``[B, num_actions]``; more give
        ``[B, num_actions, atoms]`` (QR-DQN's quantiles; no dueling heads then).
    algorithm: named in the errors.
    """

    def __init__(self, observation_space: gym.Space, action_space: gym.Space,
                 network: str | Callable[..., keras.layers.Layer] = "mlp",
                 hiddens: Sequence[int] = (256,), dueling: bool = True,
                 layer_norm: bool = False, network_kwargs: dict[str, Any] | None = None,
                 atoms: int = 1, algorithm: str = "dqn"):
        super().__init__()
        check_action_space(action_space, algorithm)
        assert atoms == 1 or not dueling, "dueling heads give one value per action"
        assert isinstance(action_space, gym.spaces.Discrete)  # for the type checker
        self.observation_space, self.action_space = observation_space, action_space
        self.num_actions = int(action_space.n)
        self.network_name = network if isinstance(network, str) else network.__name__
        self.network_kwargs = dict(network_kwargs or {})
        self.hiddens = [int(n) for n in hiddens]
        self.dueling, self.layer_norm = bool(dueling), bool(layer_norm)
        self.atoms = int(atoms)
        # No weights for a non-nested space, so files saved before Dict support still load.
        self.encoder = ObservationEncoder(observation_space)
        self.torso = build_network(network, **self.network_kwargs)
        if is_recurrent(self.torso):
            raise RLBaseError(f"{algorithm} needs a feed-forward network, got the recurrent "
                              f"'{self.network_name}'; use mlp, cnn, cnn_small or conv_only")
        check_network_for_space(self.network_name, self.torso, observation_space)
        self.flatten = layers.Flatten()
        self.advantage = Stream(self.hiddens, self.num_actions * self.atoms, layer_norm)
        self.value = Stream(self.hiddens, 1, layer_norm) if dueling else None
        # Create every weight now so compiled calls never create variables.
        sample = nested.stack(observation_space, [observation_space.sample()] * 2)
        self(tf.nest.map_structure(tf.constant, sample))
        fan_in_uniform_init(self)

    def call(self, obs: Any) -> tf.Tensor:
        latent = self.flatten(self.torso(self.encoder(obs)))
        scores = self.advantage(latent)
        if self.atoms > 1:
            return tf.reshape(scores, [-1, self.num_actions, self.atoms])
        if self.value is None:
            return scores
        return self.value(latent) + scores - tf.reduce_mean(scores, axis=1, keepdims=True)

    def q_values(self, obs: Any) -> tf.Tensor:
        """``[B, num_actions]`` Q-values: the output, or the mean of each action's atoms (the
        quantiles' mean is the expected return)."""
        out = self(obs)
        return out if self.atoms == 1 else tf.reduce_mean(out, axis=-1)

    def perturbable_variables(self) -> list[tf.Variable]:
        """The weights parameter noise perturbs: all but layer-norm scales and offsets (as in
        Plappert et al., whose perturbations leave normalization alone)."""
        skip = {id(v) for layer in self._flatten_layers()
                if isinstance(layer, layers.LayerNormalization) for v in layer.weights}
        return [v for v in self.trainable_variables if id(v) not in skip]
