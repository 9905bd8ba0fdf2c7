"""Tabular Q-learning's model: a Q-table and the epsilon-greedy policy it defines.

No TensorFlow: the Q-table is a numpy array ``[num_states, num_actions]`` updated one
transition at a time. Box observations (MountainCar-v0) are cut into ``grid_size`` equal bins
per dimension between the space's bounds (see rlbase.qlearning.states).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common.base_model import SavesExplorationRate
from rlbase.common.errors import RLBaseError
from rlbase.common.io.checkpoint import generator_state, set_generator_state
from rlbase.qlearning.config import QLearningConfig
from rlbase.qlearning.states import StateIndexer

MAX_TABLE_ENTRIES = 50_000_000  # 200 MB of float32: beyond this a table is a mistake
NETWORK = "tabular"  # the model's network name: a table has none


class Model(SavesExplorationRate):
    """A Q-table and the policies it defines. The config's seed seeds the generator that
    breaks ties and draws exploratory actions; ``epsilon`` is the exploration rate
    ``step(deterministic=False)`` starts acting with."""

    algorithm = "qlearning"

    config: QLearningConfig

    def __init__(self, observation_space: gym.Space, action_space: gym.Space,
                 config: QLearningConfig | None = None, num_envs: int = 1,
                 epsilon: float = 0.0):
        if not isinstance(action_space, gym.spaces.Discrete):
            raise RLBaseError(f"qlearning needs a Discrete action space, got {action_space}; "
                              f"for {type(action_space).__name__} actions use a2c, ppo or ddpg")
        config = config if config is not None else QLearningConfig()
        super().__init__(observation_space, action_space, NETWORK, {}, config, num_envs)
        grid_size, seed = config.grid_size, config.seed
        self.action_start = int(action_space.start)
        self.grid_size = grid_size
        self.states = StateIndexer(observation_space, grid_size)
        entries = self.states.num_states * int(action_space.n)
        if entries > MAX_TABLE_ENTRIES:
            raise RLBaseError(f"a Q-table for {observation_space} with grid_size={grid_size} "
                              f"would have {entries} entries (at most {MAX_TABLE_ENTRIES}); use "
                              "a smaller grid_size or dqn")
        self.q_table = np.zeros((self.states.num_states, int(action_space.n)), np.float64)
        self.rng = np.random.default_rng(seed)
        self.epsilon = float(epsilon)

    # -- acting ---------------------------------------------------------------------------------
    def _best(self, rows: np.ndarray) -> np.ndarray:
        """``[B, n]``: True at every action with the row's highest value."""
        q = self.q_table[rows]
        return q == q.max(axis=1, keepdims=True)

    def greedy(self, rows: np.ndarray) -> np.ndarray:
        """The best action of each row, ties broken at random (an untried table is not
        biased towards action 0)."""
        scores = self.rng.random((len(rows), self.q_table.shape[1])) * self._best(rows)
        return scores.argmax(axis=1)

    def act(self, rows: np.ndarray, epsilon: float) -> np.ndarray:
        """Epsilon-greedy action indices (0..n-1) for table rows."""
        actions = self.greedy(rows)
        explore = self.rng.random(len(rows)) < epsilon
        if explore.any():
            actions = np.where(explore, self.rng.integers(0, self.q_table.shape[1], len(rows)),
                               actions)
        return actions

    def step(self, obs: Any, state: Any = None, mask: Any = None,
             deterministic: bool = False) -> tuple[np.ndarray, np.ndarray, Any, None]:
        """(actions, Q-value of the greedy action, state, None); epsilon-greedy with the
        current ``model.epsilon`` (ties broken at random) unless deterministic."""
        rows = self.states(obs)
        if deterministic:  # the same observation always gets the same action (lowest on ties)
            actions = self.q_table[rows].argmax(axis=1)
        else:
            actions = self.act(rows, self.epsilon)
        values = self.q_table[rows].max(axis=1)
        return actions + self.action_start, values, state, None

    def action_probabilities(self, obs: Any, state: np.ndarray, mask: np.ndarray
                             ) -> tuple[np.ndarray, ...]:
        """The distribution ``step`` samples from: epsilon spread over every action, the rest
        shared by the tied best actions."""
        best = self._best(self.states(obs))
        n, eps = best.shape[1], float(self.epsilon)
        return (eps / n + (1.0 - eps) * best / best.sum(axis=1, keepdims=True),)

    # -- learning -------------------------------------------------------------------------------
    def update(self, rows: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
               next_rows: np.ndarray, dones: np.ndarray, lr: float, gamma: float) -> None:
        """One Q-learning step per transition, in order (envs may share a state). ``dones``:
        where the target does not bootstrap (rlbase.common.buffers.transitions.target_dones)."""
        q = self.q_table
        for s, a, r, s2, done in zip(rows, actions, rewards, next_rows, dones):
            target = r if done else r + gamma * q[s2].max()
            q[s, a] += lr * (target - q[s, a])

    # -- the declared interface -----------------------------------------------------------------
    def parameter_arrays(self) -> dict[str, np.ndarray]:
        return {"q_table": self.q_table}

    def load_parameter_arrays(self, arrays: dict[str, np.ndarray], source: str = "") -> None:
        table = arrays.get("q_table")
        if table is None or table.shape != self.q_table.shape:
            raise RLBaseError(f"model file {source}: its Q-table has shape "
                              f"{None if table is None else table.shape}, this env needs "
                              f"{self.q_table.shape} (grid_size={self.grid_size})")
        self.q_table = np.array(table, np.float64)

    def resume_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta, arrays = super().resume_state()
        meta.update(epsilon=self.epsilon, rng=generator_state(self.rng))
        return meta, arrays

    def restore_resume_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super().restore_resume_state(meta, arrays)
        if "epsilon" not in meta or "rng" not in meta:
            raise RLBaseError("the checkpoint lacks Q-learning's exploration rate or "
                              "generator: it was written by another algorithm or version")
        self.epsilon = float(meta["epsilon"])
        set_generator_state(self.rng, meta["rng"])


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: QLearningConfig, *,
                total_timesteps: int = 0) -> Model:
    """Q-learning's model for these spaces (learn() and rlbase.QLearning call this);
    ``network`` is ignored and ``network_kwargs`` must be empty: a Q-table has no network."""
    if network_kwargs:
        raise RLBaseError(f"qlearning has no network, so no network arguments: got "
                          f"{', '.join(sorted(network_kwargs))}")
    return Model(observation_space, action_space, config, num_envs,
                 epsilon=config.exploration_initial_eps)
