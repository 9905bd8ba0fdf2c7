"""Actor-critic with experience replay (ACER, Wang et al. 2016) for Discrete action spaces."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Callable

from rlbase.acer.model import Model, build_model
from rlbase.acer.runner import Runner
from rlbase.common.errors import NonFiniteError
from rlbase.common.learning import Alias, start_learning
from rlbase.common.loop import LoopOptions, TrainingLoop
from rlbase.common.schedules import get_schedule_fn, named_schedule
from rlbase.common.vec_env import VecEnv

ALGORITHM = "acer"
LOSSES = ("policy_loss", "value_loss")
ALIASES: dict[str, Alias] = {}  # Baselines' spellings are ACER's own: none deprecated


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(80e6),
          seed: int | None = None, nsteps: int = 20, q_coef: float = 0.5,
          ent_coef: float = 0.01, max_grad_norm: float | None = 10,
          lr: float | Callable[[float], float] = 7e-4, lrschedule: str = "linear",
          rprop_epsilon: float = 1e-5, rprop_alpha: float = 0.99, gamma: float = 0.99,
          buffer_size: int = 50000, replay_ratio: float = 4, replay_start: int = 10000,
          c: float = 10.0, trust_region: bool = True, alpha: float = 0.99, delta: float = 1,
          jit_compile: bool | None = None, log_interval: int = 100,
          eval_env: VecEnv | Any | None = None, eval_freq: int = 0, eval_episodes: int = 5,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_interval: int = 0,
          checkpoint_path: str | None = None, resume: bool = False,
          **network_kwargs: Any) -> Model:
    """Train a policy with ACER and return the :class:`~rlbase.acer.model.Model`.

    network: a registered network name (mlp, cnn, lstm, ...) or a builder callable.
    env: a VecEnv with a Discrete action space (a gymnasium env or an env id is wrapped).
    total_timesteps: env steps to train for, summed over envs (rounded up to whole updates).
    seed: seed of python, numpy, TensorFlow and the envs (None: unseeded).
    nsteps: env steps per env per update (one sequence of this length per env).
    q_coef: weight of the Q loss in the total loss.
    ent_coef: weight of the entropy bonus.
    max_grad_norm: clip the gradient's global norm to this (None: no clipping).
    lr: RMSProp learning rate, or a function of the fraction of training remaining (1 -> 0).
    lrschedule: how a float lr decays: constant, linear, middle_drop, double_linear_con,
        double_middle_drop.
    rprop_epsilon: RMSProp epsilon, added inside the square root (TF1's RMSProp, the
        reference's).
    rprop_alpha: RMSProp decay of the mean square, which starts at 1 (TF1's RMSProp).
    gamma: discount factor (1: a time-limit truncation ends the return; see
        rlbase.common.transitions).
    buffer_size: replay buffer size in env steps per env (it keeps buffer_size // nsteps
        rollouts of all envs, as the reference does).
    replay_ratio: each on-policy update is followed by Poisson(replay_ratio) off-policy
        updates on replayed sequences (0: on-policy ACER, no buffer).
    replay_start: replay starts once the buffer holds this many env steps per env.
    c: importance weight clipping factor (the truncation of rho; the rest is bias-corrected).
    trust_region: bound the policy update by the KL divergence to the averaged policy.
    alpha: momentum of the Polyak (exponential moving) average of the policy's weights.
    delta: the KL bound of the trust region.
    jit_compile: compile the update with XLA. None (auto): on for runs of at least 1000
        updates, except convnets on a CPU (measured: an 8x20 CartPole update takes 2.4 ms
        with XLA, 5.2 ms without; a Breakout cnn update on a CPU 800 ms with XLA, 410 ms
        without).
    log_interval: log every this many on-policy updates.
    eval_env: an env (or env id, seeded with seed + 1000) to evaluate the policy on.
    eval_freq: evaluate every this many env steps (0: at every log row when eval_env is
        given); logged as eval/mean_reward, the best model written to
        <log dir>/best_model.zip.
    eval_episodes: episodes per evaluation.
    callback: called after every on-policy update and its replay updates as
        ``callback(model, info)``; returning False stops.
    load_path: continue from this saved model (its network and architecture are used).
    checkpoint_interval: write a resumable checkpoint (model, averaged policy, optimizer,
        replay buffer, counters, generators) every this many env steps (0: never; Ctrl-C
        still writes one when checkpoint_path is set).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints).
    resume: continue from the newest checkpoint in checkpoint_path (total_timesteps counts
        the whole run, including the steps done before the checkpoint).
    **network_kwargs: passed to the network builder (num_layers, num_hidden, nlstm, ...);
        ``value_network='copy'`` gives the Q head its own torso.
    """
    model, env, options = start_learning(ALGORITHM, build_model, locals(), ALIASES,
                                         architecture=Model.architecture)
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run ACER's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all): each iteration is an on-policy update on a fresh rollout and
    Poisson(replay_ratio) updates on replayed ones. Behind a VecNormalize the on-policy update
    uses the rollout as collected, the buffer keeps it raw and a replayed one is normalized
    with the statistics of the moment it is replayed."""
    hp = model.hyperparameters
    lr = hp["lr"]
    lr_fn = get_schedule_fn(lr) if callable(lr) else named_schedule(hp["lrschedule"], lr)
    buffer, rng = model.replay_buffer, model.replay_rng
    if buffer is not None:
        buffer.configure(env)  # its storage exists before a checkpoint is restored into it
    loop = TrainingLoop(model, env, total_timesteps, options, loss_names=LOSSES,
                        seed=hp.get("seed"))
    runner = Runner(env, model, model.nsteps, episodes=loop.episodes,
                    raw=None if buffer is None else model.raw_replay)
    nbatch = model.num_envs * model.nsteps
    for _ in range(loop.iterations_left(nbatch)):
        current_lr = lr_fn(loop.progress_remaining)
        seq = runner.run()
        stats = model.train(seq, current_lr)
        _check_finite(stats, loop, nbatch, "on-policy")
        nreplay = 0
        if buffer is not None:
            buffer.put(model.stored(seq))
            if buffer.has_atleast(hp["replay_start"]):
                nreplay = int(rng.poisson(hp["replay_ratio"]))
                for _ in range(nreplay):
                    _check_finite(model.train(model.replayed(rng), current_lr), loop,
                                  nbatch, "replay")
        extra = {"learning_rate": current_lr, "replay_updates": nreplay,
                 "buffer_rollouts": 0 if buffer is None else buffer.num_in_buffer}
        if loop.end_iteration(nbatch, {**stats, **extra}):
            break
    return model


def _check_finite(stats: Mapping[str, float], loop: TrainingLoop, nbatch: int,
                  kind: str) -> None:
    """Stop at the first non-finite loss of any update, before replay spreads it (the loop
    checks only the statistics it is handed, and no checkpoint is written)."""
    for name in LOSSES:
        if not math.isfinite(stats[name]):
            raise NonFiniteError(f"{ALGORITHM}: {name} became {stats[name]} in the {kind} "
                                 f"update of iteration {loop.iterations + 1} "
                                 f"({loop.model.num_timesteps + nbatch} timesteps)")
