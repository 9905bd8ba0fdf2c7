"""The whole deterministic policy as one ``tf.Module``: raw env observations in, env actions out.

Around the model's own act path (:class:`~rlbase.common.networks.policy_graph.PolicyGraph`) it
puts what surrounds ``model.step`` in ``predict``: before it the saved VecNormalize statistics
(baked in as constants), after it the clipping of Box actions to their bounds. Inputs are flat and
named, so every format (SavedModel signatures, TFLite signature runners, ONNX) sees the same
names: ``obs`` (or ``obs_<entry>`` per entry of a Dict/Tuple space), plus ``state`` and
``mask`` for recurrent policies, ``action_masks`` for a policy trained with action masks and
``seed`` for the stochastic variant. Outputs: ``actions`` (and ``next_state``).
"""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
import numpy as np
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

from rlbase.common import nested
from rlbase.common.networks.policy_graph import ExportableModel, PolicyGraph
from rlbase.common.vec_env.vec_normalize import NormalizationStats

DETERMINISTIC, STOCHASTIC = "serving_default", "sample"


def input_names(space: gym.Space) -> list[str]:
    """One input name per observation leaf: ``obs``, or ``obs_<entry path>`` (``/`` and other
    characters a signature key cannot hold become ``_``)."""
    if not nested.is_nested(space):
        return ["obs"]
    return ["obs_" + re.sub(r"[^A-Za-z0-9_]", "_", name) for name in nested.leaf_names(space)]


class ExportedPolicy(tf.Module):
    """The exported policy of ``model``.

    act(**inputs) -> {"actions", ["next_state"]}: ``predict(obs, state, mask, deterministic=True)``
    (and ``action_masks=`` for a masked policy).
    sample(**inputs, seed) -> the same, drawn from the policy's distribution (seeded).
    """

    def __init__(self, model: ExportableModel):
        super().__init__(name="rlbase_policy")
        graph: PolicyGraph = model.policy_graph()
        self.graph_owners = list(graph.owners)  # tracked: their variables are saved
        self.observation_space = model.observation_space
        self.action_space = model.action_space
        self.state_size = int(graph.state_size)
        self.recurrent = self.state_size > 0
        self.action_mask_size = int(graph.action_mask_size)
        #: the action space masks are drawn for (None: the policy takes no masks)
        self.mask_space = model.action_space if self.action_mask_size else None
        self.stochastic = graph.sample is not None
        self._graph = graph
        self._leaves = nested.leaf_spaces(model.observation_space)
        self._net_leaves = nested.leaf_spaces(graph.observation_space)
        self.names = input_names(model.observation_space)
        self._normalizers = _normalizers(model.normalization, len(self._leaves))
        specs = [tf.TensorSpec([None, *(leaf.shape or ())], tf.as_dtype(leaf.dtype), name=n)
                 for leaf, n in zip(self._leaves, self.names)]
        if self.recurrent:
            specs += [tf.TensorSpec([None, self.state_size], tf.float32, name="state"),
                      tf.TensorSpec([None], tf.float32, name="mask")]
        if self.action_mask_size:
            specs.append(tf.TensorSpec([None, self.action_mask_size], tf.bool,
                                       name="action_masks"))
        self.input_specs = specs
        self.seed_spec = tf.TensorSpec([2], tf.int64, name="seed")
        self.act = tf.function(self._act, input_signature=specs, autograph=False)
        self.sample = tf.function(self._sample, input_signature=[*specs, self.seed_spec],
                                  autograph=False) if self.stochastic else None

    # -- pieces -----------------------------------------------------------------------------------
    def _inputs(self, args: tuple) -> tuple[Any, ...]:
        """What the graph's act takes: (obs, state, mask[, action_masks])."""
        leaves = list(args[:len(self._leaves)])
        batch = tf.shape(leaves[0])[0]
        for i, norm in self._normalizers.items():
            mean, std, clip = norm
            x = (tf.cast(leaves[i], tf.float32) - mean) / std
            leaves[i] = tf.clip_by_value(x, -clip, clip)
        # What step() takes: each leaf in its spec's dtype (as the compiled calls convert).
        leaves = [tf.cast(x, tf.as_dtype(leaf.dtype)) if x.dtype != tf.as_dtype(leaf.dtype)
                  else x for x, leaf in zip(leaves, self._net_leaves)]
        obs = nested.pack(self._graph.observation_space, leaves)
        if self.recurrent:
            state, mask = args[len(self._leaves)], args[len(self._leaves) + 1]
        else:
            state, mask = tf.zeros([batch, 0], tf.float32), tf.zeros([batch], tf.float32)
        if self.action_mask_size:
            return obs, state, mask, args[-1]
        return obs, state, mask

    def _outputs(self, actions: tf.Tensor, state: tf.Tensor) -> dict[str, tf.Tensor]:
        space = self.action_space
        if isinstance(space, gym.spaces.Box):  # predict clips Box actions to the bounds
            actions = tf.clip_by_value(tf.cast(actions, tf.float32),
                                       space.low.astype(np.float32),
                                       space.high.astype(np.float32))
        actions = tf.cast(actions, tf.as_dtype(space.dtype))
        out = {"actions": actions}
        if self.recurrent:
            out["next_state"] = state
        return out

    def _act(self, *args: tf.Tensor) -> dict[str, tf.Tensor]:
        return self._outputs(*self._graph.act(*self._inputs(args)))

    def _sample(self, *args: tf.Tensor) -> dict[str, tf.Tensor]:
        assert self._graph.sample is not None
        obs, state, mask, *action_masks = self._inputs(args[:-1])
        return self._outputs(*self._graph.sample(obs, state, mask, args[-1], *action_masks))

    def run(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """``act`` on named inputs (numpy or tensors), as the signatures take them."""
        return self.act(*[inputs[spec.name] for spec in self.input_specs])

    def frozen(self) -> tf.Module:
        """A module whose ``act`` has every weight as a constant (what TFLite and tf2onnx
        take: Keras 3 variables would stay variables in a TFLite file, uninitialized)."""
        concrete = self.act.get_concrete_function()
        keys = sorted(concrete.structured_outputs)  # the order of the frozen outputs
        graph = convert_variables_to_constants_v2(concrete)
        module = tf.Module(name="rlbase_policy_frozen")
        module.act = tf.function(lambda *args: dict(zip(keys, graph(*args))),
                                 input_signature=self.input_specs, autograph=False)
        return module

    def signatures(self) -> dict[str, Any]:
        """Concrete functions by signature key (``serving_default``, and ``sample``)."""
        out = {DETERMINISTIC: self.act.get_concrete_function()}
        if self.sample is not None:
            out[STOCHASTIC] = self.sample.get_concrete_function()
        return out


def _normalizers(stats: NormalizationStats | None, count: int
                 ) -> dict[int, tuple[tf.Tensor, tf.Tensor, float]]:
    """Per normalized observation leaf: (mean, std, clip) as float32 constants."""
    if stats is None or stats.space is None or not stats.norm_obs:
        return {}
    out = {}
    for i, rms in enumerate(stats.leaf_rms[:count]):
        if rms is None:
            continue
        std = np.sqrt(np.asarray(rms.var, np.float64) + stats.epsilon)
        out[i] = (tf.constant(np.asarray(rms.mean, np.float32)),
                  tf.constant(std.astype(np.float32)), float(stats.clipob))
    return out
