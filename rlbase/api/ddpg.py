"""DDPG (and TD3, its twin-critic options) as model classes over rlbase.ddpg.ddpg.learn."""

from __future__ import annotations

import math
from typing import Any, Callable

import gymnasium as gym
import numpy as np

from rlbase.api.base_class import BaseRLModel
from rlbase.common.errors import RLBaseError


class DDPG(BaseRLModel):
    """Deep deterministic policy gradient; hyperparameters are those of
    :func:`rlbase.ddpg.ddpg.learn`. The policy is deterministic: action_probability gives the
    actor's action as the mean and a zero std. Each learn() call starts a new replay buffer."""

    algorithm = "ddpg"
    policies = ("MlpPolicy",)
    log_interval_key = None  # type: ignore[assignment]  # DDPG logs once per epoch

    @staticmethod
    def _learn_fn() -> Callable[..., Any]:
        from rlbase.ddpg.ddpg import learn
        return learn

    def _build(self, ob_space: gym.Space, ac_space: gym.Space, nenvs: int) -> Any:
        from rlbase.ddpg.agent import DDPGModel
        from rlbase.ddpg.ddpg_learner import Learner
        from rlbase.ddpg.models import Actor, Critic, check_action_space, make_torso
        from rlbase.ddpg.noise import parse_noise_type

        check_action_space(ac_space)
        if not isinstance(ob_space, gym.spaces.Box):
            raise RLBaseError(f"ddpg needs a Box observation space, got {ob_space}")
        p, kwargs, network = self._params(), dict(self.policy_kwargs), self.network
        nb_actions = int(ac_space.shape[0])
        action_noise, param_noise = parse_noise_type(p["noise_type"], nb_actions,
                                                     np.random.default_rng(self.seed))
        if network == "mlp":
            kwargs.setdefault("activation", "relu")

        def make_actor() -> Actor:
            return Actor(ob_space.shape, nb_actions, make_torso(network, p["layer_sizes"], kwargs))

        def make_critic() -> Critic:
            return Critic(ob_space.shape, nb_actions,
                          make_torso(network, p["layer_sizes"], kwargs))

        jit = p["jit_compile"]
        learner = Learner(make_actor, make_critic, ob_space.shape, nb_actions, p["gamma"],
                          p["tau"], p["twin_q"], p["policy_delay"], p["target_noise"],
                          p["target_noise_clip"], p["normalize_returns"], p["popart"],
                          p["critic_l2_reg"], p["actor_lr"], p["critic_lr"], p["clip_norm"],
                          p["batch_size"], max(1, math.ceil(p["nb_train_steps"] /
                                                            p["nb_rollout_steps"])),
                          param_noise is not None, None, True if jit is None else jit,
                          self.seed)
        return DDPGModel(learner, ob_space, ac_space, p["normalize_observations"], action_noise,
                         param_noise, network if isinstance(network, str) else repr(network),
                         {**kwargs, "layer_sizes": p["layer_sizes"]}, self.hyperparameters)

    def _probabilities(self, obs: np.ndarray, state: np.ndarray, mask: np.ndarray
                       ) -> tuple[np.ndarray, ...]:
        mean = self.model.step(obs, state, mask, deterministic=True)[0].astype(np.float64)
        return mean, np.zeros_like(mean)


class TD3(DDPG):
    """TD3 (Fujimoto et al. 2018): DDPG with twin critics, delayed actor updates and target
    policy smoothing (defaults twin_q=True, policy_delay=2, target_noise=0.2)."""

    td3_defaults = {"twin_q": True, "policy_delay": 2, "target_noise": 0.2}

    def __init__(self, policy: Any, env: Any, **kwargs: Any):
        super().__init__(policy, env, **{**self.td3_defaults, **kwargs})
