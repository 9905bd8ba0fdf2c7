"""Deep Q-learning with double Q, dueling heads, prioritized replay and parameter noise."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from rlbase import registry
from rlbase.common.errors import RLBaseError
from rlbase.common.families.q_learning.best_model import BestModelRule
from rlbase.common.families.q_learning.hooks import LEARN_NOTES, QLearningHooks, train_q_learning
from rlbase.common.loops.learning import config_signature, network_first, start_learning
from rlbase.common.loops.training_loop import LoopOptions, TrainingLoop, crossings
from rlbase.common.schedules import LinearSchedule
from rlbase.common.vec_env import VecEnv
from rlbase.dqn.config import CONFIG
from rlbase.dqn.model import Model, build_model

ALGORITHM = "dqn"


@network_first
@config_signature(CONFIG, notes={
    **LEARN_NOTES,
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


class DQNHooks(QLearningHooks):
    """DQN's additions to the Q-learning hooks: parameter-noise acting (one perturbation per
    episode, its scale adapted every ``param_noise_adaption_interval`` env steps) and
    prioritized replay's beta."""

    model: Model

    def __init__(self, model: Model, rule: BestModelRule | None):
        super().__init__(model, rule)
        self.new_episode = True

    def start(self, loop: TrainingLoop) -> None:
        super().start(loop)
        config, span = self.model.config, max(1, loop.target - loop.start)
        self.beta = LinearSchedule(config.prioritized_replay_beta_iters or span, final_p=1.0,
                                   initial_p=config.prioritized_replay_beta0)

    def act(self, obs: Any, t: int) -> np.ndarray:
        model, noise = self.model, self.model.param_noise
        if noise is None:
            return super().act(obs, t)
        self.epsilon = self.exploration.value(t)
        if self.new_episode:  # one perturbation per episode (any env's, when vectorized)
            model.perturb(noise.adaptation.scale)
        return model.act(obs, 0.0, perturbed=True, action_masks=self.action_masks())[0]

    def after_step(self, obs: Any, step: dict[str, Any], t: int) -> None:
        model = self.model
        self.new_episode = bool(step["dones"].any())
        super().after_step(obs, step, t)
        if model.param_noise is not None and len(model.replay_buffer) >= model.batch_size \
                and crossings(t, self.num_envs, model.config.param_noise_adaption_interval):
            model.adapt_param_noise(self.epsilon)

    def train(self, t: int, lr: float) -> dict[str, float]:
        config = self.model.config
        return self.model.replay_update(lr, self.beta.value(t), config.prioritized_replay_eps)

    def extra_stats(self) -> dict[str, float]:
        noise = self.model.param_noise
        stats = super().extra_stats()
        if noise is not None:
            stats["rollout/param_noise_scale"] = noise.adaptation.scale
        return stats


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run DQN's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all); with a best-model interval the best model is handed back."""
    return train_q_learning(model, env, total_timesteps, options, DQNHooks)


def __getattr__(name: str) -> Any:
    if name == "baselines_callback":  # rlbase 0.2's place for it, before rlbase.compat
        raise AttributeError("rlbase.dqn.dqn.baselines_callback moved to the compatibility "
                             "layer: from rlbase.compat.baselines import deepq; "
                             "deepq.baselines_callback(fn)")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
