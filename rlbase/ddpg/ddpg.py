"""Deep Deterministic Policy Gradient (Lillicrap et al. 2016), with TD3's options."""

from __future__ import annotations

import math
import sys
import time
import traceback
from collections import deque
from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np

from rlbase.common import logger
from rlbase.common.cmd_util import as_vec_env
from rlbase.common.errors import NonFiniteError, RLBaseError
from rlbase.common.misc_util import set_global_seeds
from rlbase.common.mpi_util import allreduce_mean, check_synced, get_comm, mpi_rank
from rlbase.common.replay_buffer import ReplayBuffer
from rlbase.common.tf_util import configure_threads
from rlbase.common.vec_env import VecEnv
from rlbase.ddpg.agent import DDPGModel, scale_actions
from rlbase.ddpg.ddpg_learner import Learner
from rlbase.ddpg.models import Actor, Critic, check_action_space, make_torso
from rlbase.ddpg.noise import parse_noise_type

# Logged per epoch, averaged over MPI workers (eval/* come from each worker's own eval env).
SHARED_KEYS = ("rollout/return", "rollout/return_std", "rollout/return_history",
               "rollout/return_history_std", "rollout/episode_steps", "rollout/episodes",
               "rollout/actions_mean", "rollout/actions_std", "rollout/Q_mean",
               "train/loss_actor", "train/loss_critic", "train/param_noise_distance",
               "train/param_noise_stddev", "total/steps_per_second")


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
          **network_kwargs: Any) -> DDPGModel:
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
    **network_kwargs: passed to the network builder (num_layers, num_hidden, activation,
        layer_norm; 'mlp' here defaults to relu).
    """
    hyperparameters = {k: v for k, v in locals().items()
                       if k not in ("env", "eval_env", "callback", "network_kwargs",
                                    "load_path")}
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
    set_global_seeds(seed)
    env = as_vec_env(env, seed)
    check_action_space(env.action_space)
    if not isinstance(env.observation_space, gym.spaces.Box):
        raise RLBaseError(f"ddpg needs a Box observation space, got {env.observation_space}")
    configure_threads(small_model=True)
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
        _Loop(model, env, eval_env, total_timesteps, nb_epoch_cycles, nb_rollout_steps,
              nb_train_steps, nb_eval_steps, batch_size, buffer_size, reward_scale,
              learning_starts, param_noise_adaption_interval, render, render_eval, comm,
              rank_seed, callback).run()
    except BaseException:
        if comm is not None:  # the other workers wait in a collective: stop the whole job
            traceback.print_exc()
            sys.stderr.flush()
            comm.Abort(1)
        raise
    return model


class _Loop:
    """The training loop: cycles of rollout steps, each fused with its gradient steps."""

    def __init__(self, model: DDPGModel, env: VecEnv, eval_env: VecEnv | None, total: int,
                 cycles: int, rollout_steps: int, train_steps: int, eval_steps: int,
                 batch_size: int, buffer_size: int, reward_scale: float, learning_starts: int,
                 adapt_interval: int, render: bool, render_eval: bool, comm: Any | None,
                 seed: int | None, callback: Callable | None):
        self.model, self.env, self.eval_env, self.total = model, env, eval_env, total
        self.cycles, self.rollout_steps, self.train_steps = cycles, rollout_steps, train_steps
        self.eval_steps, self.batch_size, self.reward_scale = eval_steps, batch_size, reward_scale
        self.learning_starts, self.adapt_interval = learning_starts, adapt_interval
        self.render, self.render_eval, self.comm, self.callback = render, render_eval, comm, \
            callback
        self.rng = np.random.default_rng(None if seed is None else seed + 7)
        self.buffer = ReplayBuffer(buffer_size, model.ob_space.shape, np.float32,
                                   ac_shape=model.ac_space.shape, ac_dtype=np.float32)
        model.replay_buffer = self.buffer  # kept for inspection and for continuing in a script
        self.nenvs = env.num_envs
        self.grad_steps = 0

    def _gradient_steps(self, r: int) -> int:
        """Gradient steps due at rollout step r of a cycle (they sum to train_steps)."""
        t, n = self.train_steps, self.rollout_steps
        return (r + 1) * t // n - r * t // n

    def _batch(self) -> tuple[np.ndarray, ...]:
        g, b = self.model.learner.max_steps, self.batch_size
        batch = self.buffer.get(self.buffer.sample_indices(g * b, self.rng))
        return tuple(x.reshape(g, b, *x.shape[1:]) for x in
                     (batch.obs, batch.actions, batch.rewards, batch.next_obs, batch.dones))

    def run(self) -> None:
        model, env, nenvs = self.model, self.env, self.nenvs
        obs = env.reset()
        model.reset_noise()
        running, lengths = np.zeros(nenvs), np.zeros(nenvs, dtype=int)
        history: deque[float] = deque(maxlen=100)
        eval_history: deque[float] = deque(maxlen=100)
        eval_obs = self.eval_env.reset() if self.eval_env is not None else None
        t, epoch, tstart = 0, 0, time.perf_counter()
        stats: dict[str, float] = {}
        while t < self.total:
            epoch += 1
            ep_returns, ep_steps, actions_log, qs, losses, distances = [], [], [], [], [], []
            eval_returns, eval_qs, eval_running = [], [], np.zeros(
                self.eval_env.num_envs if self.eval_env is not None else 0)
            for _ in range(self.cycles):
                if nenvs > 1:  # episodes end at different times: perturb once per cycle
                    model.reset_noise()
                for r in range(self.rollout_steps):
                    n = self._gradient_steps(r)
                    if t < self.learning_starts:
                        actions = self.rng.uniform(-1.0, 1.0, (nenvs, *model.ac_space.shape))
                    elif n and len(self.buffer) >= self.batch_size:
                        stats, actions, q = model.train_and_act(self._batch(), n, obs)
                        if not np.isfinite(stats["loss_critic"]):
                            raise NonFiniteError(f"ddpg: loss_critic became "
                                                 f"{stats['loss_critic']} at gradient step "
                                                 f"{self.grad_steps + n}")
                        losses.append((stats["loss_actor"], stats["loss_critic"]))
                        qs.append(q)
                        distances += self._maybe_adapt(n)
                    else:
                        actions, q = model.act(obs, explore=True)
                        qs.append(q)
                    actions_log.append(actions)
                    new_obs, rewards, terminated, truncated, infos = env.step(
                        scale_actions(actions, model.low, model.high))
                    if self.render:
                        env.render()
                    done = np.logical_or(terminated, truncated)
                    next_obs = new_obs
                    if done.any():  # the true last observation, not the next episode's first
                        next_obs = new_obs.copy()
                        for i in np.flatnonzero(done):
                            final = infos[i].get("final_observation")
                            if final is not None:
                                next_obs[i] = final
                    self.buffer.add(obs, actions, rewards * self.reward_scale, next_obs,
                                    terminated, truncated)
                    model.update_obs_stats(obs)
                    obs = new_obs
                    t += nenvs
                    model.num_timesteps += nenvs
                    running += rewards
                    lengths += 1
                    for i in np.flatnonzero(done):
                        ep_returns.append(running[i])
                        ep_steps.append(lengths[i])
                        history.append(running[i])
                        running[i], lengths[i] = 0.0, 0
                        if nenvs == 1:
                            model.reset_noise()
                    if t >= self.total:
                        break
                if self.eval_env is not None:
                    eval_obs = self._evaluate(eval_obs, eval_running, eval_returns, eval_qs,
                                              eval_history)
                if self.callback is not None and self.callback(model, {
                        "num_timesteps": model.num_timesteps, "total_timesteps": self.total,
                        "epoch": epoch, **stats}) is False:
                    self.total = t
                if t >= self.total:
                    break
            self._log(epoch, t, tstart, ep_returns, ep_steps, history, actions_log, qs,
                      losses, distances, eval_returns, eval_qs, eval_history)

    def _maybe_adapt(self, n: int) -> list[float]:
        before = self.grad_steps
        self.grad_steps += n
        model = self.model
        if model.param_noise is None or \
                self.grad_steps // self.adapt_interval == before // self.adapt_interval:
            return []
        obs = self.buffer.get(self.buffer.sample_indices(self.batch_size, self.rng)).obs
        return [model.adapt_param_noise(obs)]

    def _evaluate(self, obs: np.ndarray, running: np.ndarray, returns: list, qs: list,
                  history: deque) -> np.ndarray:
        env, model = self.eval_env, self.model
        for _ in range(self.eval_steps):
            actions, q = model.act(obs, explore=False)
            obs, rewards, terminated, truncated, _ = env.step(
                scale_actions(actions, model.low, model.high))
            if self.render_eval:
                env.render()
            running += rewards
            qs.append(q)
            for i in np.flatnonzero(np.logical_or(terminated, truncated)):
                returns.append(running[i])
                history.append(running[i])
                running[i] = 0.0
        return obs

    def _log(self, epoch: int, t: int, tstart: float, ep_returns: list, ep_steps: list,
             history: deque, actions_log: list, qs: list, losses: list, distances: list,
             eval_returns: list, eval_qs: list, eval_history: deque) -> None:
        duration = time.perf_counter() - tstart
        acts = np.concatenate(actions_log) if actions_log else np.zeros(1)
        loss = np.array(losses) if losses else np.full((1, 2), np.nan)
        actor_losses = loss[np.isfinite(loss[:, 0]), 0]
        noise = self.model.param_noise

        def mean(x: Any) -> float:
            return float(np.mean(x)) if len(x) else float("nan")

        def std(x: Any) -> float:
            return float(np.std(x)) if len(x) else float("nan")

        values = [mean(ep_returns), std(ep_returns), mean(history), std(history),
                  mean(ep_steps), len(ep_returns), float(acts.mean()), float(acts.std()),
                  mean(np.concatenate(qs)) if qs else float("nan"), mean(actor_losses),
                  float(loss[:, 1].mean()), mean(distances),
                  noise.current_stddev if noise is not None else float("nan"),
                  t / max(duration, 1e-9)]
        size = 1
        if self.comm is not None:
            size = self.comm.Get_size()
            values = allreduce_mean(np.array(values), self.comm).tolist()
            check_synced(self.model.learner.synced_variables, self.comm)
        if mpi_rank() != 0:
            return
        for key, value in zip(SHARED_KEYS, values):
            logger.record_tabular(key, value)
        if self.eval_env is not None:
            logger.record_tabular("eval/return", mean(eval_returns))
            logger.record_tabular("eval/return_history", mean(eval_history))
            logger.record_tabular("eval/Q", mean(np.concatenate(eval_qs)) if eval_qs
                                  else float("nan"))
            logger.record_tabular("eval/episodes", len(eval_returns))
        logger.record_tabular("total/sps_all_workers", values[-1] * size)
        logger.record_tabular("total/duration", duration)
        logger.record_tabular("total/epochs", epoch)
        logger.record_tabular("total/steps", t * size)
        logger.dump_tabular()
