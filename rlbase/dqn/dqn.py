"""Deep Q-learning with double Q, dueling heads, prioritized replay and parameter noise."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from rlbase import registry
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.baselines_callback import BaselinesCallback, is_baselines_form
from rlbase.common.loops.baselines_callback import baselines_callback as baselines_callback
from rlbase.common.loops.learning import config_signature, network_first, start_learning
from rlbase.common.loops.off_policy import OffPolicyHooks, run_off_policy
from rlbase.common.loops.training_loop import LoopOptions, TrainingLoop, crossings
from rlbase.common.schedules import LinearSchedule
from rlbase.common.vec_env import VecEnv
from rlbase.dqn.best_model import BestModelRule
from rlbase.dqn.config import CONFIG
from rlbase.dqn.model import Model, build_model

ALGORITHM = "dqn"
LOSSES = ("loss",)


@network_first
@config_signature(CONFIG, notes={
    "network": "a registered feed-forward network name (mlp, cnn, conv_only...) or a builder",
    "env": "a VecEnv with a Discrete action space (a gymnasium env or an env id is wrapped)",
    "seed": "seed of python, numpy, TensorFlow, the envs and the exploration (None: unseeded)",
    "eval_env": "an env (or env id, seeded with seed + 1000) to evaluate the greedy policy on; "
                "it also scores best_model_interval's models",
    "callback": "called after every vector env step as callback(model, info); returning False "
                "stops. Baselines' callback(lcl, glb) (parameters named so, or wrapped in "
                "baselines_callback) is called before every env step with Baselines' locals "
                "(t, episode_rewards, ..., see rlbase.common.loops.baselines_callback) and stops "
                "training by returning True",
    "checkpoint_path": "the checkpoints' folder (None: <log dir>/checkpoints); a checkpoint "
                       "holds the model, replay buffer, counters, generators and the best "
                       "model so far",
    "**network_kwargs": "passed to the network builder (num_layers, num_hidden, "
                        "layer_norm...); SB3's names and Baselines' deepq spellings "
                        "(target_network_update_freq, grad_norm_clipping, print_freq, "
                        "checkpoint_freq, deprecated) are taken out first"})
def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = 100000,
          seed: int | None = None, **kwargs: Any) -> Model:
    """Train a Q-network with DQN and return the :class:`~rlbase.dqn.model.Model`."""
    model, env, options = start_learning(CONFIG, build_model, network, env, total_timesteps,
                                         seed, kwargs)
    return train(model, env, total_timesteps, options)


def load_act(path: str) -> Model:
    """Baselines' ``deepq.load_act``: the DQN model saved at ``path``, callable as
    ``act(obs[None])`` for a batch of actions."""
    model = registry.load(path)
    if not isinstance(model, Model):
        raise RLBaseError(f"load_act loads DQN models; {path} holds a '{model.algorithm}' "
                          f"model: load it with rlbase.registry.load(path)")
    return model


class DQNHooks(OffPolicyHooks[Model]):
    """DQN's part of the off-policy loop: epsilon-greedy (or parameter-noise) acting from the
    first step, training after the env step (SB3's order), prioritized replay's beta, target
    copies and the best-model rule; ``t`` counts this run's env steps."""

    loss_names = LOSSES
    train_first = False
    random_warmup = False
    run_clock = True

    def __init__(self, model: Model, rule: BestModelRule | None):
        super().__init__(model, model.config.lr)
        self.rule = rule
        self.epsilon = 0.0  # the exploration rate of the latest actions
        self.new_episode = True

    def start(self, loop: TrainingLoop) -> None:
        super().start(loop)
        config, span = self.model.config, max(1, loop.target - loop.start)
        self.exploration = LinearSchedule(max(1, int(config.exploration_fraction * span)),
                                          final_p=config.exploration_final_eps,
                                          initial_p=config.exploration_initial_eps)
        self.beta = LinearSchedule(config.prioritized_replay_beta_iters or span, final_p=1.0,
                                   initial_p=config.prioritized_replay_beta0)
        callback = loop.options.callback
        if isinstance(callback, BaselinesCallback):  # Baselines called it before each step
            loop.stopped = callback.start(self.model, {
                "iteration": 0, "num_timesteps": self.model.num_timesteps,
                "total_timesteps": loop.target, "ep_infos": loop.episodes.recent,
                "episodes": loop.episodes.count})
        rule = self.rule
        if rule is not None and rule.keeper.env is not None and loop.evaluator is not None:
            rule.share(loop.evaluator)  # one evaluation serves both at the same step

    def first_stats(self, lr: float) -> dict[str, float]:
        return {}

    def act(self, obs: Any, t: int) -> np.ndarray:
        model, noise = self.model, self.model.param_noise
        self.epsilon = self.exploration.value(t)
        if noise is None:
            return model.act(obs, self.epsilon)[0]
        if self.new_episode:  # one perturbation per episode (any env's, when vectorized)
            model.perturb(noise.adaptation.scale)
        return model.act(obs, 0.0, perturbed=True)[0]

    def to_env(self, actions: np.ndarray) -> np.ndarray:
        return actions + self.model.action_start

    def after_step(self, obs: Any, step: dict[str, Any], t: int) -> None:
        model = self.model
        self.new_episode = bool(step["dones"].any())
        model.epsilon = self.exploration.value(t)
        if model.param_noise is not None and len(model.replay_buffer) >= model.batch_size \
                and crossings(t, self.num_envs, model.config.param_noise_adaption_interval):
            model.adapt_param_noise(self.epsilon)

    def train(self, t: int, lr: float) -> dict[str, float]:
        config = self.model.config
        return self.model.replay_update(lr, self.beta.value(t), config.prioritized_replay_eps)

    def n_updates(self) -> int:
        return self.model.updates

    def after_training(self, t: int, started: bool) -> None:
        if started and crossings(t, self.num_envs, self.model.config.target_update_interval):
            self.model.update_target()
        if self.rule is not None:
            assert self.loop is not None
            self.rule.after_step(self.model, t, self.num_envs, self.loop.episodes)

    def extra_stats(self) -> dict[str, float]:
        noise = self.model.param_noise
        stats = {"rollout/exploration_rate": self.epsilon}
        if noise is not None:
            stats["rollout/param_noise_scale"] = noise.adaptation.scale
        return stats

    def finish(self, loop: TrainingLoop) -> None:
        if self.rule is not None:
            self.rule.finish(self.model, self.model.num_timesteps - loop.start, loop.episodes)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run DQN's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all); with a best-model interval the best model is handed back."""
    if is_baselines_form(options.callback):
        assert options.callback is not None
        options = dataclasses.replace(options, callback=BaselinesCallback(
            options.callback, env, total_timesteps, globals()))
    config = model.config
    rule = None
    if config.best_model_interval:
        rule = BestModelRule(config.best_model_interval, config.learning_starts,
                             options.eval_env, options.eval_episodes,
                             None if config.seed is None else config.seed + 1000)
    model.best_model = rule  # checkpoints of this run hold its state
    try:
        run_off_policy(DQNHooks(model, rule), env, total_timesteps, options)
    finally:
        model.best_model = None
    return model
