"""QR-DQN's network: the Q-learning family's QNetwork with n_quantiles outputs per action."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import gymnasium as gym
import keras

from rlbase.common.families.q_learning.networks import QNetwork


def quantile_network(observation_space: gym.Space, action_space: gym.Space,
                     network: str | Callable[..., keras.layers.Layer],
                     hiddens: Sequence[int], n_quantiles: int,
                     network_kwargs: dict[str, Any]) -> QNetwork:
    """theta(s, .): ``[B, num_actions, n_quantiles]`` quantiles of each action's return
    (one linear head, as sb3-contrib's; its ``q_values`` are their means)."""
    return QNetwork(observation_space, action_space, network, hiddens, dueling=False,
                    layer_norm=False, network_kwargs=network_kwargs, atoms=n_quantiles,
                    algorithm="qrdqn")
