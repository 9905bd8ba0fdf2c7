"""Soft Actor-Critic (Haarnoja et al. 2018, with the learned temperature of "Soft Actor-Critic
Algorithms and Applications"), as Stable-Baselines3 runs it."""

from __future__ import annotations

from typing import Any, Callable

from rlbase.common.learning import Alias, start_learning
from rlbase.common.loop import LoopOptions, TrainingLoop
from rlbase.common.off_policy import TrainSchedule, reset_env, step_and_store
from rlbase.common.schedules import get_schedule_fn
from rlbase.common.vec_env import VecEnv
from rlbase.sac.model import ALGORITHM, Model, build_model

LOSSES = ("critic_loss", "actor_loss")
# No deprecated spellings: SB3's names are taken by the model classes (rlbase.api.sb3_names).
ALIASES: dict[str, Alias] = {}


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(1e6),
          seed: int | None = None, lr: float | Callable[[float], float] = 3e-4,
          buffer_size: int = int(1e6), learning_starts: int = 100, batch_size: int = 256,
          tau: float = 0.005, gamma: float = 0.99, train_freq: int = 1, gradient_steps: int = 1,
          ent_coef: str | float = "auto", target_update_interval: int = 1,
          target_entropy: str | float = "auto", jit_compile: bool | None = None,
          log_interval: int = 4, eval_env: VecEnv | Any | None = None, eval_freq: int = 0,
          eval_episodes: int = 5,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_interval: int = 0,
          checkpoint_path: str | None = None, resume: bool = False,
          **network_kwargs: Any) -> Model:
    """Train a squashed-Gaussian actor, twin critics and the entropy coefficient with SAC and
    return the :class:`~rlbase.sac.model.Model`.

    network: a feed-forward registry network name ('mlp', ...) or builder, the torso of the
        actor and of each critic.
    env: a VecEnv with a Box action space (a gymnasium env or an env id is wrapped).
    total_timesteps: env steps to train for, summed over envs.
    seed: seed of python, numpy, TensorFlow, the envs, the policy's noise and the replay
        sampling.
    lr: Adam learning rate of the actor, the critics and the entropy coefficient, or a
        function of the fraction of training remaining (1 -> 0).
    buffer_size: transitions the replay buffer keeps.
    learning_starts: env steps with uniformly random actions, and no training, at the start.
    batch_size: transitions per gradient step.
    tau: soft target update rate: target <- (1 - tau) target + tau online.
    gamma: discount factor (1: a time-limit truncation ends the return; see
        rlbase.common.transitions).
    train_freq: vectorized env steps between training phases.
    gradient_steps: gradient steps per training phase, run in one compiled call with the next
        step's acting (0: no training).
    ent_coef: the entropy coefficient alpha: 'auto' (learned, starting at 1.0), 'auto_X'
        (learned, starting at X) or a number (fixed).
    target_update_interval: update the target critics every this many gradient steps
        (counted over the run).
    target_entropy: the entropy the learned alpha aims for ('auto': -dim(action space)).
    jit_compile: compile the training and the acting calls with XLA (None: on, except for a
        training call of one gradient step, faster here as a plain TF graph).
    log_interval: log every this many finished episodes.
    eval_env: an env (or env id, seeded with seed + 1000) to evaluate the deterministic
        policy (tanh of the Gaussian's mean) on.
    eval_freq: evaluate every this many env steps (0: at every log row when eval_env is
        given); logged as eval/mean_reward, the best model written to
        <log dir>/best_model.zip.
    eval_episodes: episodes per evaluation.
    callback: called after every vectorized env step as ``callback(model, info)``; returning
        False stops.
    load_path: continue from this saved model (its network is used).
    checkpoint_interval: write a resumable checkpoint (the model, replay buffer, generators)
        every this many env steps (0: never).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints).
    resume: continue from the newest checkpoint in checkpoint_path (total_timesteps counts
        the whole run, including the steps done before the checkpoint).
    **network_kwargs: passed to the network builder ('mlp': num_layers (2), num_hidden (256
        here), activation (relu here), layer_sizes, layer_norm).
    """
    model, env, options = start_learning(ALGORITHM, build_model, locals(), ALIASES,
                                         architecture=Model.architecture)
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run SAC's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all)."""
    hp = model.hyperparameters
    schedule = TrainSchedule(int(hp["train_freq"]), model.gradient_steps,
                             int(hp["learning_starts"]), model.batch_size)
    lr_fn = get_schedule_fn(hp["lr"])
    loop = TrainingLoop(model, env, total_timesteps, options, log_unit="episodes",
                        loss_names=LOSSES, seed=hp.get("seed"))
    # After a resume's restore: normalized with the restored statistics.
    obs = reset_env(env, model.replay_buffer)
    stats: dict[str, float] = {"learning_rate": lr_fn(loop.progress_remaining)}
    while loop.running():
        if schedule.warming_up(model.num_timesteps):
            actions = model.random_actions()
        elif schedule.trains(loop.iterations, len(model.replay_buffer)):
            lr = lr_fn(loop.progress_remaining)
            step_stats, actions = model.train_and_act(obs, lr)
            stats.update(step_stats, learning_rate=lr)
        else:
            actions = model.act(obs)
        obs = step_and_store(env, model.replay_buffer, model.raw_replay, loop.episodes, obs,
                             actions, model.to_env(actions), model.gamma)[0]
        stats["n_updates"] = model.grad_steps
        if loop.end_iteration(env.num_envs, stats):
            break
    return model
