"""PPO as a model class over rlbase.ppo.ppo.learn."""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym

from rlbase.api.actor_critic import ActorCriticModel


class PPO(ActorCriticModel):
    """Proximal policy optimization; hyperparameters are those of :func:`rlbase.ppo.ppo.learn`."""

    algorithm = "ppo"

    @staticmethod
    def _learn_fn() -> Callable[..., Any]:
        from rlbase.ppo.ppo import learn
        return learn

    def _build(self, ob_space: gym.Space, ac_space: gym.Space, nenvs: int) -> Any:
        from rlbase.ppo.model import Model

        p, policy = self._params(), self._policy(ob_space, ac_space)
        model_fn = p.get("model_fn") or Model
        return model_fn(policy, nenvs, p["nsteps"], p["nminibatches"], p["noptepochs"],
                        p["ent_coef"], p["vf_coef"], p["max_grad_norm"], p["gamma"], p["lam"],
                        p["clip_value"], self.hyperparameters, jit_compile=False)
