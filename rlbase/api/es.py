"""Evolution strategies as a model class over rlbase.es.es.learn."""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import numpy as np

from rlbase.api.base_class import BaseRLModel


class ES(BaseRLModel):
    """OpenAI-style evolution strategies; hyperparameters are those of
    :func:`rlbase.es.es.learn`. The policy is deterministic: action_probability is one-hot
    (Discrete) or the action with a zero std (Box)."""

    algorithm = "es"
    policies = ("MlpPolicy",)

    @staticmethod
    def _learn_fn() -> Callable[..., Any]:
        from rlbase.es.es import learn
        return learn

    def _build(self, ob_space: gym.Space, ac_space: gym.Space, nenvs: int) -> Any:
        from rlbase.common.running_mean_std import RunningMeanStd
        from rlbase.es.model import ESModel
        from rlbase.es.optimizer import Adam
        from rlbase.es.policy import ESPolicy

        policy = ESPolicy(ob_space, ac_space, self.network, dict(self.policy_kwargs))
        return ESModel(policy, policy.get_flat(), RunningMeanStd(shape=(policy.ob_dim,)),
                       Adam(policy.dim, self._params()["lr"]), self.hyperparameters)

    def _probabilities(self, obs: np.ndarray, state: np.ndarray, mask: np.ndarray
                       ) -> tuple[np.ndarray, ...]:
        actions = np.asarray(self.model.step(obs, state, mask, deterministic=True)[0])
        if isinstance(self.action_space, gym.spaces.Discrete):
            n = int(self.action_space.n)
            return (np.eye(n)[actions.astype(np.int64) - int(self.action_space.start)],)
        mean = actions.astype(np.float64)
        return mean, np.zeros_like(mean)
