"""rlbase: reinforcement-learning algorithms on TensorFlow 2 and gymnasium."""

import os as _os

from rlbase.common import quiet_import as _quiet_import
from rlbase.compat import module_paths as _module_paths
from rlbase.compat.baselines import callback_form as _baselines_callback_form

# Before TensorFlow is first imported (here is the one place): its C++ log level unless the user
# set one, Keras 3 on TensorFlow, and the start-up notices filtered out of stderr.
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
_os.environ.setdefault("KERAS_BACKEND", "tensorflow")
_quiet_import.install()
# Baselines' paths and rlbase's older ones (rlbase.logger, rlbase.common.cmd_util, ...).
_module_paths.install()
# Baselines' deepq callback(lcl, glb), adapted or refused before any loop runs it.
_baselines_callback_form.install()

__version__ = "0.2.0"

_API = ("A2C", "ACER", "ACKTR", "CrossQ", "DDPG", "DQN", "ES", "GAIL", "MaskablePPO", "PPO",
        "PQN", "QLearning", "QRDQN", "SAC", "TD3", "TQC", "TRPO", "ExpertDataset",
        "generate_expert_traj")
__all__ = ["__version__", *_API, "HerReplayBuffer"]


def __getattr__(name: str):
    # Lazy: `import rlbase` (the CLI, every subprocess) must not pay for TensorFlow.
    if name in _API:
        from rlbase.compat import sb3 as api

        return getattr(api, name)
    if name == "HerReplayBuffer":  # SB3's replay_buffer_class=HerReplayBuffer
        from rlbase.common.buffers.her_replay_buffer import HerReplayBuffer

        return HerReplayBuffer
    raise AttributeError(f"module 'rlbase' has no attribute {name!r}")
