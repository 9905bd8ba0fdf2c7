"""rlib's QLearning over rlbase's tabular Q-learning (rlbase.compat.sb3.QLearning)."""

from __future__ import annotations

from typing import Any, cast

from rlbase.common.errors import RLBaseError
from rlbase.compat.rlib.base import BaseAlgorithm, arguments
from rlbase.compat.rlib.envs import EnvSpec
from rlbase.compat.sb3 import QLearning as TabularQLearning
from rlbase.qlearning.model import Model


class QLearning(BaseAlgorithm):
    """Tabular Q-learning, Q(s, a) += lr * (r + discount * max_a' Q(s', a') - Q(s, a)), with
    epsilon-greedy exploration; epsilon is multiplied by ``epsilon_decay`` after every
    episode. Box observations are cut into ``grid_size`` bins per dimension. An iteration is
    an episode.

    An example, every parameter and the rlbase setting it becomes: rlbase/docs/rlib.md.
    """

    api_class = TabularQLearning
    unit = "episodes"

    def __init__(self, env_kwargs: dict[str, Any], agent_kwargs: dict[str, Any],
                 max_episode_length: int = -1, max_total_reward: float = -1,
                 save_folder: str = "qlearning", num_iterations: int = 1000, lr: float = 0.03,
                 discount: float = 0.99, epsilon_greedy: float = 0.9,
                 epsilon_decay: float = 0.9999, epsilon_min: float = 0.01,
                 test_every: int = 10, num_test_episodes: int = 5, verbose: bool = True,
                 seed: int | None = 42):
        kwargs = arguments(locals())
        spec = EnvSpec(env_kwargs, max_episode_length, max_total_reward)
        super().__init__(kwargs, spec, num_envs=1, save_folder=save_folder, seed=seed,
                         test_every=test_every, num_test_episodes=num_test_episodes,
                         budget=num_iterations, verbose=verbose)
        if not isinstance(agent_kwargs, dict) or set(agent_kwargs) - {"grid_size", "env_kwargs"}:
            raise RLBaseError(f"QLearning: agent_kwargs takes grid_size (bins per dimension "
                              f"of a Box observation), got {agent_kwargs!r}")
        if agent_kwargs.get("env_kwargs", env_kwargs) != env_kwargs:
            raise RLBaseError("QLearning: agent_kwargs['env_kwargs'] differs from env_kwargs; "
                              "leave it out (the table is built for env_kwargs' env)")
        if isinstance(epsilon_decay, bool) or not isinstance(epsilon_decay, (int, float)) \
                or not 0 < epsilon_decay <= 1:
            raise RLBaseError(f"QLearning: epsilon_decay must be in (0, 1], got "
                              f"{epsilon_decay!r}")
        self.epsilon_decay, self.epsilon_min = float(epsilon_decay), epsilon_min
        # rlib decays epsilon once per episode: done here (_after_iterations), so rlbase's
        # per-step decay is off (1.0).
        self._build(None, None, {
            "lr": lr, "gamma": discount, "exploration_initial_eps": epsilon_greedy,
            "exploration_final_eps": epsilon_min, "exploration_decay": 1.0,
            "grid_size": agent_kwargs.get("grid_size", 10)})

    @property
    def epsilon(self) -> float:
        """The current exploration rate."""
        return float(self._table().epsilon)

    def _table(self) -> Model:
        return cast(Model, self.model.model)

    def _after_iterations(self, count: int) -> None:
        table = self._table()
        table.epsilon = max(self.epsilon_min, table.epsilon * self.epsilon_decay ** count)
