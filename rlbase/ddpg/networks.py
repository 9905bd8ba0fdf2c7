"""DDPG's deterministic actor: an observation to actions in [-1, 1] (a tanh output) on a
registry torso. The critic is the shared :class:`rlbase.common.families.continuous.Critic`."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import keras
import tensorflow as tf
from keras import layers

from rlbase.common.families.continuous import ObservationFeatures, dummy_observations, final_layer
from rlbase.common.networks.registry import Composite


class Actor(Composite, keras.Model):
    """Observation -> actions in [-1, 1]. A Box observation arrives normalized as float32; a
    Dict/Tuple one nested, its Box vectors normalized (see
    :class:`~rlbase.common.families.continuous.ObservationFeatures`)."""

    def __init__(self, observation_space: gym.Space, num_actions: int, torso: keras.layers.Layer,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.features = ObservationFeatures(observation_space)
        self.torso = torso
        self.out = final_layer(num_actions, "tanh")
        self(dummy_observations(observation_space))  # create the variables now

    def call(self, obs: Any) -> tf.Tensor:
        return self.out(self.torso(self.features(obs)))

    def perturbable_variables(self) -> list[tf.Variable]:
        """Weights parameter noise perturbs: all but layer normalization's scale and shift."""
        skip = {id(v) for layer in self._flatten_layers()
                if isinstance(layer, layers.LayerNormalization) for v in layer.weights}
        return [v for v in self.trainable_variables if id(v) not in skip]
