"""Deep Deterministic Policy Gradient (Lillicrap et al. 2016), with TD3's options."""

from __future__ import annotations

import sys
import traceback
from typing import Any, Callable

import numpy as np

from rlbase.common.config import warn_deprecated
from rlbase.common.errors import RLBaseError
from rlbase.common.her_baselines import refuse_baselines_names
from rlbase.common.learning import start_learning
from rlbase.common.loop import LoopOptions, TrainingLoop, crossings
from rlbase.common.mpi_util import check_synced, mpi_rank
from rlbase.common.off_policy import TrainSchedule, reset_env, step_and_store
from rlbase.common.vec_env import VecEnv
from rlbase.ddpg.config import CONFIG, DDPGConfig
from rlbase.ddpg.model import ALGORITHM, Model, build_model

LOSSES = ("critic_loss", "actor_loss")
# Baselines' defaults of the spellings that only set the length of a run.
BASELINES_EPOCHS = {"nb_epochs": 500, "nb_epoch_cycles": 20, "nb_rollout_steps": 100}
# Under MPI the workers' weights are compared every this many vectorized steps.
SYNC_CHECK_INTERVAL = 2000
C = DDPGConfig


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int | None = None,
          seed: int | None = None, *, buffer_size: int = C.buffer_size,
          replay_buffer_class: str | None = C.replay_buffer_class,
          replay_buffer_kwargs: dict | None = C.replay_buffer_kwargs,
          learning_starts: int = C.learning_starts, batch_size: int = C.batch_size,
          tau: float = C.tau, gamma: float = C.gamma, train_freq: int = C.train_freq,
          gradient_steps: int = C.gradient_steps, actor_lr: float = C.actor_lr,
          critic_lr: float = C.critic_lr, max_grad_norm: float | None = C.max_grad_norm,
          critic_l2_reg: float = C.critic_l2_reg, noise_type: str = C.noise_type,
          param_noise_adaption_interval: int = C.param_noise_adaption_interval,
          normalize_observations: bool = C.normalize_observations,
          normalize_returns: bool = C.normalize_returns, popart: bool = C.popart,
          reward_scale: float = C.reward_scale, twin_q: bool = C.twin_q,
          policy_delay: int = C.policy_delay, target_noise: float = C.target_noise,
          target_noise_clip: float = C.target_noise_clip,
          target_update_gradient_steps: int = C.target_update_gradient_steps,
          action_l2: float = C.action_l2, random_eps: float = C.random_eps,
          target_min: float | None = C.target_min, target_max: float | None = C.target_max,
          obs_clip: float = C.obs_clip, obs_std_min: float = C.obs_std_min,
          render: bool = C.render,
          jit_compile: bool | None = C.jit_compile, log_interval: int = C.log_interval,
          eval_freq: int = C.eval_freq, eval_episodes: int = C.eval_episodes,
          checkpoint_interval: int = C.checkpoint_interval,
          precision: str = C.precision,
          eval_env: VecEnv | Any | None = None,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_path: str | None = None,
          resume: bool = False, **network_kwargs: Any) -> Model:
    """Train a deterministic actor and its critic(s) with DDPG (TD3 with twin_q, policy_delay
    and target_noise) and return the :class:`~rlbase.ddpg.model.Model`.

    The keyword arguments from ``buffer_size`` to ``precision`` are the fields of
    :class:`~rlbase.ddpg.config.DDPGConfig` (type, unit, range and meaning there, and in
    rlbase/docs/algorithms/ddpg.md); Stable-Baselines3's names (``learning_rate``,
    ``target_policy_noise``, ``train_freq=(n, "step")``, ...) are accepted too.

    network: a feed-forward registry network name ('mlp', ...) or builder, the torso of the
        actor and of every critic.
    env: a VecEnv with a Box action space (a gymnasium env or an env id is wrapped).
    total_timesteps: env steps to train for, summed over envs (None: 1e6, or Baselines'
        nb_epochs * nb_epoch_cycles * nb_rollout_steps * num_envs when nb_epochs is given).
    seed: seed of python, numpy, TensorFlow, the envs, the noise and the replay sampling
        (each MPI worker its own streams).
    eval_env: an env (or env id, seeded with seed + 1000) to evaluate the deterministic
        policy on.
    callback: called after every vectorized env step as ``callback(model, info)``; returning
        False stops.
    load_path: continue from this saved model (its network and architecture are used).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints); a checkpoint
        holds the model, replay buffer, noise processes, perturbed actor and generators (not
        under MPI).
    resume: continue from the newest checkpoint in checkpoint_path (total_timesteps counts
        the whole run, including the steps done before the checkpoint).
    **network_kwargs: passed to the network builder ('mlp': layer_sizes, num_layers,
        num_hidden, activation (relu here), layer_norm). Baselines' nb_epochs,
        nb_epoch_cycles, nb_rollout_steps, nb_train_steps and clip_norm are accepted with a
        DeprecationWarning; nb_eval_steps and render_eval only where they change nothing.
    """
    _baselines_evaluation(network_kwargs, eval_env)
    refuse_baselines_names(network_kwargs)
    epoch_steps = _baselines_run_length(network_kwargs, total_timesteps)
    model, env, options = start_learning(CONFIG, build_model, locals())
    if epoch_steps is not None:
        total_timesteps = epoch_steps * env.num_envs
    return train(model, env, int(1e6) if total_timesteps is None else total_timesteps, options)


