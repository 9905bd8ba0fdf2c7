"""The Baselines VecEnv API on top of ``gymnasium.vector``."""

from rlbase.common.vec_env.base import (
    StepResult,
    VecEnv,
    VecEnvWrapper,
    find_wrapper,
    vec_step,
)
from rlbase.common.vec_env.gym_vec import DummyVecEnv, GymVecEnv
from rlbase.common.vec_env.subproc_vec_env import EnvWorkerError, ShmemVecEnv, SubprocVecEnv
from rlbase.common.vec_env.vec_check_finite import VecCheckFinite
from rlbase.common.vec_env.vec_frame_stack import VecFrameStack
from rlbase.common.vec_env.vec_monitor import VecMonitor
from rlbase.common.vec_env.vec_normalize import VecNormalize
from rlbase.common.vec_env.vec_video_recorder import VecVideoRecorder

__all__ = [
    "DummyVecEnv",
    "EnvWorkerError",
    "GymVecEnv",
    "ShmemVecEnv",
    "StepResult",
    "SubprocVecEnv",
    "VecEnv",
    "VecCheckFinite",
    "VecEnvWrapper",
    "VecFrameStack",
    "VecMonitor",
    "VecNormalize",
    "VecVideoRecorder",
    "vec_step",
    "find_wrapper",
]
