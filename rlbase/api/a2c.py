"""A2C as a model class over rlbase.a2c.a2c.learn."""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym

from rlbase.api.actor_critic import ActorCriticModel


class A2C(ActorCriticModel):
    """Advantage actor-critic; hyperparameters are those of :func:`rlbase.a2c.a2c.learn`."""

    algorithm = "a2c"

    @staticmethod
    def _learn_fn() -> Callable[..., Any]:
        from rlbase.a2c.a2c import learn
        return learn

    def _build(self, ob_space: gym.Space, ac_space: gym.Space, nenvs: int) -> Any:
        from rlbase.a2c.a2c import Model

        p, policy = self._params(), self._policy(ob_space, ac_space)
        return Model(policy, nenvs, p["nsteps"], p["ent_coef"], p["vf_coef"],
                     p["max_grad_norm"], p["alpha"], p["epsilon"], p["gamma"],
                     self.hyperparameters, jit_compile=False)
