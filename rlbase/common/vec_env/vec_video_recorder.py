"""VecVideoRecorder: H.264 mp4 clips of the first env, started by a trigger on the step count."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Generator
from typing import Any

import numpy as np

from rlbase.common.display import quiet_offscreen_rendering
from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env.base import VecEnv, VecEnvWrapper, VecStepResult

_DEFAULT_FPS = 30


class VecVideoRecorder(VecEnvWrapper):
    """Record ``venv.render()`` frames into mp4 files: H.264 video in yuv420p, which browsers,
    notebooks and experiment trackers play (written through imageio-ffmpeg, whose wheel
    carries ffmpeg: ``pip install 'rlbase[video]'``).

    A clip starts at a reset or step where ``record_video_trigger(step_count)`` is true and no
    clip is running; it ends after ``video_length`` frames or at :meth:`close`.
    The envs must be made with ``render_mode="rgb_array"``.

    :param venv: the env to wrap.
    :param directory: folder for the videos (created).
    :param record_video_trigger: step count -> whether to start a clip now.
    :param video_length: frames per clip.
    :param name_prefix: file names are ``<prefix>-step-<start>-to-step-<end>.mp4``, ``end``
        being ``start`` plus the frames the clip holds (a clip ended early is named for what
        it holds; while recording it is ``<prefix>-step-<start>-recording.mp4``).
    """

    def __init__(self, venv: VecEnv, directory: str,
                 record_video_trigger: Callable[[int], bool], video_length: int = 200,
                 name_prefix: str = "rl-video"):
        super().__init__(venv)
        if video_length < 1:
            raise RLBaseError(f"video_length={video_length!r} is not allowed: use an integer >= 1")
        if importlib.util.find_spec("imageio_ffmpeg") is None:
            raise RLBaseError("recording videos needs imageio-ffmpeg: pip install 'rlbase[video]'")
        quiet_offscreen_rendering()  # before the first render() initialises pygame
        self.directory = os.path.abspath(os.fspath(directory))
        os.makedirs(self.directory, exist_ok=True)
        self.record_video_trigger = record_video_trigger
        self.video_length = int(video_length)
        self.name_prefix = name_prefix
        self.step_id = 0
        self.clip_start = 0
        self.recorded_frames = 0
        self.recording = False
        self.video_path: str | None = None
        self.video_paths: list[str] = []
        self._writer: Generator[Any, Any, None] | None = None  # opened at the first frame

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
        self.clip_start = self.step_id
        name = f"{self.name_prefix}-step-{self.step_id}-recording.mp4"
        self.video_path = os.path.join(self.directory, name)
        self.recording = True
        self.recorded_frames = 0
        self._capture()

    def _capture(self) -> None:
        frame = self.venv.render()
        if frame is None:
            raise RLBaseError("VecVideoRecorder got no frame from render(): make the envs with "
                              "render_mode='rgb_array'")
        frame = _even(np.ascontiguousarray(frame, dtype=np.uint8))
        if self._writer is None:
            self._open_writer(frame.shape[1], frame.shape[0])
        assert self._writer is not None
        self._writer.send(frame)
        self.recorded_frames += 1
        if self.recorded_frames >= self.video_length:
            self.end_clip()

    def _open_writer(self, width: int, height: int) -> None:
        import imageio_ffmpeg  # the video extra

        fps = self.venv.render_fps or _DEFAULT_FPS
        self._writer = imageio_ffmpeg.write_frames(
            self.video_path, (width, height), fps=float(fps), codec="libx264",
            pix_fmt_out="yuv420p", macro_block_size=1, ffmpeg_log_level="error")
        self._writer.send(None)  # start ffmpeg

    def end_clip(self) -> None:
        """Finish the clip being recorded (the next trigger starts another)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            assert self.video_path is not None
            end = self.clip_start + self.recorded_frames
            final = os.path.join(self.directory,
                                 f"{self.name_prefix}-step-{self.clip_start}-to-step-{end}.mp4")
            os.replace(self.video_path, final)
            self.video_path = final
            self.video_paths.append(final)
        self.recording = False
        self.recorded_frames = 0

    def close(self) -> None:
        self.end_clip()
        super().close()


def _even(frame: np.ndarray) -> np.ndarray:
    """H.264 in yuv420p needs even width and height: pad the last row/column if odd."""
    h, w = frame.shape[:2]
    if h % 2 or w % 2:
        frame = np.pad(frame, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")
    return frame
