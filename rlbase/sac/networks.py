"""SAC's networks: the squashed-Gaussian actor (rlbase.common.families.squashed_gaussian's,
shared with TQC), and the twin Q-networks (the shared
:class:`rlbase.common.families.continuous.Critic`). Actor and critics each see the observation
through their own :class:`~rlbase.common.families.continuous.ObservationFeatures` (SB3's SAC
shares no features extractor), so Dict/Tuple observations work.

Output layers are initialized like PyTorch's ``nn.Linear`` (weights and biases uniform in
``+-1/sqrt(fan_in)``), the peer's initialization, so early actions and Q values are small.
"""

from __future__ import annotations

import gymnasium as gym
import keras

from rlbase.common.families.continuous import Critic
from rlbase.common.families.squashed_gaussian import Actor, reinit_torch_linear

__all__ = ["Actor", "q_network", "reinit_torch_linear"]


def q_network(observation_space: gym.Space, num_actions: int, torso: keras.layers.Layer) -> Critic:
    """One of the twin Q-networks: the shared Critic with a PyTorch-initialized output."""
    critic = Critic(observation_space, num_actions, torso, final_init=None)
    reinit_torch_linear(critic.out)
    return critic
