"""ACER as a model class over rlbase.acer.acer.learn."""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym

from rlbase.api.actor_critic import ActorCriticModel


class ACER(ActorCriticModel):
    """Actor-critic with experience replay; hyperparameters are those of
    :func:`rlbase.acer.acer.learn` (Discrete actions only)."""

    algorithm = "acer"

    @staticmethod
    def _learn_fn() -> Callable[..., Any]:
        from rlbase.acer.acer import learn
        return learn

    def _build(self, ob_space: gym.Space, ac_space: gym.Space, nenvs: int) -> Any:
        from rlbase.acer.model import AcerPolicy, Model, check_action_space

        check_action_space(ac_space)
        p, kwargs = self._params(), dict(self.policy_kwargs)
        value_network = kwargs.pop("value_network", None)
        policy, average = (AcerPolicy(ob_space, ac_space, self.network, value_network, kwargs)
                           for _ in range(2))
        return Model(policy, average, nenvs, p["nsteps"], p["q_coef"], p["ent_coef"],
                     p["max_grad_norm"], p["rprop_alpha"], p["rprop_epsilon"], p["gamma"],
                     p["c"], p["trust_region"], p["alpha"], p["delta"], self.hyperparameters,
                     bool(p.get("jit_compile") or False))
