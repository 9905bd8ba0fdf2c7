"""Deep Deterministic Policy Gradient (Lillicrap et al. 2016), with TD3's options."""

from __future__ import annotations

import math
import sys
import traceback
from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np

from rlbase.common.checkpoint import Checkpointer
from rlbase.common.cmd_util import as_vec_env
from rlbase.common.errors import RLBaseError
from rlbase.common.misc_util import set_global_seeds
from rlbase.common.mpi_util import get_comm, mpi_rank
from rlbase.common.tf_util import configure_threads
from rlbase.common.vec_env import VecEnv
from rlbase.ddpg.agent import ALGORITHM, DDPGModel
from rlbase.ddpg.ddpg_learner import Learner
from rlbase.ddpg.loop import SHARED_KEYS, TrainingLoop
from rlbase.ddpg.models import Actor, Critic, check_action_space, make_torso
from rlbase.ddpg.noise import parse_noise_type

__all__ = ["SHARED_KEYS", "learn"]


def _check(**values: Any) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise RLBaseError(f"{name} must be a positive integer, got {value!r}")


def learn(network: str | Callable, env: VecEnv | Any, seed: int | None = None,
          total_timesteps: int | None = None, nb_epochs: int | None = None,
          nb_epoch_cycles: int = 20, nb_rollout_steps: int = 100, reward_scale: float = 1.0,
          render: bool = False, render_eval: bool = False,
          noise_type: str = "adaptive-param_0.2", normalize_returns: bool = False,
          normalize_observations: bool = True, critic_l2_reg: float = 1e-2,
          actor_lr: float = 1e-4, critic_lr: float = 1e-3, popart: bool = False,
          gamma: float = 0.99, clip_norm: float | None = None, nb_train_steps: int = 50,
          nb_eval_steps: int = 100, batch_size: int = 64, tau: float = 0.01,
          eval_env: VecEnv | Any | None = None, param_noise_adaption_interval: int = 50,
          buffer_size: int = int(1e6), learning_starts: int = 0, twin_q: bool = False,
          policy_delay: int = 1, target_noise: float = 0.0, target_noise_clip: float = 0.5,
          load_path: str | None = None, layer_sizes: Sequence[int] | None = None,
          jit_compile: bool | None = None,
          callback: Callable[[DDPGModel, dict[str, Any]], bool | None] | None = None,
          checkpoint_interval: int = 0, checkpoint_path: str | None = None,
          resume: bool = False, **network_kwargs: Any) -> DDPGModel:
    """Train a deterministic actor and its critic(s) with DDPG; return the DDPGModel.

    network: a feed-forward network name ('mlp', ...) or builder for actor and critic.
    env: a VecEnv with a Box action space (a gymnasium env or an env id is wrapped).
    seed: seed of python, numpy, TensorFlow, the envs and the noise (offset per MPI rank).
    total_timesteps: env steps this worker takes, summed over its envs (exclusive with
        nb_epochs).
    nb_epochs: epochs of nb_epoch_cycles cycles (None with no total_timesteps: 500).
    nb_epoch_cycles: cycles per epoch; statistics are logged once per epoch.
    nb_rollout_steps: vectorized env steps per cycle.
    reward_scale: rewards are multiplied by this before they are stored.
    render / render_eval: render the training / evaluation env at every step.
    noise_type: 'none', 'adaptive-param_S', 'normal_S', 'ou_S' or a comma-separated mix.
    normalize_returns: the critic learns normalized returns (running statistics).
    normalize_observations: running mean/std observation normalization, clipped to [-5, 5].
    critic_l2_reg: L2 penalty on the critics' hidden kernels.
    actor_lr / critic_lr: Adam learning rates.
    popart: return normalization that rescales the critics' output layers (PopArt).
    gamma: discount factor.
    clip_norm: clip the actor's and the critic's gradient global norm (None: no clipping).
    nb_train_steps: gradient steps per cycle, spread evenly over its rollout steps.
    nb_eval_steps: eval env steps per cycle (deterministic actions).
    batch_size: transitions per gradient step.
    tau: soft target update rate: target <- (1 - tau) target + tau online.
    eval_env: an env to evaluate in every cycle (None: no evaluation).
    param_noise_adaption_interval: adapt the parameter-noise scale every this many gradient
        steps.
    buffer_size: transitions the replay buffer keeps.
    learning_starts: env steps with uniformly random actions, and no training, at the start.
    twin_q: TD3's two critics, trained on the smaller of their target values.
    policy_delay: update the actor and the targets every this many critic steps (TD3: 2).
    target_noise: stddev of Gaussian noise on the target action (TD3: 0.2; 0: none).
    target_noise_clip: that noise is clipped to [-target_noise_clip, target_noise_clip].
    load_path: start from this saved model (weights, optimizers, statistics).
    layer_sizes: hidden widths of actor and critic for network 'mlp' (e.g. (400, 300));
        None: num_layers layers of num_hidden units.
    jit_compile: compile the training call with XLA (None: on, except under MPI).
    callback: called after every cycle as ``callback(model, info)``; False stops training.
    checkpoint_interval: every this many env steps write a resumable checkpoint (networks,
        targets, optimizers, statistics, noise state, replay buffer, loop position, RNG
        states) to checkpoint_path as checkpoint_<steps>.zip (0: never; not under MPI).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints). Ctrl-C writes a
        checkpoint there too when either checkpoint option is given.
    resume: continue from the newest of those checkpoints (total_timesteps counts the whole
        run, including the steps done before the checkpoint); run it with the same settings.
    **network_kwargs: passed to the network builder (num_layers, num_hidden, activation,
        layer_norm; 'mlp' here defaults to relu).
    """
    hyperparameters = {k: v for k, v in locals().items()
                       if k not in ("env", "eval_env", "callback", "network_kwargs",
                                    "load_path", "resume")}
    if total_timesteps is not None and nb_epochs is not None:
        raise RLBaseError(f"give total_timesteps or nb_epochs, not both (got "
                          f"{total_timesteps!r} and {nb_epochs!r})")
    _check(nb_epoch_cycles=nb_epoch_cycles, nb_rollout_steps=nb_rollout_steps,
           batch_size=batch_size, buffer_size=buffer_size, policy_delay=policy_delay,
           param_noise_adaption_interval=param_noise_adaption_interval,
           **({"total_timesteps": total_timesteps} if total_timesteps is not None else {}),
           **({"nb_epochs": nb_epochs} if nb_epochs is not None else {}))
    if isinstance(nb_train_steps, bool) or not isinstance(nb_train_steps, int) or \
            nb_train_steps < 0:
        raise RLBaseError(f"nb_train_steps must be an integer >= 0, got {nb_train_steps!r}")
    if not 0.0 < tau <= 1.0 or target_noise < 0 or target_noise_clip < 0 or learning_starts < 0:
        raise RLBaseError(f"need 0 < tau <= 1, target_noise >= 0, target_noise_clip >= 0 and "
                          f"learning_starts >= 0, got tau={tau!r}, target_noise={target_noise!r},"
                          f" target_noise_clip={target_noise_clip!r}, "
                          f"learning_starts={learning_starts!r}")
    comm = get_comm()
    comm = comm if comm is not None and comm.Get_size() > 1 else None
    rank = mpi_rank()
    if comm is not None and (checkpoint_interval or resume):
        # Each worker has its own buffer and generators: one file cannot resume them all.
        raise RLBaseError(f"ddpg: checkpoint_interval and resume are not supported under MPI "
                          f"(got checkpoint_interval={checkpoint_interval!r}, "
                          f"resume={resume!r}); run with one process")
    checkpointer = Checkpointer(ALGORITHM, checkpoint_path, checkpoint_interval,
                                writer=comm is None)
    set_global_seeds(seed)
    env = as_vec_env(env, seed)
    check_action_space(env.action_space)
    if not isinstance(env.observation_space, gym.spaces.Box):
        raise RLBaseError(f"ddpg needs a Box observation space, got {env.observation_space}")
    # TF's own thread pools, not one thread: each env step's call trains on a whole minibatch
    # (400x300 nets at batch 256: 279-340 steps/s against 231 on one thread). MPI workers
    # already share the cores, one thread each.
    configure_threads(small_model=comm is not None)
    ob_space, ac_space = env.observation_space, env.action_space
    nb_actions = int(ac_space.shape[0])
    rank_seed = None if seed is None else int(seed) + 1000 * rank
    action_noise, param_noise = parse_noise_type(noise_type, nb_actions,
                                                 np.random.default_rng(rank_seed))
    network_kwargs = dict(network_kwargs)
    if network == "mlp":
        network_kwargs.setdefault("activation", "relu")

    def make_actor() -> Actor:
        return Actor(ob_space.shape, nb_actions, make_torso(network, layer_sizes,
                                                              network_kwargs))

    def make_critic() -> Critic:
        return Critic(ob_space.shape, nb_actions, make_torso(network, layer_sizes,
                                                               network_kwargs))

    max_steps = max(1, math.ceil(nb_train_steps / nb_rollout_steps))
    learner = Learner(make_actor, make_critic, ob_space.shape, nb_actions, gamma, tau, twin_q,
                      policy_delay, target_noise, target_noise_clip, normalize_returns, popart,
                      critic_l2_reg, actor_lr, critic_lr, clip_norm, batch_size, max_steps,
                      param_noise is not None, comm,
                      True if jit_compile is None else jit_compile, rank_seed)
    model = DDPGModel(learner, ob_space, ac_space, normalize_observations, action_noise,
                      param_noise, network if isinstance(network, str) else repr(network),
                      {**network_kwargs, "layer_sizes": layer_sizes}, hyperparameters, comm)
    if load_path is not None:
        model.load(load_path)
    if total_timesteps is None:
        total_timesteps = (nb_epochs or 500) * nb_epoch_cycles * nb_rollout_steps * env.num_envs
    eval_env = as_vec_env(eval_env) if eval_env is not None else None
    try:
        loop = TrainingLoop(model, env, eval_env, total_timesteps, nb_epoch_cycles,
                            nb_rollout_steps, nb_train_steps, nb_eval_steps, batch_size,
                            buffer_size, reward_scale, learning_starts,
                            param_noise_adaption_interval, render, render_eval, comm,
                            rank_seed, callback, checkpointer)
        loop.run(checkpointer.restore(model) if resume else None)
    except BaseException:
        if comm is not None:  # the other workers wait in a collective: stop the whole job
            traceback.print_exc()
            sys.stderr.flush()
            comm.Abort(1)
        raise
    return model
