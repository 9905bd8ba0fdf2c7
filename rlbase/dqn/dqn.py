"""Deep Q-learning with double Q, dueling heads, prioritized replay and parameter noise."""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Callable, Sequence

import numpy as np

from rlbase.common import logger
from rlbase.common.checkpoint import (
    Checkpointer,
    generator_state,
    object_state,
    restore_object_state,
    set_generator_state,
)
from rlbase.common.cmd_util import as_vec_env
from rlbase.common.errors import NonFiniteError, RLBaseError
from rlbase.common.misc_util import safemean, set_global_seeds
from rlbase.common.models import network_kwarg_names
from rlbase.common.policies import is_image_space, xla_is_faster
from rlbase.common.replay_buffer import (
    FrameStackReplayBuffer,
    PrioritizedReplayBuffer,
    ReplayBuffer,
)
from rlbase.common.schedules import LinearSchedule
from rlbase.common.signals import stop_requested
from rlbase.common.tf_util import configure_threads
from rlbase.common.vec_env import VecEnv, find_wrapper
from rlbase.common.vec_env.vec_frame_stack import VecFrameStack
from rlbase.dqn.best_model import BestModel
from rlbase.dqn.learner import ALGORITHM, STAT_NAMES, Model
from rlbase.dqn.models import QNetwork, check_action_space
from rlbase.dqn.param_noise import AdaptiveParamNoise, kl_threshold


def make_replay_buffer(env: VecEnv, size: int, prioritized: bool, alpha: float
                       ) -> ReplayBuffer | FrameStackReplayBuffer | PrioritizedReplayBuffer:
    """A buffer storing each frame once behind a VecFrameStack, both observations otherwise."""
    ob = env.observation_space
    stack = find_wrapper(env, VecFrameStack)
    if stack is not None:
        axis = -1 if stack.channels_order == "last" else 0
        storage = FrameStackReplayBuffer(size, env.num_envs, ob.shape, ob.dtype, stack.nstack,
                                         axis, ac_dtype=np.int32)
    else:
        storage = ReplayBuffer(size, ob.shape, ob.dtype, ac_dtype=np.int32)
    return PrioritizedReplayBuffer(storage, alpha) if prioritized else storage


def _crossings(t: int, step: int, every: int | None) -> int:
    """How many multiples of ``every`` the counter passed going from t - step to t."""
    if not every:
        return 0
    return t // every - (t - step) // every


def _positive(**values: Any) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise RLBaseError(f"{name} must be a positive integer, got {value!r}")


