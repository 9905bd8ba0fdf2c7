"""Baselines' best-model rule for DQN: every ``checkpoint_freq`` steps keep the model if it
scores best so far, and hand the best one back when training ends.

Baselines scores a checkpoint by the mean return of the last 100 training episodes. Late in
training that window spans tens of thousands of steps and lags the current network, whose
greedy policy can swing from solving CartPole to failing it within one training phase. With
an evaluation env the score is the mean greedy return of fresh episodes on it instead, the
model at the end of training is scored too, and ties go to the newer model.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from rlbase.common import logger
from rlbase.common.evaluation import run_episodes
from rlbase.common.vec_env import VecEnv


class BestModel:
    """The best-scoring model so far: saved under ``path`` (as model.zip) or kept in memory.

    eval_env / eval_episodes: score by greedy evaluation on this env (None: by the training
        episodes' returns).
    """

    def __init__(self, path: str | None, eval_env: VecEnv | None, eval_episodes: int):
        self.path, self.eval_env, self.eval_episodes = path, eval_env, int(eval_episodes)
        self.score: float | None = None
        self.weights: list[np.ndarray] | None = None
        self.file: str | None = None

    def ready(self, training_episodes: int) -> bool:
        """Whether a score can be computed (Baselines waits for 100 training episodes)."""
        return self.eval_env is not None or training_episodes > 100

    def consider(self, model: Any, training_returns: Sequence[float]) -> None:
        """Score ``model`` now and keep it if it is the best so far."""
        if self.eval_env is not None:
            returns, _ = run_episodes(model, self.eval_env, self.eval_episodes,
                                      deterministic=True)
            score = float(np.mean(returns))
            better = self.score is None or score >= self.score
        else:
            score = float(np.mean(training_returns))
            better = self.score is None or score > self.score
        if not better:
            return
        self.score = score
        if self.path:
            self.file = os.path.join(self.path, "model.zip")
            model.save(self.file)
        else:
            self.weights = model.get_weights()
        kind = "evaluation" if self.eval_env is not None else "mean"
        logger.log(f"Saving model due to {kind} reward increase: {score:.2f}")

    def restore(self, model: Any) -> None:
        """Put the best model's weights into ``model`` (nothing happens before a first score)."""
        if self.score is None:
            return
        logger.log(f"Restored model with mean reward: {self.score:.2f}")
        steps = model.num_timesteps
        if self.file is not None:
            model.load(self.file)
        elif self.weights is not None:
            model.set_weights(self.weights)
        model.num_timesteps = steps

    # -- checkpoints -------------------------------------------------------------------------
    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        arrays = {f"best/{i:04d}": w for i, w in enumerate(self.weights or [])}
        return {"best_return": self.score, "best_file": self.file}, arrays

    def set_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.score, self.file = meta["best_return"], meta["best_file"]
        self.weights = [arrays[k] for k in sorted(arrays) if k.startswith("best/")] or None
