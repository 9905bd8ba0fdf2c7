"""TQC's networks: SAC's squashed-Gaussian actor (rlbase.common.families.squashed_gaussian) and
the quantile critics, ``N`` networks that each map (s, a) to ``M`` atoms of the return's
distribution (sb3-contrib's TQC critic: the action joined to the observation's features, a
torso, a linear output of n_quantiles units initialized like PyTorch's ``nn.Linear``)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import keras
import tensorflow as tf
from keras import layers

from rlbase.common.families.continuous import ObservationFeatures, dummy_observations
from rlbase.common.families.squashed_gaussian import Actor, reinit_torch_linear
from rlbase.common.networks.registry import Composite

__all__ = ["Actor", "QuantileCritic"]


class QuantileCritic(Composite, keras.Model):
    """Z(s, a): ``[B, n_quantiles]`` atoms, the action concatenated to the observation's
    features before the first layer.

    ob_space / num_actions: one observation's space (a Box, or Dict/Tuple); the action
        dimension.
    torso: the hidden layers (rlbase.common.families.continuous.build_torso).
    n_quantiles: the atoms it predicts.
    """

    def __init__(self, ob_space: gym.Space, num_actions: int, torso: keras.layers.Layer,
                 n_quantiles: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.features = ObservationFeatures(ob_space)
        self.torso = torso
        self.out = layers.Dense(n_quantiles)
        self(dummy_observations(ob_space), tf.zeros([1, num_actions]))  # create the variables
        reinit_torch_linear(self.out)

    def call(self, obs: Any, action: tf.Tensor) -> tf.Tensor:
        x = tf.concat([self.features(obs), action], axis=-1)
        return self.out(self.torso(x))
