"""Model classes (the Stable Baselines way) over the algorithms' learn() functions."""

from rlbase.api.a2c import A2C
from rlbase.api.acer import ACER
from rlbase.api.acktr import ACKTR
from rlbase.api.base_class import BaseRLModel
from rlbase.api.behaviour_cloning import generate_expert_traj
from rlbase.api.ddpg import DDPG, TD3
from rlbase.api.dqn import DQN
from rlbase.api.es import ES
from rlbase.api.gail import GAIL
from rlbase.api.ppo import PPO
from rlbase.api.pretraining import ExpertDataset
from rlbase.api.qlearning import QLearning
from rlbase.api.sac import SAC
from rlbase.api.trpo import TRPO

__all__ = ["A2C", "ACER", "ACKTR", "BaseRLModel", "DDPG", "DQN", "ES", "ExpertDataset", "GAIL",
           "PPO", "QLearning", "SAC", "TD3", "TRPO", "generate_expert_traj"]
