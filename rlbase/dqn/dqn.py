"""Deep Q-learning with double Q, dueling heads, prioritized replay and parameter noise."""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

import numpy as np

from rlbase.common.learning import Alias, start_learning
from rlbase.common.loop import LoopOptions, TrainingLoop, crossings
from rlbase.common.off_policy import reset_env, store_step
from rlbase.common.schedules import LinearSchedule, get_schedule_fn
from rlbase.common.vec_env import VecEnv
from rlbase.dqn.best_model import BestModelRule
from rlbase.dqn.model import Model, build_model

ALGORITHM = "dqn"
LOSSES = ("loss",)


def _log_interval(value: Any, arguments: dict[str, Any], num_envs: int) -> int:
    # print_freq=None (or 0) never logged: now a row is written only at the end.
    return int(value) if value else sys.maxsize


ALIASES = {
    "print_freq": Alias("log_interval", _log_interval),
    "checkpoint_freq": Alias("best_model_interval"),
    "grad_norm_clipping": Alias("max_grad_norm"),
}


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = 100000,
          seed: int | None = None, lr: float | Callable[[float], float] = 5e-4,
          buffer_size: int = 50000, learning_starts: int = 1000, batch_size: int = 32,
          train_freq: int = 1, gradient_steps: int = 1, gamma: float = 0.99,
          target_network_update_freq: int = 500, exploration_fraction: float = 0.1,
          exploration_initial_eps: float = 1.0, exploration_final_eps: float = 0.02,
          max_grad_norm: float | None = 10.0, double_q: bool = True, dueling: bool = True,
          hiddens: Sequence[int] = (256,), layer_norm: bool = False,
          prioritized_replay: bool = False, prioritized_replay_alpha: float = 0.6,
          prioritized_replay_beta0: float = 0.4,
          prioritized_replay_beta_iters: int | None = None,
          prioritized_replay_eps: float = 1e-6, param_noise: bool = False,
          param_noise_adaption_interval: int = 1, best_model_interval: int | None = 10000,
          jit_compile: bool | None = None, log_interval: int = 100,
          eval_env: VecEnv | Any | None = None, eval_freq: int = 0, eval_episodes: int = 5,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_interval: int = 0,
          checkpoint_path: str | None = None, resume: bool = False,
          **network_kwargs: Any) -> Model:
    """Train a Q-network with DQN and return the :class:`~rlbase.dqn.model.Model`.

    network: a registered feed-forward network name (mlp, cnn, conv_only...) or a builder.
    env: a VecEnv with a Discrete action space (a gymnasium env or an env id is wrapped).
    total_timesteps: env steps to train for, summed over envs.
    seed: seed of python, numpy, TensorFlow, the envs and the exploration (None: unseeded).
    lr: Adam learning rate, or a function of the fraction of training remaining (1 -> 0).
    buffer_size: transitions the replay buffer keeps (behind a VecFrameStack each frame is
        stored once).
    learning_starts: env steps of experience collected before training starts.
    batch_size: transitions per update.
    train_freq: train every this many env steps.
    gradient_steps: updates per training step (all in one compiled call).
    gamma: discount factor (1: a time-limit truncation ends the return; see
        rlbase.common.transitions).
    target_network_update_freq: copy the online network into the target every this many env
        steps.
    exploration_fraction: fraction of training over which epsilon falls linearly.
    exploration_initial_eps: epsilon at the start.
    exploration_final_eps: epsilon from then on.
    max_grad_norm: clip the gradient's global norm to this (None: no clipping).
    double_q: the online network picks the next action, the target evaluates it.
    dueling: Q = V + A - mean(A) from two heads.
    hiddens: dense ReLU layers of the Q head(s) on the network's output.
    layer_norm: layer-normalize the heads' hidden layers, and the network's when its builder
        takes layer_norm (Baselines' deepq; layer_norm=True among the network's arguments
        does the same).
    prioritized_replay: sample transitions in proportion to their last TD error.
    prioritized_replay_alpha: how strongly priorities count (0: uniform sampling).
    prioritized_replay_beta0: initial importance-weight exponent, annealed linearly to 1.
    prioritized_replay_beta_iters: env steps the annealing takes (None: total_timesteps).
    prioritized_replay_eps: added to |TD error| so no priority is zero.
    param_noise: explore with adaptive parameter-space noise instead of epsilon-greedy.
    param_noise_adaption_interval: adapt the noise scale every this many env steps (at most
        once per vector step), measured on a replay minibatch. 1 is Baselines' choice: the
        scale moves 1% each time, so from its initial 0.01 it takes a few hundred
        adaptations to reach a useful size.
    best_model_interval: every this many env steps score the model and keep it if it is the
        best so far; the best one is handed back at the end (None: the last model). The
        score is the mean greedy return of eval_episodes episodes on eval_env (ties go to the
        newer model, the final model competes), else Baselines' rule: the mean return of the
        last 100 training episodes the monitor reported, once more than 100 have ended.
    jit_compile: compile the update with XLA (~2 s to compile, faster updates); None (auto):
        on when training takes at least 2000 updates, except convnets on a CPU.
    log_interval: log every this many finished episodes (the monitor's: whole games on
        Atari).
    eval_env: an env (or env id, seeded with seed + 1000) to evaluate the greedy policy on;
        it also scores best_model_interval's models.
    eval_freq: evaluate every this many env steps (0: at every log row when eval_env is
        given); logged as eval/mean_reward, the best model written to
        <log dir>/best_model.zip.
    eval_episodes: episodes per evaluation.
    callback: called after every vector env step as ``callback(model, info)``; returning
        False stops.
    load_path: continue from this saved model (its network and architecture are used).
    checkpoint_interval: write a resumable checkpoint (model, replay buffer, counters,
        generators, the best model so far) every this many env steps (0: never).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints).
    resume: continue from the newest checkpoint in checkpoint_path (total_timesteps counts
        the whole run, including the steps done before the checkpoint).
    **network_kwargs: passed to the network builder (num_layers, num_hidden, layer_norm...).
    """
    model, env, options = start_learning(ALGORITHM, build_model, locals(), ALIASES,
                                         architecture=Model.architecture)
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run DQN's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all); with a best-model interval the best model is handed back."""
    hp = model.hyperparameters
    seed = hp.get("seed")
    rule = None
    if hp.get("best_model_interval"):
        rule = BestModelRule(hp["best_model_interval"], hp["learning_starts"], options.eval_env,
                             options.eval_episodes, None if seed is None else seed + 1000)
    model.best_model = rule  # checkpoints of this run hold its state
    try:
        loop = TrainingLoop(model, env, total_timesteps, options, log_unit="episodes",
                            loss_names=LOSSES, seed=seed)
        if rule is not None and rule.keeper.env is not None and loop.evaluator is not None:
            rule.share(loop.evaluator)  # one evaluation serves both at the same step
        _run(model, env, loop, rule)
        if rule is not None:
            rule.finish(model, model.num_timesteps - loop.start, loop.episodes)
    finally:
        model.best_model = None
    return model


