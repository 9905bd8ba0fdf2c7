"""Advantage actor-critic (A2C): synchronous n-step actor-critic on a batch of envs."""

from __future__ import annotations

from typing import Any, Callable

from rlbase.a2c.config import CONFIG, A2CConfig
from rlbase.a2c.model import Model, build_model
from rlbase.common.learning import start_learning
from rlbase.common.loop import LoopOptions
from rlbase.common.loops.on_policy import learning_rate, policy_rollouts, run_on_policy
from rlbase.common.vec_env import VecEnv

ALGORITHM = "a2c"
LOSSES = ("policy_loss", "value_loss")
C = A2CConfig


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(80e6),
          seed: int | None = None, *, nsteps: int = C.nsteps,
          lr: float | Callable[[float], float] = C.lr, lrschedule: str = C.lrschedule,
          ent_coef: float = C.ent_coef, vf_coef: float = C.vf_coef,
          max_grad_norm: float | None = C.max_grad_norm, rms_alpha: float = C.rms_alpha,
          rms_epsilon: float = C.rms_epsilon, tf1_rmsprop: bool = C.tf1_rmsprop,
          gamma: float = C.gamma, lam: float = C.lam,
          normalize_advantage: bool = C.normalize_advantage,
          jit_compile: bool | None = C.jit_compile,
          log_interval: int = C.log_interval, eval_freq: int = C.eval_freq,
          eval_episodes: int = C.eval_episodes,
          checkpoint_interval: int = C.checkpoint_interval,
          precision: str = C.precision,
          eval_env: VecEnv | Any | None = None,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_path: str | None = None,
          resume: bool = False, **network_kwargs: Any) -> Model:
    """Train a policy with A2C and return the :class:`~rlbase.a2c.model.Model`.

    The keyword arguments from ``nsteps`` to ``precision`` are the fields of
    :class:`~rlbase.a2c.config.A2CConfig` (type, unit, range and meaning there, and in
    rlbase/docs/algorithms/a2c.md); Stable-Baselines3's names (``n_steps``,
    ``learning_rate``, ``rms_prop_eps``, ``gae_lambda``) are accepted too, and the
    deprecated ``alpha`` and ``epsilon`` (now ``rms_alpha`` and ``rms_epsilon``).

    network: a registered network name (mlp, cnn, lstm, ...) or a builder callable.
    env: a VecEnv (a gymnasium env or an env id is wrapped into one).
    total_timesteps: env steps to train for, summed over envs (rounded up to whole updates).
    seed: seed of python, numpy, TensorFlow and the envs (None: unseeded).
    eval_env: an env (or env id, seeded with seed + 1000) to evaluate the policy on.
    callback: called after every update as ``callback(model, info)``; returning False stops.
    load_path: continue from this saved model (its network and architecture are used).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints).
    resume: continue from the newest checkpoint in checkpoint_path (total_timesteps counts
        the whole run, including the steps done before the checkpoint).
    **network_kwargs: passed to the network builder (num_layers, num_hidden, nlstm, ...);
        ``value_network='copy'`` gives the value head its own torso, ``log_std_init`` sets a
        Gaussian policy's initial log standard deviation.
    """
    model, env, options = start_learning(CONFIG, build_model, locals())
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run A2C's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all)."""
    config = model.config
    return run_on_policy(model, env, total_timesteps, options, loss_names=LOSSES,
                         rollouts=policy_rollouts(config.gamma),
                         schedule=learning_rate(config.lr, config.lrschedule),
                         update=lambda rollout, current, _: model.train(
                             rollout, current["learning_rate"]))
