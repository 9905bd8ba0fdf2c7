"""``rlbase.compat.rlib.learning``: the algorithms under rlib's module path (``rlib.learning``)."""

from rlbase.compat.rlib.base import BaseAlgorithm
from rlbase.compat.rlib.ddpg import DDPG
from rlbase.compat.rlib.deep_q_learning import DeepQLearning
from rlbase.compat.rlib.evolution_strategy import EvolutionStrategy
from rlbase.compat.rlib.ppo import PPO
from rlbase.compat.rlib.q_learning import QLearning

__all__ = ["BaseAlgorithm", "DDPG", "DeepQLearning", "EvolutionStrategy", "PPO", "QLearning"]
