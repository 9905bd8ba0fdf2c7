"""Adaptive parameter-space noise for DQN (Plappert et al., 2018).

The agent acts greedily with a perturbed copy of its Q-network (weights + scale * N(0, 1)),
drawn anew at each episode start. The scale adapts so that the perturbed policy differs from
the unperturbed one about as much as epsilon-greedy would: the difference is the KL between
the softmax of the two networks' Q-values, and epsilon-greedy's equivalent is
``-log(1 - eps + eps / num_actions)`` (the paper's appendix C.1).
"""

from __future__ import annotations

import math

from rlbase.common.errors import RLBaseError


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
