"""The Q-learning family's part of the off-policy loop (DQN, QR-DQN): epsilon-greedy acting from
the first step, training after the env step (SB3's order), target copies and the best-model
rule; and :func:`train_q_learning`, which runs them."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from rlbase.common.families.q_learning.best_model import BestModelRule
from rlbase.common.families.q_learning.model import QLearningModel
from rlbase.common.loops.action_masks import ActionMaskReader
from rlbase.common.loops.off_policy import OffPolicyHooks, run_off_policy
from rlbase.common.loops.training_loop import LoopOptions, TrainingLoop, crossings
from rlbase.common.schedules import LinearSchedule
from rlbase.common.vec_env import VecEnv


class QLearningHooks(OffPolicyHooks[QLearningModel]):
    """Epsilon-greedy acting (epsilon falls linearly over ``exploration_fraction`` of this
    run's env steps), one :meth:`QLearningModel.replay_update` per training phase, a target
    copy every ``target_update_interval`` env steps once training started, and the
    best-model rule; ``t`` counts this run's env steps."""

    train_first = False
    random_warmup = False
    run_clock = True

    def __init__(self, model: QLearningModel, rule: BestModelRule | None):
        super().__init__(model, model.settings.lr)
        self.loss_names = model.stat_names[:1]
        self.rule = rule
        self.epsilon = 0.0  # the exploration rate of the latest actions
        self.mask_reader: ActionMaskReader | None = None
        self.masks: np.ndarray | None = None  # the envs' current action masks (None: all)

    def start(self, loop: TrainingLoop) -> None:
        super().start(loop)
        config, span = self.model.settings, max(1, loop.target - loop.start)
        self.exploration = LinearSchedule(max(1, int(config.exploration_fraction * span)),
                                          final_p=config.exploration_final_eps,
                                          initial_p=config.exploration_initial_eps)
        rule = self.rule
        if rule is not None and rule.keeper.env is not None and loop.evaluator is not None:
            rule.share(loop.evaluator)  # one evaluation serves both at the same step

    def first_stats(self, lr: float) -> dict[str, float]:
        return {}

    def act(self, obs: Any, t: int) -> np.ndarray:
        self.epsilon = self.exploration.value(t)
        return self.model.act(obs, self.epsilon, action_masks=self.action_masks())[0]

    def action_masks(self) -> np.ndarray | None:
        """The envs' current action masks when the model's ``action_masks`` setting reads
        them (rlbase.common.loops.action_masks), else None. Made at the first action: the
        envs have been reset by then."""
        if self.mask_reader is None and self.model.action_masking is not False:
            assert self.loop is not None
            self.mask_reader = ActionMaskReader.for_env(self.loop.env,
                                                        self.model.action_masking)
            if self.mask_reader is not None:
                self.masks = self.mask_reader.after_reset()
        return self.masks

    def to_env(self, actions: np.ndarray) -> np.ndarray:
        return actions + self.model.action_start

    def after_step(self, obs: Any, step: dict[str, Any], t: int) -> None:
        self.model.epsilon = self.exploration.value(t)
        if self.mask_reader is not None:
            self.masks = self.mask_reader.after_step(step["infos"], step["dones"])

    def train(self, t: int, lr: float) -> dict[str, float]:
        return self.model.replay_update(lr)

    def n_updates(self) -> int:
        return self.model.updates

    def after_training(self, t: int, started: bool) -> None:
        if started and crossings(t, self.num_envs, self.model.settings.target_update_interval):
            self.model.update_target()
        if self.rule is not None:
            assert self.loop is not None
            self.rule.after_step(self.model, t, self.num_envs, self.loop.episodes)

    def extra_stats(self) -> dict[str, float]:
        return {"rollout/exploration_rate": self.epsilon}

    def finish(self, loop: TrainingLoop) -> None:
        if self.rule is not None:
            self.rule.finish(self.model, self.model.num_timesteps - loop.start, loop.episodes)


def train_q_learning(model: QLearningModel, env: VecEnv, total_timesteps: int,
                     options: LoopOptions,
                     hooks: Callable[[Any, BestModelRule | None], QLearningHooks]) -> Any:
    """Run the off-policy loop with ``hooks(model, rule)`` on ``model`` for
    ``total_timesteps`` more env steps (with ``resume``: up to that many in all); with a
    best-model interval the best model is handed back."""
    config = model.settings
    rule = None
    if config.best_model_interval:
        rule = BestModelRule(config.best_model_interval, config.learning_starts,
                             options.eval_env, options.eval_episodes,
                             None if config.seed is None else config.seed + 1000)
    model.best_model = rule  # checkpoints of this run hold its state
    try:
        run_off_policy(hooks(model, rule), env, total_timesteps, options)
    finally:
        model.best_model = None
    return model


#: learn()'s notes DQN and QR-DQN share (rlbase.common.loops.learning's config_signature);
#: each adds its "**network_kwargs"
LEARN_NOTES = {
    "network": "a registered feed-forward network name (mlp, cnn, conv_only...) or a builder",
    "env": "a VecEnv with a Discrete action space (a gymnasium env or an env id is wrapped)",
    "seed": "seed of python, numpy, TensorFlow, the envs and the exploration (None: unseeded)",
    "eval_env": "an env (or env id, seeded with seed + 1000) to evaluate the greedy policy on; "
                "it also scores best_model_interval's models",
    "callback": "called after every vector env step as callback(model, info); returning False "
                "stops. Baselines' callback(lcl, glb) (parameters named so, or wrapped in "
                "baselines_callback) is called before every env step with Baselines' locals "
                "(t, episode_rewards, ..., see rlbase.compat.baselines.deepq_callback) and stops "
                "training by returning True",
    "checkpoint_path": "the checkpoints' folder (None: <log dir>/checkpoints); a checkpoint "
                       "holds the model, replay buffer, counters, generators and the best "
                       "model so far",
}
