"""GAIL: generative adversarial imitation learning (Baselines' gail), on the shared loop.

The policy moves by TRPO steps on the discriminator's reward ``-log(1 - D(s, a))``; after every
``g_step`` policy updates the discriminator trains on the last rollout against as many expert
pairs. The env's own rewards are never learned from: they are only what the episode statistics
(rollout/ep_rew_mean, evaluations) report, so the logged returns measure the imitation.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from rlbase.common.loops.learning import config_signature, start_learning
from rlbase.common.loops.on_policy import policy_rollouts, run_on_policy
from rlbase.common.loops.rollout import Rollout
from rlbase.common.loops.training_loop import LoopOptions
from rlbase.common.vec_env import VecEnv
from rlbase.gail.config import CONFIG
from rlbase.gail.expert import ExpertPairs
from rlbase.gail.model import Model, build_model

ALGORITHM = "gail"
LOSSES = ("policy_objective", "kl_divergence_loss", "value_loss", "discriminator_loss")


@config_signature(CONFIG, notes={
    "network": "mlp or another feed-forward network, or a builder callable; the value gets its "
               "own torso unless value_network='shared'",
    "env": "a VecEnv (a gymnasium env or an env id is wrapped into one); its rewards are only "
           "reported, never learned from",
    "callback": "called after every policy update as callback(model, info); returning False "
                "stops"})
def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(1e6),
          seed: int | None = None, **kwargs: Any) -> Model:
    """Imitate the expert in ``expert_path`` with GAIL and return the
    :class:`~rlbase.gail.model.Model`."""
    model, env, options = start_learning(CONFIG, build_model, network, env, total_timesteps,
                                         seed, kwargs)
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run GAIL's loop on ``model`` for ``total_timesteps`` more env steps (expert data from
    ``model.config.expert_path``). Under MPI every rank runs it; rank 0 writes checkpoints."""
    config = model.config
    expert = ExpertPairs(config.expert_path, model.observation_space, model.action_space,
                         config.traj_limitation) if total_timesteps > 0 else None

    def update(rollout: Rollout, current: dict[str, float], iteration: int
               ) -> tuple[dict[str, float], Any]:
        # The update adds the discriminator's rewards to the truncation bootstraps.
        stats, pending = model.train(dataclasses.replace(rollout, rewards=rollout.bootstraps))
        if expert is not None and iteration % config.g_step == 0:
            stats.update(_discriminator_step(model, expert, rollout))
        return stats, pending

    return run_on_policy(model, env, total_timesteps, options, loss_names=LOSSES,
                         rollouts=policy_rollouts(config.gamma),
                         schedule=lambda _: {"learning_rate": config.vf_lr}, update=update,
                         comm=model.comm, workers_mean=model.workers_mean)


def _discriminator_step(model: Model, expert: ExpertPairs, rollout: Rollout
                        ) -> dict[str, float]:
    """Train the discriminator on the rollout against as many expert pairs."""
    expert_obs, expert_actions = expert.sample(model.num_envs * model.nsteps, model.expert_rng)
    if model.normalization is not None:  # the policy sees VecNormalize's observations:
        expert_obs = model.normalization.normalize_obs(expert_obs)  # so must D
    return model.train_discriminator(rollout.obs, rollout.actions, expert_obs, expert_actions)
