"""Deep Deterministic Policy Gradient (Lillicrap et al. 2016), with TD3's options."""

from __future__ import annotations

import sys
import traceback
from typing import Any, Callable

import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.learning import Alias, start_learning, warn_deprecated
from rlbase.common.loop import LoopOptions, TrainingLoop, crossings
from rlbase.common.mpi_util import check_synced, mpi_rank
from rlbase.common.off_policy import TrainSchedule, reset_env, step_and_store
from rlbase.common.vec_env import VecEnv
from rlbase.ddpg.model import ALGORITHM, Model, build_model

LOSSES = ("critic_loss", "actor_loss")
# Baselines' spellings: each cycle it took nb_rollout_steps vectorized steps, then
# nb_train_steps gradient steps, which is SB3's train_freq / gradient_steps.
ALIASES = {"nb_rollout_steps": Alias("train_freq"), "nb_train_steps": Alias("gradient_steps"),
           "clip_norm": Alias("max_grad_norm")}
# Baselines' defaults of the spellings that only set the length of a run.
BASELINES_EPOCHS = {"nb_epochs": 500, "nb_epoch_cycles": 20, "nb_rollout_steps": 100}
# Under MPI the workers' weights are compared every this many vectorized steps.
SYNC_CHECK_INTERVAL = 2000


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int | None = None,
          seed: int | None = None, buffer_size: int = int(1e6), learning_starts: int = 0,
          batch_size: int = 64, tau: float = 0.01, gamma: float = 0.99, train_freq: int = 1,
          gradient_steps: int = 1, actor_lr: float = 1e-4, critic_lr: float = 1e-3,
          max_grad_norm: float | None = None, critic_l2_reg: float = 1e-2,
          noise_type: str = "adaptive-param_0.2", param_noise_adaption_interval: int = 50,
          normalize_observations: bool = True, normalize_returns: bool = False,
          popart: bool = False, reward_scale: float = 1.0, twin_q: bool = False,
          policy_delay: int = 1, target_noise: float = 0.0, target_noise_clip: float = 0.5,
          render: bool = False, jit_compile: bool | None = None, log_interval: int = 4,
          eval_env: VecEnv | Any | None = None, eval_freq: int = 0, eval_episodes: int = 5,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_interval: int = 0,
          checkpoint_path: str | None = None, resume: bool = False,
          **network_kwargs: Any) -> Model:
    """Train a deterministic actor and its critic(s) with DDPG (TD3 with twin_q, policy_delay
    and target_noise) and return the :class:`~rlbase.ddpg.model.Model`.

    network: a feed-forward registry network name ('mlp', ...) or builder, the torso of the
        actor and of every critic.
    env: a VecEnv with a Box action space (a gymnasium env or an env id is wrapped).
    total_timesteps: env steps to train for, summed over envs (None: 1e6, or Baselines'
        nb_epochs * nb_epoch_cycles * nb_rollout_steps * num_envs when nb_epochs is given).
    seed: seed of python, numpy, TensorFlow, the envs, the noise and the replay sampling
        (each MPI worker its own streams).
    buffer_size: transitions the replay buffer keeps.
    learning_starts: env steps with uniformly random actions, and no training, at the start.
    batch_size: transitions per gradient step.
    tau: soft target update rate: target <- (1 - tau) target + tau online.
    gamma: discount factor (1: a time-limit truncation ends the return; see
        rlbase.common.transitions).
    train_freq: vectorized env steps between training phases (Baselines' nb_rollout_steps).
    gradient_steps: gradient steps per training phase, run in one compiled call with the next
        step's acting (Baselines' nb_train_steps; 0: no training).
    actor_lr: the actor's Adam learning rate (SB3's learning_rate sets both rates).
    critic_lr: the critics' Adam learning rate.
    max_grad_norm: clip the actor's and the critics' gradient global norm (None: no
        clipping; Baselines' clip_norm).
    critic_l2_reg: L2 penalty on the critics' hidden kernels.
    noise_type: 'none', 'adaptive-param_S', 'normal_S', 'ou_S' or a comma-separated mix;
        every env has its own action-noise process.
    param_noise_adaption_interval: adapt the parameter-noise scale every this many gradient
        steps.
    normalize_observations: running mean/std observation normalization, clipped to [-5, 5]
        (False: the networks see the raw observations, unclipped).
    normalize_returns: the critics learn normalized returns (running statistics).
    popart: return normalization that rescales the critics' output layers (PopArt).
    reward_scale: sampled rewards are multiplied by this (after VecNormalize's scaling).
    twin_q: TD3's two critics, trained on the smaller of their target values.
    policy_delay: update the actor and the targets every this many critic steps (TD3: 2).
    target_noise: stddev of Gaussian noise on the target action (TD3: 0.2; 0: none).
    target_noise_clip: that noise is clipped to [-target_noise_clip, target_noise_clip].
    render: render the training env at every step.
    jit_compile: compile the training call with XLA (None: on, except under MPI and for
        convnets (image entries of Dict/Tuple observations) on a CPU).
    log_interval: log every this many finished episodes.
    eval_env: an env (or env id, seeded with seed + 1000) to evaluate the deterministic
        policy on.
    eval_freq: evaluate every this many env steps (0: at every log row when eval_env is
        given); logged as eval/mean_reward, the best model written to
        <log dir>/best_model.zip.
    eval_episodes: episodes per evaluation.
    callback: called after every vectorized env step as ``callback(model, info)``; returning
        False stops.
    load_path: continue from this saved model (its network and architecture are used).
    checkpoint_interval: write a resumable checkpoint (the model, replay buffer, noise
        processes, perturbed actor, generators) every this many env steps (0: never; not
        under MPI).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints).
    resume: continue from the newest checkpoint in checkpoint_path (total_timesteps counts
        the whole run, including the steps done before the checkpoint).
    **network_kwargs: passed to the network builder ('mlp': layer_sizes, num_layers,
        num_hidden, activation (relu here), layer_norm). Baselines' nb_epochs,
        nb_epoch_cycles, nb_rollout_steps, nb_train_steps, clip_norm, nb_eval_steps and
        render_eval are accepted with a DeprecationWarning.
    """
    epoch_steps = _baselines_run_length(network_kwargs, total_timesteps)
    model, env, options = start_learning(
        ALGORITHM, build_model, {k: v for k, v in locals().items() if k != "epoch_steps"},
        ALIASES, architecture=Model.architecture)
    if epoch_steps is not None:
        total_timesteps = epoch_steps * env.num_envs
    return train(model, env, int(1e6) if total_timesteps is None else total_timesteps, options)


