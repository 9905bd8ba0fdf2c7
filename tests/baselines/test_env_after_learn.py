"""Port of baselines/common/tests/test_env_after_learn.py: ``learn(total_timesteps=0)`` on a
SubprocVecEnv of Pong leaves the env usable (it neither closes nor breaks it).

ppo2 is rlbase's ``ppo``, deepq ``dqn`` and trpo_mpi ``trpo`` (looked up by their Baselines
names through the registry's aliases).
"""

import gymnasium as gym
import pytest

from rlbase.common.vec_env import SubprocVecEnv
from rlbase.registry import get_algorithm

pytest.importorskip("ale_py")

# deepq: its replay buffer for 50000 raw Pong frames is written full of zeros when built
# (np.zeros_like in rlbase.common.buffers.replay_buffer), ~5 GB and ~30 s: slow until that is lazy.
ALGOS = ["a2c", "acer", "acktr", pytest.param("deepq", marks=pytest.mark.slow), "ppo2",
         "trpo_mpi"]


def make_pong():
    import ale_py

    gym.register_envs(ale_py)
    return gym.make("PongNoFrameskip-v4")


@pytest.mark.parametrize("algo", ALGOS)
def test_env_after_learn(algo):
    # acktr: an mlp on Pong frames would need a 100801 x 100801 Kronecker factor; CartPole
    env = SubprocVecEnv([make_pong if algo != "acktr" else lambda: gym.make("CartPole-v1")])
    learn = get_algorithm(algo).learn
    learn(network="mlp", env=env, total_timesteps=0, load_path=None, seed=None)
    env.reset()
    env.close()