def _baselines_evaluation(network_kwargs: dict[str, Any], eval_env: Any) -> None:
    """Pop Baselines' evaluation spellings where they change nothing (no eval_env, no
    rendering); refuse them where Baselines would have acted on them."""
    steps = network_kwargs.pop("nb_eval_steps", None)
    if steps is not None and eval_env is not None:
        raise RLBaseError(f"ddpg: nb_eval_steps={steps!r} is not supported: evaluation plays "
                          f"whole episodes; write eval_episodes=N and eval_freq=M")
    if network_kwargs.pop("render_eval", False):
        raise RLBaseError("ddpg: render_eval=True is not supported: record the evaluation "
                          "env with VecVideoRecorder instead")


def _baselines_run_length(network_kwargs: dict[str, Any], total_timesteps: int | None
                          ) -> int | None:
    """Pop Baselines' run-length spellings; with nb_epochs, the vectorized steps they ask for
    (nb_epochs * nb_epoch_cycles * nb_rollout_steps)."""
    cycles = network_kwargs.pop("nb_epoch_cycles", None)
    epochs = network_kwargs.pop("nb_epochs", None)
    if cycles is not None:
        warn_deprecated(ALGORITHM, "nb_epoch_cycles", "total_timesteps")
    if epochs is None:
        return None
    warn_deprecated(ALGORITHM, "nb_epochs", "total_timesteps")
    if total_timesteps is not None:
        raise RLBaseError(f"give total_timesteps or nb_epochs, not both (got "
                          f"{total_timesteps!r} and {epochs!r})")
    rollout = network_kwargs.get("nb_rollout_steps", BASELINES_EPOCHS["nb_rollout_steps"])
    cycles = BASELINES_EPOCHS["nb_epoch_cycles"] if cycles is None else cycles
    for name, value in (("nb_epochs", epochs), ("nb_epoch_cycles", cycles),
                        ("nb_rollout_steps", rollout)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise RLBaseError(f"{name} must be a positive integer, got {value!r}")
    return int(epochs) * int(cycles) * int(rollout)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run DDPG's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all). Under MPI every worker runs it on its own env and buffer."""
    config = model.config
    comm = model.comm
    if comm is not None and (options.checkpoint_interval or options.resume):
        # Each worker has its own buffer and generators: one file cannot resume them all.
        raise RLBaseError(f"ddpg: checkpoint_interval and resume are not supported under MPI "
                          f"(got checkpoint_interval={options.checkpoint_interval!r}, "
                          f"resume={options.resume!r}); run with one process")
    schedule = TrainSchedule(config.train_freq, config.gradient_steps, config.learning_starts,
                             config.batch_size)
    actor_lr, critic_lr = config.actor_lr, config.critic_lr
    render = config.render
    adapt_every = config.param_noise_adaption_interval
    num_envs = env.num_envs
    # Before the loop: with resume it replaces these fresh draws by the checkpoint's.
    model.reset_exploration()
    # Under MPI the workers stop together (a callback or Ctrl-C on one rank stops all).
    loop = TrainingLoop(model, env, total_timesteps, options, log_unit="episodes",
                        loss_names=LOSSES, writer=mpi_rank() == 0, seed=config.seed,
                        comm=comm)
    # After a resume's restore: normalized with the restored statistics.
    obs = reset_env(env, model.replay_buffer)
    stats: dict[str, float] = {"learning_rate": actor_lr, "critic_learning_rate": critic_lr}
    try:
        while loop.running():
            t, stored = model.num_timesteps, len(model.replay_buffer)
            warming_up = schedule.warming_up(t)
            phases = 0 if warming_up else schedule.phases(t, num_envs, stored)
            if warming_up:
                actions = model.random_actions()
            elif phases:
                # The latest value of each statistic is reported (actor_loss only comes
                # from calls that made an actor step).
                step_stats, actions = model.train_and_act(obs, actor_lr, critic_lr, phases)
                stats.update(step_stats)
            else:
                actions, _ = model.act(obs, explore=True)
            if model.param_noise is not None and not warming_up and \
                    stored >= model.batch_size and crossings(t + num_envs, num_envs, adapt_every):
                model.adapt_param_noise()
            new_obs, rewards, done, infos = step_and_store(
                env, model.replay_buffer, model.raw_replay, loop.episodes, obs, actions,
                model.to_env(actions), model.gamma)
            step = {"new_obs": new_obs, "rewards": rewards, "dones": done, "infos": infos,
                    "actions": actions}
            if render:
                env.render()
            model.update_obs_stats(obs)
            model.end_episodes(done)
            obs = new_obs
            stats["n_updates"] = model.grad_steps
            if model.param_noise is not None:
                stats["param_noise_stddev"] = model.param_noise.current_stddev
                stats["param_noise_distance"] = model.param_noise_distance
            if comm is not None and (loop.iterations + 1) % SYNC_CHECK_INTERVAL == 0:
                check_synced(model.synced_variables, comm)
            if loop.end_iteration(num_envs, stats, step=step):
                break
    except BaseException:
        if comm is not None:  # the other workers wait in a collective: stop the whole job
            traceback.print_exc()
            sys.stderr.flush()
            comm.Abort(1)
        raise
    return model
