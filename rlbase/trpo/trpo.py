"""TRPO: trust region policy optimization (Baselines' trpo_mpi), on the shared loop."""

from __future__ import annotations

from typing import Any, Callable

from rlbase.common.learning import start_learning
from rlbase.common.loop import LoopOptions
from rlbase.common.loops.on_policy import policy_rollouts, run_on_policy
from rlbase.common.vec_env import VecEnv
from rlbase.trpo.config import CONFIG, TRPOConfig
from rlbase.trpo.model import Model, build_model

ALGORITHM = "trpo"
LOSSES = ("policy_objective", "kl_divergence_loss", "value_loss")
C = TRPOConfig


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(1e6),
          seed: int | None = None, *, nsteps: int = C.nsteps, max_kl: float = C.max_kl,
          cg_iters: int = C.cg_iters, cg_damping: float = C.cg_damping,
          fvp_subsample: int = C.fvp_subsample, line_search_iters: int = C.line_search_iters,
          line_search_shrink: float = C.line_search_shrink, gamma: float = C.gamma,
          lam: float = C.lam, ent_coef: float = C.ent_coef,
          normalize_advantage: bool = C.normalize_advantage,
          vf_lr: float = C.vf_lr, vf_iters: int = C.vf_iters,
          vf_batch_size: int = C.vf_batch_size, log_interval: int = C.log_interval,
          eval_freq: int = C.eval_freq, eval_episodes: int = C.eval_episodes,
          checkpoint_interval: int = C.checkpoint_interval,
          precision: str = C.precision,
          eval_env: VecEnv | Any | None = None,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_path: str | None = None,
          resume: bool = False, **network_kwargs: Any) -> Model:
    """Train a policy with TRPO and return the :class:`~rlbase.trpo.model.Model`.

    The keyword arguments from ``nsteps`` to ``precision`` are the fields of
    :class:`~rlbase.trpo.config.TRPOConfig` (type, unit, range and meaning there).

    network: mlp, cnn or another feed-forward network (recurrent ones are refused), or a
        builder callable; the value gets its own torso unless value_network='shared'.
    env: a VecEnv (a gymnasium env or an env id is wrapped into one).
    total_timesteps: env steps to train for, summed over envs (rounded up to whole updates).
    seed: seed of python, numpy, TensorFlow and the envs (None: unseeded).
    eval_env: an env (or env id, seeded with seed + 1000) to evaluate the policy on.
    callback: called after every update as ``callback(model, info)``; returning False stops.
    load_path: continue from this saved model (its network and architecture are used).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints).
    resume: continue from the newest checkpoint in checkpoint_path.
    **network_kwargs: passed to the network builder (num_layers, num_hidden, ...).
    """
    model, env, options = start_learning(CONFIG, build_model, locals())
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
