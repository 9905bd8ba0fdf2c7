"""Baselines' best-model rule for DQN and QR-DQN: every ``best_model_interval`` env steps keep
the model if it scores best so far, and hand the best one back when training ends.

Baselines scores by the mean return of the last 100 training episodes (once more than 100 have
ended), keeping only strict improvements. Those are the episodes the monitor reports: whole
games with their unclipped score on Atari, never the lives the learner's episodes end at. Late
in training that window spans tens of thousands of steps and lags the current network, whose
greedy policy can swing from solving CartPole to failing it within one training phase. With an
evaluation env the score is the mean greedy return of fresh episodes on it instead, ties go to
the newer model, and the model at the end of training competes too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlbase.common.logs import logger
from rlbase.common.loops.episodes import EpisodeStats
from rlbase.common.loops.evaluation import Evaluator
from rlbase.common.loops.training_loop import crossings

#: Baselines scores training episodes only once more than this many have ended
MIN_EPISODES = 100
ARRAY_PREFIX = "loop/best_model/"  # a resume prefix: never loaded as the model's parameters


class BestModelRule:
    """Scores the model now and then and keeps the best one in memory.

    interval: env steps between scorings.
    learning_starts: no scoring before this many env steps (nothing was learned yet).
    eval_env: score by greedy episodes on this env (None: by the training episodes).
    eval_episodes: episodes per evaluation.
    seed: seeds an eval env given as an id.
    """

    def __init__(self, interval: int, learning_starts: int, eval_env: Any = None,
                 eval_episodes: int = 5, seed: int | None = None):
        self.interval, self.learning_starts = int(interval), int(learning_starts)
        self.keeper = Evaluator(eval_env, eval_episodes, seed=seed, keep_best=True)
        self.scored_at: int | None = None

    def share(self, evaluator: Evaluator) -> None:
        """Score with the training loop's evaluator (same env and episodes): where the loop's
        periodic evaluation and this rule fall on the same step, the episodes are played
        once. It keeps the best model in memory from now on."""
        evaluator.keep_best = True
        self.keeper = evaluator

    @property
    def best_score(self) -> float | None:
        return self.keeper.best_score

    def after_step(self, model: Any, t: int, steps: int, episodes: EpisodeStats) -> None:
        """Score ``model`` when ``t`` (env steps of this run) crossed a multiple of the
        interval with this vector step of ``steps`` env steps."""
        if t > self.learning_starts and crossings(t, steps, self.interval):
            # The model's counter takes this vector step at the loop's end of iteration,
            # after the rule: the step the model has reached is one vector step ahead.
            self.score(model, episodes, step=model.num_timesteps + steps)
            self.scored_at = t

    def score(self, model: Any, episodes: EpisodeStats, step: int | None = None) -> None:
        """Score ``model`` now (at timestep ``step``, default its own count) and keep it if it
        is the best so far."""
        if self.keeper.env is not None:
            score = self.keeper.evaluate(model, step)  # ties keep the newer model
            kept, kind = self.keeper.best_score == score, "evaluation"
        elif episodes.count > MIN_EPISODES:
            score, kind = episodes.mean_return(), "mean"
            kept = self.keeper.consider(model, score, ties_win=False)
        else:
            return
        if kept:
            logger.log(f"Saving model due to {kind} reward increase: {score:.2f}")

    def finish(self, model: Any, t: int, episodes: EpisodeStats) -> None:
        """At the end of training: the final model competes (when scored by evaluation), then
        the best one is put back into ``model``."""
        if self.keeper.env is not None and t > self.learning_starts and self.scored_at != t:
            self.score(model, episodes)
        if self.keeper.restore_best(model):
            logger.log(f"Restored model with mean reward: {self.keeper.best_score:.2f}")

    # -- checkpoints ----------------------------------------------------------------------------
    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta, arrays = self.keeper.state()
        meta = {**meta, "scored_at": self.scored_at}
        return meta, {ARRAY_PREFIX + k[len("best/"):]: v for k, v in arrays.items()}

    def set_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.keeper.set_state(meta, {"best/" + k[len(ARRAY_PREFIX):]: v
                                     for k, v in arrays.items() if k.startswith(ARRAY_PREFIX)})
        scored_at = meta.get("scored_at")
        self.scored_at = None if scored_at is None else int(scored_at)
