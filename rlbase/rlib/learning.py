"""``rlbase.rlib.learning``: the algorithms under rlib's module path (``rlib.learning``)."""

from rlbase.rlib.base import BaseAlgorithm
from rlbase.rlib.ddpg import DDPG
from rlbase.rlib.deep_q_learning import DeepQLearning
from rlbase.rlib.evolution_strategy import EvolutionStrategy
from rlbase.rlib.ppo import PPO
from rlbase.rlib.q_learning import QLearning

__all__ = ["BaseAlgorithm", "DDPG", "DeepQLearning", "EvolutionStrategy", "PPO", "QLearning"]
