"""Adaptive parameter-space noise for DQN (Plappert et al., 2018).

The agent acts greedily with a perturbed copy of its Q-network (weights + scale * N(0, 1)),
drawn anew at each episode start. The scale adapts so that the perturbed policy differs from
the unperturbed one about as much as epsilon-greedy would: the difference is the KL between
the softmax of the two networks' Q-values, and epsilon-greedy's equivalent is
``-log(1 - eps + eps / num_actions)`` (the paper's appendix C.1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cached_property
from typing import Any

import numpy as np
import tensorflow as tf

from rlbase.common.errors import RLBaseError
from rlbase.common.families.q_learning.networks import QNetwork
from rlbase.common.families.q_learning.numpy_q import NumpyQ
from rlbase.common.tf_util import CompiledFunction, compile_fn, observation_spec, spec_like


def kl_threshold(epsilon: float, num_actions: int) -> float:
    """The KL that matches epsilon-greedy exploration with ``epsilon`` over ``num_actions``."""
    return -math.log(1.0 - epsilon + epsilon / float(num_actions))


class AdaptiveParamNoise:
    """The noise scale: grows by ``coefficient`` while the measured distance is under the
    threshold, shrinks by it otherwise.

    initial_scale: the first perturbation's standard deviation.
    coefficient: the factor (> 1) the scale changes by at each adaptation.
    """

    def __init__(self, initial_scale: float = 0.01, coefficient: float = 1.01):
        if not initial_scale > 0 or not coefficient > 1:
            raise RLBaseError(f"parameter noise needs initial_scale > 0 and coefficient > 1, "
                              f"got {initial_scale!r} and {coefficient!r}")
        self.scale = float(initial_scale)
        self.coefficient = float(coefficient)

    def adapt(self, distance: float, threshold: float) -> float:
        """Update the scale from one measured ``distance``; returns the new scale."""
        if distance < threshold:
            self.scale *= self.coefficient
        else:
            self.scale /= self.coefficient
        return self.scale


class PerturbedQ:
    """The perturbed copy of a Q-network that parameter noise acts with, and a second copy
    the adaptation measures a fresh perturbation on (neither is saved: both are redrawn).

    q: the online network whose weights are perturbed.
    make_net: builds a fresh network of the same shape.
    numpy_mirror: act through a numpy mirror of the perturbed copy (MLP torsos only).
    act_jit: compile the TF act call with XLA.
    """

    def __init__(self, q: QNetwork, make_net: Callable[[], QNetwork], numpy_mirror: bool,
                 act_jit: bool):
        self.q = q
        self.net = make_net()
        self.adaptive = make_net()
        self.mirror = NumpyQ.create(self.net) if numpy_mirror else None
        self._act_jit = act_jit
        self.adaptation = AdaptiveParamNoise()

    def _obs_spec(self) -> Any:
        return observation_spec(self.q.observation_space, [None])

    def _perturb_into(self, dst: QNetwork, scale: tf.Tensor, seed: tf.Tensor) -> None:
        # Layer-norm scales and offsets are left alone, as in Plappert et al.
        noisy = {id(v) for v in self.q.perturbable_variables()}
        for k, (src, out) in enumerate(zip(self.q.weights, dst.weights)):
            if id(src) in noisy:
                noise = tf.random.stateless_normal(src.shape, seed=seed + [0, k], dtype=src.dtype)
                out.assign(src + scale * noise)
            else:
                out.assign(src)

    @cached_property
    def q_fn(self) -> CompiledFunction:
        return compile_fn(self.net, [self._obs_spec()], self._act_jit)

    @cached_property
    def _perturb_fn(self) -> CompiledFunction:
        def perturb(scale, seed):
            self._perturb_into(self.net, scale, seed)
            # The new weights come back with the call, for the numpy mirror.
            return tuple(tf.identity(v) for v in self.mirror.variables) if self.mirror \
                else (scale,)
        return compile_fn(perturb, [spec_like([], np.float32), spec_like([2], np.int64)])

    @cached_property
    def _distance_fn(self) -> CompiledFunction:
        def distance(obs, scale, seed):
            self._perturb_into(self.adaptive, scale, seed)
            logp = tf.nn.log_softmax(self.q(obs))
            logp_noisy = tf.nn.log_softmax(self.adaptive(obs))
            return tf.reduce_mean(tf.reduce_sum(tf.exp(logp) * (logp - logp_noisy), axis=-1))
        return compile_fn(distance, [self._obs_spec(), spec_like([], np.float32),
                                     spec_like([2], np.int64)])

    def q_values(self, obs: Any) -> np.ndarray:
        """``[B, num_actions]`` Q-values of the perturbed copy."""
        if self.mirror is not None:
            return self.mirror.q_values(obs)
        return self.q_fn(obs).numpy()

    def perturb(self, scale: float, seed: np.ndarray) -> None:
        """Draw a new perturbation of the online weights into the acting copy."""
        values = self._perturb_fn(np.float32(scale), seed)
        if self.mirror is not None:
            self.mirror.sync([v.numpy() for v in values])

    def distance(self, obs: Any, scale: float, seed: np.ndarray) -> float:
        """Mean KL between the softmax of Q and of Q under a fresh perturbation of ``scale``
        (the distance parameter noise adapts its scale on, as in Baselines' deepq)."""
        return float(self._distance_fn(obs, np.float32(scale), seed))
