"""Tabular Q-learning as a model class over rlbase.qlearning.qlearning.learn."""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import numpy as np

from rlbase.api.base_class import BaseRLModel
from rlbase.common.errors import RLBaseError


class QLearning(BaseRLModel):
    """A Q-table (policy 'TabularPolicy'); hyperparameters are those of
    :func:`rlbase.qlearning.qlearning.learn`. A later learn() continues from the current
    exploration rate."""

    algorithm = "qlearning"
    policies = ("TabularPolicy",)
    log_interval_key = "print_freq"
    default_network = None  # type: ignore[assignment]

    def __init__(self, policy: str | None, env: Any, **kwargs: Any):
        if kwargs.get("policy_kwargs"):
            raise RLBaseError(f"QLearning takes no policy_kwargs (a Q-table has no network), "
                              f"got {kwargs['policy_kwargs']!r}")
        super().__init__(policy, env, **kwargs)

    @staticmethod
    def _learn_fn() -> Callable[..., Any]:
        from rlbase.qlearning.qlearning import learn
        return learn

    def _build(self, ob_space: gym.Space, ac_space: gym.Space, nenvs: int) -> Any:
        from rlbase.qlearning.qlearning import Model

        return Model(ob_space, ac_space, self._params()["grid_size"], self.seed,
                     self.hyperparameters)

    def _continue_kwargs(self) -> dict[str, Any]:
        return {"epsilon": float(self.model.epsilon)} if self._learn_calls > 1 else {}

    def _probabilities(self, obs: np.ndarray, state: np.ndarray, mask: np.ndarray
                       ) -> tuple[np.ndarray, ...]:
        q = self.model.q_table[self.model.states(obs)]
        best = (q == q.max(axis=1, keepdims=True)).astype(np.float64)
        eps, n = float(self.model.epsilon), q.shape[1]
        # Ties are broken at random, so tied best actions share the greedy probability.
        return (eps / n + (1.0 - eps) * best / best.sum(axis=1, keepdims=True),)
