"""rlib's DeepQLearning over rlbase's DQN (rlbase.compat.sb3.DQN)."""

from __future__ import annotations

from typing import Any

from rlbase.compat.rlib.base import BaseAlgorithm, arguments, network
from rlbase.compat.rlib.envs import EnvSpec
from rlbase.compat.sb3 import DQN


class DeepQLearning(BaseAlgorithm):
    """Deep Q-learning: a Q-network trained on replayed transitions towards
    r + discount * max_a' Q_target(s', a') (Huber loss), a target network copied every
    ``main_target_update`` steps, epsilon falling linearly from ``epsilon_start`` to
    ``epsilon_min`` over ``exploration_fraction`` of the run. An iteration is an env step.

    An example, every parameter and the rlbase setting it becomes: rlbase/docs/rlib.md.
    """

    api_class = DQN
    unit = "env steps"
    keeps_best = True

    def __init__(self, env_kwargs: dict[str, Any], agent_kwargs: dict[str, Any],
                 max_episode_length: int = -1, max_total_reward: float = -1,
                 save_folder: str = "deep_qlearning", lr: float = 3e-4, discount: float = 0.99,
                 epsilon_start: float = 0.1, epsilon_min: float = 0.01,
                 exploration_fraction: float = 0.1, num_time_steps: int = 100_000,
                 learning_starts: int = 50_000, update_every: int = 4,
                 number_updates: int | None = None, main_target_update: int = 10,
                 verbose: bool = True, test_every: int = 50_000, num_test_episodes: int = 10,
                 batch_size: int = 64, size_replay_buffer: int = 100_000,
                 max_grad_norm: float = 10, normalize_observation: bool = False,
                 stop_max_score: bool = False, seed: int | None = 42):
        kwargs = arguments(locals())
        spec = EnvSpec(env_kwargs, max_episode_length, max_total_reward,
                       normalize_observation=bool(normalize_observation))
        super().__init__(kwargs, spec, num_envs=1, save_folder=save_folder, seed=seed,
                         test_every=test_every, num_test_episodes=num_test_episodes,
                         budget=num_time_steps, stop_max_score=stop_max_score, verbose=verbose)
        self._build("mlp", network("DeepQLearning", "agent_kwargs", agent_kwargs), {
            "lr": lr, "gamma": discount, "exploration_initial_eps": epsilon_start,
            "exploration_final_eps": epsilon_min, "exploration_fraction": exploration_fraction,
            # rlib never trains on fewer transitions than one batch.
            "learning_starts": max(learning_starts, batch_size), "train_freq": update_every,
            "gradient_steps": update_every if number_updates is None else number_updates,
            "target_update_interval": main_target_update, "batch_size": batch_size,
            "buffer_size": size_replay_buffer, "max_grad_norm": max_grad_norm,
            # rlib's Q-network: the hidden layers and a linear output, its own max as target.
            "hiddens": (), "dueling": False, "double_q": False,
            # rlib keeps training the last model (models/best.zip holds the best one).
            "best_model_interval": None})
