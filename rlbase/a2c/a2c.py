"""Advantage actor-critic (A2C): synchronous n-step actor-critic on a batch of envs."""

from __future__ import annotations

from typing import Any, Callable

from rlbase.a2c.model import Model, build_model
from rlbase.common.learning import start_learning
from rlbase.common.loop import LoopOptions, TrainingLoop
from rlbase.common.rollout import RolloutRunner
from rlbase.common.schedules import get_schedule_fn, named_schedule
from rlbase.common.vec_env import VecEnv

ALGORITHM = "a2c"
LOSSES = ("policy_loss", "value_loss")
ALIASES: dict = {}  # no deprecated spellings


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(80e6),
          seed: int | None = None, nsteps: int = 5, vf_coef: float = 0.5,
          ent_coef: float = 0.01, max_grad_norm: float | None = 0.5,
          lr: float | Callable[[float], float] = 7e-4, lrschedule: str = "linear",
          epsilon: float = 1e-5, alpha: float = 0.99, tf1_rmsprop: bool = False,
          gamma: float = 0.99, lam: float = 1.0, jit_compile: bool | None = None,
          log_interval: int = 100,
          eval_env: VecEnv | Any | None = None, eval_freq: int = 0, eval_episodes: int = 5,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_interval: int = 0,
          checkpoint_path: str | None = None, resume: bool = False,
          **network_kwargs: Any) -> Model:
    """Train a policy with A2C and return the :class:`~rlbase.a2c.model.Model`.

    network: a registered network name (mlp, cnn, lstm, ...) or a builder callable.
    env: a VecEnv (a gymnasium env or an env id is wrapped into one).
    total_timesteps: env steps to train for, summed over envs (rounded up to whole updates).
    seed: seed of python, numpy, TensorFlow and the envs (None: unseeded).
    nsteps: env steps per env per update (batch = nsteps * num_envs).
    vf_coef: weight of the value loss.
    ent_coef: weight of the entropy bonus.
    max_grad_norm: clip the gradient's global norm to this (None: no clipping).
    lr: RMSProp learning rate, or a function of the fraction of training remaining (1 -> 0).
    lrschedule: how a float lr decays: constant, linear, middle_drop, double_linear_con,
        double_middle_drop.
    epsilon: RMSProp epsilon (added outside the square root; inside with tf1_rmsprop).
    alpha: RMSProp decay of the mean square.
    tf1_rmsprop: RMSProp as TF1 computed it, Baselines' optimizer: the mean square starts at 1
        and epsilon is inside the square root (False: starts at 0, epsilon outside).
    gamma: discount factor (1: a time-limit truncation ends the return; see
        rlbase.common.transitions).
    lam: GAE lambda of the critic's targets (1: n-step returns, A2C's classic form; SB3's
        gae_lambda).
    jit_compile: compile the update with XLA: ~1 ms faster per update, ~1.5 s to compile.
        None (auto): on for runs of at least 1500 updates, except convnets on a CPU.
    log_interval: log every this many updates.
    eval_env: an env (or env id, seeded with seed + 1000) to evaluate the policy on.
    eval_freq: evaluate every this many env steps (0: at every log row when eval_env is
        given); logged as eval/mean_reward, the best model written to
        <log dir>/best_model.zip.
    eval_episodes: episodes per evaluation.
    callback: called after every update as ``callback(model, info)``; returning False stops.
    load_path: continue from this saved model (its network and architecture are used).
    checkpoint_interval: write a resumable checkpoint every this many env steps (0: never).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints).
    resume: continue from the newest checkpoint in checkpoint_path (total_timesteps counts
        the whole run, including the steps done before the checkpoint).
    **network_kwargs: passed to the network builder (num_layers, num_hidden, nlstm, ...);
        ``value_network='copy'`` gives the value head its own torso, ``log_std_init`` sets a
        Gaussian policy's initial log standard deviation.
    """
    model, env, options = start_learning(ALGORITHM, build_model, locals(), ALIASES,
                                         architecture=Model.architecture)
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run A2C's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all)."""
    hp = model.hyperparameters
    lr = hp["lr"]
    lr_fn = get_schedule_fn(lr) if callable(lr) else named_schedule(hp["lrschedule"], lr)
    loop = TrainingLoop(model, env, total_timesteps, options, loss_names=LOSSES,
                        seed=hp.get("seed"))
    runner = RolloutRunner(env, model, nsteps=model.nsteps, gamma=model.gamma,
                           episodes=loop.episodes)
    nbatch = model.num_envs * model.nsteps
    for _ in range(loop.iterations_left(nbatch)):
        current_lr = lr_fn(loop.progress_remaining)
        rollout = runner.run()
        stats, runner.pending = model.train(rollout, current_lr)
        if loop.end_iteration(nbatch, {**stats, "learning_rate": current_lr}):
            break
    return model
