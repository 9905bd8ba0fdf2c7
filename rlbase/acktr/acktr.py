"""ACKTR: actor-critic with a Kronecker-factored trust region (K-FAC natural gradient)."""

from __future__ import annotations

from typing import Any, Callable

from rlbase.acktr.config import CONFIG
from rlbase.acktr.model import Model, build_model
from rlbase.common.loops.learning import config_signature, start_learning
from rlbase.common.loops.on_policy import (
    learning_rate,
    policy_rollouts,
    run_on_policy,
    update_with_learning_rate,
)
from rlbase.common.loops.training_loop import LoopOptions
from rlbase.common.vec_env import VecEnv

ALGORITHM = "acktr"
LOSSES = ("policy_loss", "value_loss")


@config_signature(CONFIG, notes={
    "network": "mlp, cnn or another network of Dense and Conv2D layers (recurrent ones are "
               "refused), or a builder callable"})
def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(40e6),
          seed: int | None = None, **kwargs: Any) -> Model:
    """Train a policy with ACKTR and return the :class:`~rlbase.acktr.model.Model`: a K-FAC
    natural-gradient update per rollout of ``nsteps`` steps of every env."""
    model, env, options = start_learning(CONFIG, build_model, network, env, total_timesteps,
                                         seed, kwargs)
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run ACKTR's loop on ``model`` for ``total_timesteps`` more env steps."""
    config = model.config
    return run_on_policy(model, env, total_timesteps, options, loss_names=LOSSES,
                         rollouts=policy_rollouts(config.gamma),
                         schedule=learning_rate(config.lr, config.lrschedule),
                         update=update_with_learning_rate(model))
