"""TRPO: trust region policy optimization (Baselines' trpo_mpi), on the shared loop."""

from __future__ import annotations

from typing import Any, Callable

from rlbase.common.loops.learning import config_signature, start_learning
from rlbase.common.loops.on_policy import policy_rollouts, run_on_policy
from rlbase.common.loops.training_loop import LoopOptions
from rlbase.common.vec_env import VecEnv
from rlbase.trpo.config import CONFIG
from rlbase.trpo.model import Model, build_model

ALGORITHM = "trpo"
LOSSES = ("policy_objective", "kl_divergence_loss", "value_loss")


@config_signature(CONFIG, notes={
    "network": "mlp, cnn or another feed-forward network (recurrent ones are refused), or a "
               "builder callable; the value gets its own torso unless value_network='shared'"})
def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(1e6),
          seed: int | None = None, **kwargs: Any) -> Model:
    """Train a policy with TRPO and return the :class:`~rlbase.trpo.model.Model`: a
    KL-constrained natural-gradient step and a value fit per rollout of ``nsteps`` steps of
    every env."""
    model, env, options = start_learning(CONFIG, build_model, network, env, total_timesteps,
                                         seed, kwargs)
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run TRPO's loop on ``model`` for ``total_timesteps`` more env steps. Under MPI every
    rank runs it (each on its own envs); rank 0 writes checkpoints."""
    config = model.config
    return run_on_policy(model, env, total_timesteps, options, loss_names=LOSSES,
                         rollouts=policy_rollouts(config.gamma),
                         schedule=lambda _: {"learning_rate": config.vf_lr},
                         update=lambda rollout, current, _: model.train(rollout),
                         comm=model.comm, workers_mean=model.workers_mean)