def learn(env: VecEnv | Any, network: str | Callable, seed: int | None = None,
          lr: float = 5e-4, total_timesteps: int = 100000, buffer_size: int = 50000,
          exploration_fraction: float = 0.1, exploration_final_eps: float = 0.02,
          train_freq: int = 1, gradient_steps: int = 1, batch_size: int = 32,
          print_freq: int | None = 100, checkpoint_freq: int | None = 10000,
          checkpoint_path: str | None = None, learning_starts: int = 1000,
          gamma: float = 1.0, target_network_update_freq: int = 500,
          prioritized_replay: bool = False, prioritized_replay_alpha: float = 0.6,
          prioritized_replay_beta0: float = 0.4,
          prioritized_replay_beta_iters: int | None = None,
          prioritized_replay_eps: float = 1e-6, param_noise: bool = False,
          double_q: bool = True, dueling: bool = True,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, hiddens: Sequence[int] = (256,),
          grad_norm_clipping: float | None = 10.0, param_noise_adaption_interval: int = 1,
          jit_compile: bool | None = None, checkpoint_interval: int = 0,
          resume: bool = False, eval_env: VecEnv | Any | None = None, eval_episodes: int = 5,
          **network_kwargs: Any) -> Model:
    """Train a Q-network with DQN and return the :class:`~rlbase.dqn.learner.Model`.

    env: a VecEnv with a Discrete action space (a gymnasium env or an env id is wrapped).
    network: a registered feed-forward network name (mlp, cnn, conv_only...) or a builder.
    seed: seed of python, numpy, TensorFlow, the envs and the exploration (None: unseeded).
    lr: Adam learning rate.
    total_timesteps: env steps to train for, summed over envs.
    buffer_size: transitions the replay buffer keeps.
    exploration_fraction: fraction of training over which epsilon falls linearly from 1.
    exploration_final_eps: epsilon from then on.
    train_freq: train every this many env steps.
    gradient_steps: updates per training step (all in one compiled call).
    batch_size: transitions per update.
    print_freq: log every this many finished episodes (None: never).
    checkpoint_freq: every this many steps, keep the model if its mean return over the last
        100 episodes is the best so far, and restore the best one at the end (None: never).
        With eval_env the score is greedy evaluation instead (see eval_env).
    checkpoint_path: folder the best model is written to (None: kept in memory).
    learning_starts: env steps of experience collected before training starts.
    gamma: discount factor.
    target_network_update_freq: copy the online network into the target every this many env
        steps.
    prioritized_replay: sample transitions in proportion to their last TD error.
    prioritized_replay_alpha: how strongly priorities count (0: uniform sampling).
    prioritized_replay_beta0: initial importance-weight exponent, annealed linearly to 1.
    prioritized_replay_beta_iters: env steps the annealing takes (None: total_timesteps).
    prioritized_replay_eps: added to |TD error| so no priority is zero.
    param_noise: explore with adaptive parameter-space noise instead of epsilon-greedy.
    double_q: the online network picks the next action, the target evaluates it.
    dueling: Q = V + A - mean(A) from two heads.
    callback: called after every vector env step as ``callback(model, info)``; False stops.
    load_path: start from this saved model.
    hiddens: dense ReLU layers of the Q head(s) on the network's output.
    grad_norm_clipping: clip the gradient's global norm to this (None: no clipping).
    param_noise_adaption_interval: adapt the noise scale every this many env steps (at most
        once per vector step), measured on a replay minibatch. 1 is Baselines' choice: the
        scale moves 1% each time, so from its initial 0.01 it takes a few hundred
        adaptations to reach a useful size.
    jit_compile: compile the update with XLA (~2 s to compile, faster updates); None (auto):
        on when training takes at least 2000 updates, except convnets on a CPU.
    checkpoint_interval: every this many env steps write a resumable checkpoint (model,
        replay buffer, counters, RNG states) to checkpoint_path (None: <log dir>/checkpoints)
        as checkpoint_<steps>.zip, beside the best model.zip (0: never).
    resume: continue from the newest of those checkpoints (total_timesteps counts the whole
        run, including the steps done before the checkpoint).
    eval_env: an env (or env id, seeded with seed + 1000) to score checkpoint_freq's
        checkpoints on: the mean greedy return of eval_episodes fresh episodes replaces the
        training episodes' mean, the final model is scored too, and ties go to the newer
        model. On CartPole with the rl-zoo settings the greedy policy swings between solving
        and failing from one training phase to the next; this keeps a solving one.
    eval_episodes: episodes per evaluation.
    **network_kwargs: passed to the network builder (num_layers, num_hidden, layer_norm...);
        ``layer_norm`` also normalizes the Q heads' hidden layers.
    """
    hyperparameters = {k: v for k, v in locals().items()
                       if k not in ("env", "callback", "network_kwargs", "load_path",
                                    "resume", "eval_env")}
    _positive(total_timesteps=total_timesteps, buffer_size=buffer_size, train_freq=train_freq,
              gradient_steps=gradient_steps, batch_size=batch_size,
              target_network_update_freq=target_network_update_freq,
              param_noise_adaption_interval=param_noise_adaption_interval,
              eval_episodes=eval_episodes)
    if not 0.0 <= exploration_final_eps <= 1.0 or not 0.0 < exploration_fraction <= 1.0:
        raise RLBaseError(f"need 0 < exploration_fraction <= 1 and 0 <= exploration_final_eps "
                          f"<= 1, got {exploration_fraction!r} and {exploration_final_eps!r}")
    if learning_starts < 0:
        raise RLBaseError(f"learning_starts must be >= 0, got {learning_starts!r}")
    checkpointer = Checkpointer(ALGORITHM, checkpoint_path, checkpoint_interval)
    set_global_seeds(seed)
    env = as_vec_env(env, seed)
    check_action_space(env.action_space)
    configure_threads(small_model=not is_image_space(env.observation_space))

    head_layer_norm = bool(network_kwargs.get("layer_norm", False))
    if not callable(network) and "layer_norm" not in network_kwarg_names(network):
        network_kwargs.pop("layer_norm", None)

    def make_net() -> QNetwork:
        return QNetwork(env.observation_space, env.action_space, network, hiddens, dueling,
                        head_layer_norm, network_kwargs)

    nupdates = max(0, total_timesteps - learning_starts) // train_freq * gradient_steps
    if jit_compile is None:
        jit_compile = nupdates >= 2000 and xla_is_faster(env.observation_space)
    model = Model(make_net, gamma, double_q, grad_norm_clipping, gradient_steps, batch_size,
                  param_noise, jit_compile, seed, hyperparameters)
    if load_path is not None:
        model.load(load_path)
    buffer = make_replay_buffer(env, buffer_size, prioritized_replay, prioritized_replay_alpha)
    model.replay_buffer = buffer  # kept for inspection and for continuing in a script
    exploration = LinearSchedule(max(1, int(exploration_fraction * total_timesteps)),
                                 final_p=exploration_final_eps, initial_p=1.0)
    beta = LinearSchedule(prioritized_replay_beta_iters or total_timesteps, final_p=1.0,
                          initial_p=prioritized_replay_beta0)
    noise = AdaptiveParamNoise() if param_noise else None
    model.param_noise = noise
    trainer = _Trainer(model, buffer, lr, beta if prioritized_replay else None,
                       prioritized_replay_eps)

    nenvs, start = env.num_envs, int(env.action_space.start)
    num_actions = int(env.action_space.n)
    ep_returns: deque[float] = deque(maxlen=100)
    running = np.zeros(nenvs)
    episodes = 0
    if eval_env is not None:
        eval_env = as_vec_env(eval_env, None if seed is None else seed + 1000)
    best, scored_at = BestModel(checkpoint_path, eval_env, eval_episodes), -1
    stats: dict[str, float] = {}
    obs = env.reset()
    new_episode = True
    t, tstart = 0, time.perf_counter()
    resumed = checkpointer.restore(model) if resume else None
    if resumed is not None:
        loop, arrays = resumed
        restore_object_state(buffer, loop["replay"], arrays, "replay")
        set_generator_state(model.rng, loop["rng"])
        t, episodes, trainer.updates = loop["t"], loop["episodes"], loop["updates"]
        ep_returns.extend(loop["ep_returns"])
        best.set_state(loop, arrays)
        if noise is not None:
            noise.scale = float(loop["noise_scale"])
    while t < total_timesteps:
        epsilon = exploration.value(t)
        model.epsilon = epsilon
        if noise is not None:
            if new_episode:  # one perturbation per episode (any env's episode, when vectorized)
                model.perturb(noise.scale)
            actions, _ = model.act(obs, 0.0, perturbed=True)
        else:
            actions, _ = model.act(obs, epsilon)
        new_obs, rewards, terminated, truncated, infos = env.step(actions + start)
        done = np.logical_or(terminated, truncated)
        new_episode = bool(done.any())
        next_obs = new_obs
        if new_episode:  # the true last observation, not the next episode's first
            next_obs = new_obs.copy()
            for i in np.flatnonzero(done):
                final = infos[i].get("final_observation")
                if final is not None:
                    next_obs[i] = final
        buffer.add(obs, actions, rewards, next_obs, terminated, truncated)
        obs = new_obs
        t += nenvs
        model.num_timesteps += nenvs
        running += rewards
        for i in np.flatnonzero(done) if new_episode else ():
            episode = infos[i].get("episode")
            ep_returns.append(float(episode["r"]) if episode is not None else running[i])
            running[i] = 0.0
            episodes += 1
            if print_freq and episodes % print_freq == 0:
                _log(t, episodes, ep_returns, epsilon, tstart, stats, noise)

        if noise is not None and _crossings(t, nenvs, param_noise_adaption_interval) \
                and len(buffer) >= batch_size:
            sample = buffer.get(buffer.sample_indices(batch_size, model.rng)).obs
            distance = model.perturbation_distance(sample, noise.scale)
            noise.adapt(distance, kl_threshold(epsilon, num_actions))
        if t > learning_starts and len(buffer) >= batch_size:
            for _ in range(_crossings(t, nenvs, train_freq)):
                stats = trainer.train(t)
            if _crossings(t, nenvs, target_network_update_freq):
                model.update_target()
        if checkpoint_freq and t > learning_starts and best.ready(episodes) and \
                _crossings(t, nenvs, checkpoint_freq):
            best.consider(model, ep_returns)
            scored_at = t
        stop = callback is not None and callback(model, {
            "num_timesteps": model.num_timesteps, "total_timesteps": total_timesteps,
            "episodes": episodes, "exploration": epsilon, **stats}) is False
        stop = stop or stop_requested()
        if checkpointer.due(model.num_timesteps) or (stop and checkpointer.active):
            # Episodes in progress are not saved: their partial returns restart from zero.
            replay_meta, arrays = object_state(buffer, "replay")
            best_meta, best_arrays = best.state()
            checkpointer.save(model, {
                "t": t, "episodes": episodes, "updates": trainer.updates,
                "ep_returns": list(ep_returns), **best_meta,
                "rng": generator_state(model.rng), "replay": replay_meta,
                "noise_scale": None if noise is None else noise.scale},
                {**arrays, **best_arrays})
        if stop:
            break
    if checkpoint_freq and eval_env is not None and t > learning_starts and scored_at != t:
        best.consider(model, ep_returns)  # the final model competes too
    best.restore(model)  # Baselines' rule: the model handed back is the best one checkpointed
    model.epsilon = exploration.value(t)
    return model


