"""VecVideoRecorder: mp4 clips of the first env, started by a trigger on the step count."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env.base import VecEnv, VecEnvWrapper, VecStepResult

_DEFAULT_FPS = 30


class VecVideoRecorder(VecEnvWrapper):
    """Record ``venv.render()`` frames into mp4 files (OpenCV, ``mp4v`` codec).

    A clip starts at a reset or step where ``record_video_trigger(step_count)`` is true and no
    clip is running; it ends after ``video_length`` frames or at :meth:`close`.
    The envs must be made with ``render_mode="rgb_array"``.

    :param venv: the env to wrap.
    :param directory: folder for the videos (created).
    :param record_video_trigger: step count -> whether to start a clip now.
    :param video_length: frames per clip.
    :param name_prefix: file names are ``<prefix>-step-<start>-to-step-<end>.mp4``.
    """

    def __init__(self, venv: VecEnv, directory: str,
                 record_video_trigger: Callable[[int], bool], video_length: int = 200,
                 name_prefix: str = "rl-video"):
        super().__init__(venv)
        if video_length < 1:
            raise RLBaseError(f"video_length={video_length!r} is not allowed: use an integer >= 1")
        self.directory = os.path.abspath(os.fspath(directory))
        os.makedirs(self.directory, exist_ok=True)
        self.record_video_trigger = record_video_trigger
        self.video_length = int(video_length)
        self.name_prefix = name_prefix
        self.step_id = 0
        self.recorded_frames = 0
        self.recording = False
        self.video_path: str | None = None
        self.video_paths: list[str] = []
        self._writer = None  # opened at the first frame, when the frame size is known

    def reset(self) -> np.ndarray:
        obs = self.venv.reset()
        if not self.recording and self.record_video_trigger(self.step_id):
            self._start()
        return obs

    def step_wait(self) -> VecStepResult:
        result = self.venv.step_wait()
        self.step_id += 1
        if self.recording:
            self._capture()
        elif self.record_video_trigger(self.step_id):
            self._start()
        return result

    def _start(self) -> None:
        end = self.step_id + self.video_length
        name = f"{self.name_prefix}-step-{self.step_id}-to-step-{end}.mp4"
        self.video_path = os.path.join(self.directory, name)
        self.recording = True
        self.recorded_frames = 0
        self._capture()

    def _capture(self) -> None:
        frame = self.venv.render()
        if frame is None:
            raise RLBaseError("VecVideoRecorder got no frame from render(): make the envs with "
                              "render_mode='rgb_array'")
        frame = np.asarray(frame, dtype=np.uint8)
        if self._writer is None:
            self._open_writer(frame.shape[1], frame.shape[0])
        import cv2

        self._writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))  # OpenCV expects BGR
        self.recorded_frames += 1
        if self.recorded_frames >= self.video_length:
            self._close_video()

    def _open_writer(self, width: int, height: int) -> None:
        import cv2  # imported on the first frame: recording is the only user of OpenCV here

        fourcc = cv2.VideoWriter_fourcc(*"mp4v")
        writer = cv2.VideoWriter(self.video_path, fourcc, float(self._fps()), (width, height))
        if not writer.isOpened():
            raise RLBaseError(f"cannot open video file {self.video_path} for writing with the "
                              "mp4v codec")
        self._writer = writer

    def _fps(self) -> float:
        vector_env = getattr(self.venv.unwrapped, "vector_env", None)
        metadata = getattr(vector_env, "metadata", None) or {}
        return metadata.get("render_fps") or _DEFAULT_FPS

    def _close_video(self) -> None:
        if self._writer is not None:
            self._writer.release()
            self._writer = None
            self.video_paths.append(self.video_path)
        self.recording = False
        self.recorded_frames = 0

    def close(self) -> None:
        self._close_video()
        super().close()
