"""ACKTR: actor-critic with a Kronecker-factored trust region (K-FAC natural gradient)."""

from __future__ import annotations

from typing import Any, Callable

from rlbase.acktr.config import CONFIG, ACKTRConfig
from rlbase.acktr.model import Model, build_model
from rlbase.common.learning import start_learning
from rlbase.common.loop import LoopOptions
from rlbase.common.loops.on_policy import learning_rate, policy_rollouts, run_on_policy
from rlbase.common.vec_env import VecEnv

ALGORITHM = "acktr"
LOSSES = ("policy_loss", "value_loss")
C = ACKTRConfig


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(40e6),
          seed: int | None = None, *, nsteps: int = C.nsteps,
          lr: float | Callable[[float], float] = C.lr, lrschedule: str = C.lrschedule,
          ent_coef: float = C.ent_coef, vf_coef: float = C.vf_coef,
          vf_fisher_coef: float = C.vf_fisher_coef, max_grad_norm: float | None = C.max_grad_norm,
          kfac_clip: float = C.kfac_clip, momentum: float = C.momentum,
          stats_decay: float = C.stats_decay, damping: float = C.damping,
          cold_iter: int = C.cold_iter, inverse_interval: int = C.inverse_interval,
          is_async: bool = C.is_async, gamma: float = C.gamma,
          log_interval: int = C.log_interval, eval_freq: int = C.eval_freq,
          eval_episodes: int = C.eval_episodes,
          checkpoint_interval: int = C.checkpoint_interval,
          precision: str = C.precision,
          eval_env: VecEnv | Any | None = None,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_path: str | None = None,
          resume: bool = False, **network_kwargs: Any) -> Model:
    """Train a policy with ACKTR and return the :class:`~rlbase.acktr.model.Model`.

    The keyword arguments from ``nsteps`` to ``precision`` are the fields of
    :class:`~rlbase.acktr.config.ACKTRConfig` (type, unit, range and meaning there).

    network: mlp, cnn or another network of Dense and Conv2D layers (recurrent ones are
        refused), or a builder callable.
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
    """Run ACKTR's loop on ``model`` for ``total_timesteps`` more env steps."""
    config = model.config
    return run_on_policy(model, env, total_timesteps, options, loss_names=LOSSES,
                         rollouts=policy_rollouts(config.gamma),
                         schedule=learning_rate(config.lr, config.lrschedule),
                         update=lambda rollout, current, _: model.train(
                             rollout, current["learning_rate"]))