class _Trainer:
    """Samples ``[gradient_steps, batch_size]`` minibatches and runs the compiled update."""

    def __init__(self, model: Model, buffer: Any, lr: float, beta: LinearSchedule | None,
                 eps: float):
        self.model, self.buffer, self.lr, self.beta, self.eps = model, buffer, lr, beta, eps
        self.updates = 0

    def train(self, t: int) -> dict[str, float]:
        model, buffer = self.model, self.buffer
        g, b = model.gradient_steps, model.batch_size
        idx = buffer.sample_indices(g * b, model.rng)
        batch = buffer.get(idx)
        if self.beta is not None:
            weights = buffer.weights(idx, self.beta.value(t))
        else:
            weights = np.ones(g * b, np.float32)

        def stacked(x: np.ndarray) -> np.ndarray:
            return x.reshape(g, b, *x.shape[1:])

        td_errors, stats = model.train(stacked(batch.obs), stacked(batch.actions),
                                       stacked(batch.rewards), stacked(batch.next_obs),
                                       stacked(batch.dones), stacked(weights), self.lr)
        self.updates += g
        if not np.isfinite(stats["loss"]):
            raise NonFiniteError(f"dqn: loss became {stats['loss']} at update {self.updates}")
        if self.beta is not None:
            buffer.update_priorities(idx, np.abs(td_errors).ravel() + self.eps)
        return stats


def _log(t: int, episodes: int, ep_returns: deque, epsilon: float, tstart: float,
         stats: dict[str, float], noise: AdaptiveParamNoise | None) -> None:
    logger.record_tabular("time/total_timesteps", t)
    logger.record_tabular("time/episodes", episodes)
    logger.record_tabular("time/fps", int(t / max(time.perf_counter() - tstart, 1e-9)))
    logger.record_tabular("rollout/ep_rew_mean", safemean(ep_returns))
    logger.record_tabular("rollout/exploration_rate", epsilon)
    if noise is not None:
        logger.record_tabular("rollout/param_noise_scale", noise.scale)
    for name in STAT_NAMES:
        if name in stats:
            logger.record_tabular(f"train/{name}", stats[name])
    logger.dump_tabular()
