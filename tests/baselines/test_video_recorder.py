"""Port of baselines/common/vec_env/test_video_recorder.py: VecVideoRecorder over each
VecEnv kind writes two non-empty mp4 clips in ``video_interval + video_length + 1`` steps.

Deliberate difference (gymnasium's API): an env renders frames only when made with
``render_mode="rgb_array"``, so Pong is made that way.
"""

import glob
import os

import gymnasium as gym
import pytest

from rlbase.common.vec_env import DummyVecEnv, ShmemVecEnv, SubprocVecEnv, VecVideoRecorder

pytest.importorskip("ale_py")
pytest.importorskip("imageio_ffmpeg")


def make_pong():
    import ale_py

    gym.register_envs(ale_py)
    return gym.make("PongNoFrameskip-v4", render_mode="rgb_array")


@pytest.mark.parametrize("klass", (DummyVecEnv, ShmemVecEnv, SubprocVecEnv),
                         ids=("DummyVecEnv", "ShmemVecEnv", "SubprocVecEnv"))
@pytest.mark.parametrize("num_envs", (1, 4))
@pytest.mark.parametrize("video_length", (10, 100))
@pytest.mark.parametrize("video_interval", (1, 50))
def test_video_recorder(klass, num_envs, video_length, video_interval, tmp_path):
    """The first clip starts at the reset, the second at the next trigger after it ends."""
    venv = klass([make_pong] * num_envs)
    venv = VecVideoRecorder(venv, str(tmp_path),
                            record_video_trigger=lambda step: step % video_interval == 0,
                            video_length=video_length)
    venv.reset()
    for _ in range(video_interval + video_length + 1):
        venv.step([0] * num_envs)
    venv.close()

    clips = glob.glob(os.path.join(str(tmp_path), "*.mp4"))
    assert len(clips) == 2, clips
    assert all(os.stat(path).st_size != 0 for path in clips)
