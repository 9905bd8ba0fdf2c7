"""rlib's PPO over rlbase's PPO (rlbase.compat.sb3.PPO)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from rlbase.common.errors import RLBaseError
from rlbase.common.schedules import named_schedule
from rlbase.compat.rlib.base import BaseAlgorithm, arguments, network
from rlbase.compat.rlib.envs import EnvSpec, clip_observations
from rlbase.compat.sb3 import PPO as RLBasePPO


def with_defaults(kwargs: Any) -> Any:
    """rlib's PPO networks: 64x64 tanh unless given (each key on its own)."""
    if kwargs is None:
        kwargs = {}
    if not isinstance(kwargs, dict):
        return kwargs  # refused by network()
    return {"hidden_sizes": [64, 64], "activation": "tanh", **kwargs}


class PPO(BaseAlgorithm):
    """Proximal policy optimization with the clipped surrogate objective, GAE advantages and a
    separate critic network. An iteration is an env step (summed over the envs); the policy
    is tested before training, every ``test_every`` env steps and at the end.

    An example, every parameter and the rlbase setting it becomes: rlbase/docs/rlib.md.
    """

    api_class = RLBasePPO
    unit = "env steps"
    test_at_start = True

    def __init__(self, env_kwargs: dict[str, Any], actor_kwargs: dict[str, Any] | None = None,
                 critic_kwargs: dict[str, Any] | None = None, num_envs: int = 10,  # None: {}
                 save_folder: str = "ppo", normalize_observation: bool = False,
                 seed: int | None = 42, num_steps_per_iter: int = 2048,
                 num_updates_per_iter: int = 10, total_timesteps: int = 1_000_000,
                 max_episode_length: int = -1, max_total_reward: float = -1,
                 test_every: int = 10_000, num_test_agents: int = 10, batch_size: int = 64,
                 discount: float = 0.99, use_gae: bool = True, lambda_gae: float = 0.95,
                 policy_loss_clip: float = 0.2, clip_value_loss: bool = True,
                 value_loss_clip: float = 0.2, value_loss_coef: float = 0.5,
                 entropy_loss_coef: float = 0.01, max_grad_norm: float = 0.5,
                 learning_rate: float = 3e-4, lr_annealing: bool = True,
                 norm_advantages: bool = True, verbose: bool = True):
        kwargs = arguments(locals())
        probe = EnvSpec(env_kwargs, max_episode_length, max_total_reward)
        # rlib's wrappers for continuous actions: observations clipped to [-10, 10], rewards
        # normalized (VecNormalize, above the monitor: logged returns stay the env's own).
        continuous = isinstance(probe.spaces()[1], gym.spaces.Box)
        spec = EnvSpec(env_kwargs, max_episode_length, max_total_reward,
                       wrappers=[clip_observations] if continuous else [],
                       normalize_observation=bool(normalize_observation),
                       normalize_reward=continuous)
        super().__init__(kwargs, spec, num_envs=num_envs, save_folder=save_folder, seed=seed,
                         test_every=test_every, num_test_episodes=num_test_agents,
                         budget=total_timesteps, verbose=verbose)
        actor = network("PPO", "actor_kwargs", with_defaults(actor_kwargs))
        critic = network("PPO", "critic_kwargs", with_defaults(critic_kwargs))
        if actor != critic:
            raise RLBaseError(f"PPO: rlbase's critic is a copy of the actor's network shape; "
                              f"give actor_kwargs and critic_kwargs the same hidden_sizes and "
                              f"activation (with rlib's defaults, 64x64 tanh: actor {actor}, "
                              f"critic {critic})")
        if not norm_advantages:
            raise RLBaseError("PPO: rlbase's PPO always normalizes the advantages per "
                              "minibatch; leave norm_advantages=True")
        if clip_value_loss and value_loss_clip != policy_loss_clip:
            raise RLBaseError(f"PPO: rlbase clips the value change with the policy's range; "
                              f"give value_loss_clip=policy_loss_clip ({policy_loss_clip}) or "
                              f"clip_value_loss=False (got value_loss_clip={value_loss_clip})")
        if not use_gae and lambda_gae != 0.95:
            raise RLBaseError("PPO: lambda_gae is unused with use_gae=False (the advantage is "
                              "the discounted return minus V(s), GAE's lambda=1); leave it out")
        self._build("mlp", {**actor, "value_network": "copy"}, {
            "nsteps": num_steps_per_iter, "noptepochs": num_updates_per_iter,
            "batch_size": batch_size, "gamma": discount,
            "lam": lambda_gae if use_gae else 1.0, "cliprange": policy_loss_clip,
            "clip_value": clip_value_loss, "vf_coef": value_loss_coef,
            "ent_coef": entropy_loss_coef, "max_grad_norm": max_grad_norm,
            # rlib anneals linearly to 0 over total_timesteps.
            "lr": named_schedule("linear", learning_rate) if lr_annealing else learning_rate})
