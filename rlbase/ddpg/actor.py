"""DDPG's deterministic actor: an observation to actions in [-1, 1] (a tanh output) on a
registry torso. The critic is the shared :class:`rlbase.common.continuous.Critic`."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from keras import layers

from rlbase.common.continuous import final_layer


class Actor(keras.Model):
    """Observation (already normalized, float32) -> actions in [-1, 1]."""

    def __init__(self, ob_shape: tuple[int, ...], nb_actions: int, torso: keras.layers.Layer,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.flatten = layers.Flatten()
        self.torso = torso
        self.out = final_layer(nb_actions, "tanh")
        self(tf.zeros([1, *ob_shape]))  # create the variables now

    def call(self, obs: tf.Tensor) -> tf.Tensor:
        return self.out(self.torso(self.flatten(obs)))

    def perturbable_variables(self) -> list[tf.Variable]:
        """Weights parameter noise perturbs: all but layer normalization's scale and shift."""
        skip = {id(v) for layer in self._flatten_layers()
                if isinstance(layer, layers.LayerNormalization) for v in layer.weights}
        return [v for v in self.trainable_variables if id(v) not in skip]
