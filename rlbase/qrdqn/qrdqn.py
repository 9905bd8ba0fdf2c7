"""Quantile regression DQN (Dabney et al., 2018): DQN whose network estimates N quantiles of
each action's return instead of its mean, trained with the quantile Huber loss."""

from __future__ import annotations

from typing import Any, Callable

from rlbase.common.families.q_learning.hooks import LEARN_NOTES, QLearningHooks, train_q_learning
from rlbase.common.loops.learning import config_signature, network_first, start_learning
from rlbase.common.loops.training_loop import LoopOptions
from rlbase.common.vec_env import VecEnv
from rlbase.qrdqn.config import CONFIG
from rlbase.qrdqn.model import Model, build_model

ALGORITHM = "qrdqn"


@network_first
@config_signature(CONFIG, notes={
    **LEARN_NOTES,
    "**network_kwargs": "passed to the network builder (num_layers, num_hidden, layer_sizes, "
                        "activation...); SB3's names are taken out first"})
def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = 100000,
          seed: int | None = None, **kwargs: Any) -> Model:
    """Train a quantile network with QR-DQN and return the :class:`~rlbase.qrdqn.model.Model`
    (acting greedily on the mean of each action's quantiles)."""
    model, env, options = start_learning(CONFIG, build_model, network, env, total_timesteps,
                                         seed, kwargs)
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run QR-DQN's loop (the Q-learning family's hooks: epsilon-greedy acting, one update
    call per training phase after the env step, target copies) on ``model`` for
    ``total_timesteps`` more env steps (with ``resume``: up to that many in all)."""
    return train_q_learning(model, env, total_timesteps, options, QLearningHooks)
