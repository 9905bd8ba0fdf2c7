"""rlbase: reinforcement-learning algorithms on TensorFlow 2 and gymnasium."""

import os as _os

# Before TensorFlow is first imported: keep its C++ start-up chatter off the console, and
# make sure Keras 3 runs on TensorFlow.
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
_os.environ.setdefault("KERAS_BACKEND", "tensorflow")

__version__ = "0.2.0"

_API = ("A2C", "ACER", "DDPG", "DQN", "ES", "PPO", "QLearning", "SAC", "TD3", "ExpertDataset",
        "generate_expert_traj")
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    # Lazy: `import rlbase` (the CLI, every subprocess) must not pay for TensorFlow.
    if name in _API:
        from rlbase import api

        return getattr(api, name)
    raise AttributeError(f"module 'rlbase' has no attribute {name!r}")