def _run(model: Model, env: VecEnv, loop: TrainingLoop, rule: BestModelRule | None) -> None:
    """The loop body: act, store, train, copy the target, score; one vector step at a time.
    ``t`` counts this run's env steps (with ``resume``, the whole run's)."""
    hp = model.hyperparameters
    num_envs, span = env.num_envs, max(1, loop.target - loop.start)
    exploration = LinearSchedule(max(1, int(hp["exploration_fraction"] * span)),
                                 final_p=hp["exploration_final_eps"],
                                 initial_p=hp["exploration_initial_eps"])
    beta = LinearSchedule(hp["prioritized_replay_beta_iters"] or span, final_p=1.0,
                          initial_p=hp["prioritized_replay_beta0"])
    lr_fn = get_schedule_fn(hp["lr"])
    learning_starts, train_freq = hp["learning_starts"], hp["train_freq"]
    noise = model.param_noise
    start = model.action_start
    buffer = model.replay_buffer
    stats: dict[str, float] = {}
    obs = reset_env(env, buffer)
    new_episode = True
    while loop.running():
        t = model.num_timesteps - loop.start
        epsilon = exploration.value(t)
        if noise is not None:
            if new_episode:  # one perturbation per episode (any env's, when vectorized)
                model.perturb(noise.adaptation.scale)
            actions, _ = model.act(obs, 0.0, perturbed=True)
        else:
            actions, _ = model.act(obs, epsilon)
        raw_obs = model.raw_replay.observations(obs)
        new_obs, rewards, terminated, truncated, infos = env.step(actions + start)
        loop.episodes.update(infos)
        new_episode = bool(np.logical_or(terminated, truncated).any())
        # Raw transitions (normalized when sampled), the true last observation of an
        # episode, and gamma = 1's rule for truncations.
        store_step(buffer, model.raw_replay, env.observation_space, raw_obs, actions, new_obs,
                   rewards, terminated, truncated, infos, model.gamma)
        obs = new_obs
        t += num_envs
        model.epsilon = exploration.value(t)
        if noise is not None and len(buffer) >= model.batch_size and \
                crossings(t, num_envs, hp["param_noise_adaption_interval"]):
            model.adapt_param_noise(epsilon)
        if t > learning_starts and len(buffer) >= model.batch_size:
            for _ in range(crossings(t, num_envs, train_freq)):
                lr = lr_fn(loop.progress_remaining)
                stats.update(model.replay_update(lr, beta.value(t), hp["prioritized_replay_eps"]),
                             learning_rate=lr, n_updates=model.updates)
            if crossings(t, num_envs, hp["target_network_update_freq"]):
                model.update_target()
        if rule is not None:
            rule.after_step(model, t, num_envs, loop.episodes)
        stats["rollout/exploration_rate"] = epsilon
        if noise is not None:
            stats["rollout/param_noise_scale"] = noise.adaptation.scale
        if loop.end_iteration(num_envs, stats):
            break