def _baselines_run_length(network_kwargs: dict[str, Any], total_timesteps: int | None
                          ) -> int | None:
    """Pop Baselines' run-length spellings; with nb_epochs, the vectorized steps they ask for
    (nb_epochs * nb_epoch_cycles * nb_rollout_steps). Evaluation spellings are dropped."""
    for old, new in (("nb_eval_steps", "eval_episodes"), ("render_eval", "eval_env")):
        if old in network_kwargs:
            network_kwargs.pop(old)
            warn_deprecated(ALGORITHM, old, new, "ignored: evaluation plays whole episodes "
                            "on eval_env every eval_freq steps")
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
    hp = model.hyperparameters
    comm = model.comm
    if comm is not None and (options.checkpoint_interval or options.resume):
        # Each worker has its own buffer and generators: one file cannot resume them all.
        raise RLBaseError(f"ddpg: checkpoint_interval and resume are not supported under MPI "
                          f"(got checkpoint_interval={options.checkpoint_interval!r}, "
                          f"resume={options.resume!r}); run with one process")
    schedule = TrainSchedule(int(hp["train_freq"]), model.gradient_steps,
                             int(hp["learning_starts"]), model.batch_size)
    actor_lr, critic_lr = float(hp["actor_lr"]), float(hp["critic_lr"])
    render = bool(hp["render"])
    adapt_every = int(hp["param_noise_adaption_interval"])
    # Before the loop: with resume it replaces these fresh draws by the checkpoint's.
    model.reset_exploration()
    # Under MPI the workers stop together (a callback or Ctrl-C on one rank stops all).
    loop = TrainingLoop(model, env, total_timesteps, options, log_unit="episodes",
                        loss_names=LOSSES, writer=mpi_rank() == 0, seed=hp.get("seed"),
                        comm=comm)
    # After a resume's restore: normalized with the restored statistics.
    obs = reset_env(env, model.replay_buffer)
    stats: dict[str, float] = {"learning_rate": actor_lr, "critic_learning_rate": critic_lr}
    try:
        while loop.running():
            if schedule.warming_up(model.num_timesteps):
                actions = model.random_actions()
            elif schedule.trains(loop.iterations, len(model.replay_buffer)):
                # The latest value of each statistic is reported (actor_loss only comes
                # from calls that made an actor step).
                step_stats, actions = model.train_and_act(obs, actor_lr, critic_lr)
                stats.update(step_stats)
                if model.param_noise is not None and \
                        crossings(model.grad_steps, model.gradient_steps, adapt_every):
                    model.adapt_param_noise()
            else:
                actions, _ = model.act(obs, explore=True)
            new_obs, _, done, _ = step_and_store(env, model.replay_buffer, model.raw_replay,
                                                 loop.episodes, obs, actions,
                                                 model.to_env(actions), model.gamma)
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
            if loop.end_iteration(env.num_envs, stats):
                break
    except BaseException:
        if comm is not None:  # the other workers wait in a collective: stop the whole job
            traceback.print_exc()
            sys.stderr.flush()
            comm.Abort(1)
        raise
    return model
