"""PQN (Gallici et al., ICLR 2025, "Simplifying Deep Temporal Difference Learning"):
Q(lambda) on rollouts of many parallel envs, without a replay buffer or a target network."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from rlbase.common.loops.learning import config_signature, network_first, start_learning
from rlbase.common.loops.on_policy import PolicyRollouts, Rollouts, learning_rate, run_on_policy
from rlbase.common.loops.rollout import Rollout, RolloutRunner
from rlbase.common.loops.training_loop import LoopOptions, TrainingLoop
from rlbase.common.vec_env import VecEnv
from rlbase.pqn.config import CONFIG, PQNConfig
from rlbase.pqn.model import Model, build_model

ALGORITHM = "pqn"
LOSSES = ("loss",)


@network_first
@config_signature(CONFIG, notes={
    "env": "a VecEnv with a Discrete action space (a gymnasium env or an env id is wrapped); "
           "PQN is made for many envs (num_envs)",
    "seed": "seed of python, numpy, TensorFlow, the envs, the exploration and the "
            "minibatches' order",
    "**network_kwargs": "passed to the network builder (num_layers, num_hidden, layer_sizes, "
                        "activation...); 'mlp' defaults to ReLU layers of 120 and 84 units"})
def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = 500000,
          seed: int | None = None, **kwargs: Any) -> Model:
    """Train a Q-network with PQN and return the :class:`~rlbase.pqn.model.Model` (acting
    greedily): an update per rollout of ``nsteps`` steps of every env (total_timesteps is
    rounded up to whole rollouts)."""
    model, env, options = start_learning(CONFIG, build_model, network, env, total_timesteps,
                                         seed, kwargs)
    return train(model, env, total_timesteps, options)


class _Acting:
    """The model as the rollout collector drives it: epsilon-greedy actions at the model's
    current rate, the greedy value for truncated episodes' bootstraps, no recurrent state."""

    def __init__(self, model: Model):
        self.model = model

    def initial_states(self, batch: int) -> np.ndarray:
        return self.model.initial_states(batch)

    def act(self, obs: Any, states: np.ndarray, starts: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
        return self.model.step(obs)[0], states

    def value(self, obs: Any, states: np.ndarray, starts: np.ndarray) -> np.ndarray:
        return self.model.value(obs)

    def resumed_step(self, obs: Any) -> None:
        return None  # acting draws from the model's checkpointed generator


def exploration_rate(config: PQNConfig, progress: float) -> float:
    """Epsilon at ``progress`` remaining (1 -> 0) of this run: linear from
    exploration_initial_eps to exploration_final_eps over exploration_fraction of it."""
    done = min(1.0, (1.0 - progress) / config.exploration_fraction)
    return config.exploration_initial_eps + done * (config.exploration_final_eps -
                                                    config.exploration_initial_eps)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run PQN's loop (the on-policy loop: a rollout, then an update on it) on ``model`` for
    ``total_timesteps`` more env steps (with ``resume``: up to that many in all)."""
    config = model.config
    lr = learning_rate(config.lr, config.lrschedule)

    def schedule(progress: float) -> dict[str, float]:
        # Set before the rollout, which acts at this rate (logged as SB3's DQN logs it).
        model.epsilon = exploration_rate(config, progress)
        return {**lr(progress), "rollout/exploration_rate": model.epsilon}

    def rollouts(loop: TrainingLoop) -> Rollouts:
        return PolicyRollouts(RolloutRunner(loop.env, _Acting(model), nsteps=model.nsteps,
                                            gamma=config.gamma, episodes=loop.episodes))

    def update(rollout: Rollout, current: dict[str, float], _: int
               ) -> tuple[dict[str, float], None]:
        return model.train(rollout, current["learning_rate"]), None

    return run_on_policy(model, env, total_timesteps, options, loss_names=LOSSES,
                         rollouts=rollouts, schedule=schedule, update=update)
