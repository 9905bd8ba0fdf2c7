"""Model classes (the Stable Baselines way) over the algorithms' learn() functions."""

from rlbase.compat.sb3.a2c import A2C
from rlbase.compat.sb3.acer import ACER
from rlbase.compat.sb3.acktr import ACKTR
from rlbase.compat.sb3.base_class import BaseRLModel
from rlbase.compat.sb3.crossq import CrossQ
from rlbase.compat.sb3.ddpg import DDPG, TD3
from rlbase.compat.sb3.dqn import DQN
from rlbase.compat.sb3.es import ES
from rlbase.compat.sb3.gail import GAIL
from rlbase.compat.sb3.ppo import PPO
from rlbase.compat.sb3.ppo_mask import MaskablePPO
from rlbase.compat.sb3.pqn import PQN
from rlbase.compat.sb3.pretraining import ExpertDataset
from rlbase.compat.sb3.pretraining.expert_traj import generate_expert_traj
from rlbase.compat.sb3.qlearning import QLearning
from rlbase.compat.sb3.qrdqn import QRDQN
from rlbase.compat.sb3.sac import SAC
from rlbase.compat.sb3.tqc import TQC
from rlbase.compat.sb3.trpo import TRPO

__all__ = ["A2C", "ACER", "ACKTR", "BaseRLModel", "CrossQ", "DDPG", "DQN", "ES", "ExpertDataset",
           "GAIL", "MaskablePPO", "PPO", "PQN", "QLearning", "QRDQN", "SAC", "TD3", "TQC", "TRPO",
           "generate_expert_traj"]
