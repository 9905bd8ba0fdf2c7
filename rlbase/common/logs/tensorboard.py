"""The logger's TensorBoard output: scalars, texts, histograms, images, figures, videos and
hyperparameters, written with TensorFlow's own summary writer.

Every event is written with ``tf.summary.write`` and the plugin tag TensorBoard reads (the same
events ``tf.summary.scalar``/``text``/``histogram``/``image`` make), because those functions
need the ``tensorboard`` package, which tensorflow-cpu no longer installs. Only hyperparameters
(:class:`~rlbase.common.logs.logger.HParam`) need it: their protocol buffers are TensorBoard's.
"""

from __future__ import annotations

import io
import numbers
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.logs.values import Figure, HParam, Image, KVWriter, Video, _is_excluded

HISTOGRAM_BINS = 30  # tf.summary.histogram's default


def _as_array(value: Any) -> np.ndarray:
    if hasattr(value, "numpy") and callable(value.numpy):  # a TensorFlow tensor
        value = value.numpy()
    return np.asarray(value)


def _to_uint8(array: np.ndarray) -> np.ndarray:
    """uint8 pixels of an image given as uint8 or as floats in [0, 1]."""
    if array.dtype == np.uint8:
        return array
    return (np.clip(array.astype(np.float64), 0.0, 1.0) * 255).round().astype(np.uint8)


def image_hwc(image: Any, dataformats: str) -> np.ndarray:
    """An image array in ``dataformats`` as HWC uint8 (1, 3 or 4 channels)."""
    array = _as_array(image)
    fmt = dataformats.upper()
    if array.ndim != len(fmt) or len(set(fmt)) != len(fmt) or set(fmt) - set("NCHW") \
            or not {"H", "W"} <= set(fmt):
        raise RLBaseError(f"Image: dataformats {dataformats!r} does not fit an array of shape "
                          f"{array.shape}; use a layout of H, W and optionally C and N "
                          "(HWC, CHW, HW, NHWC, NCHW)")
    if "N" in fmt:
        array = array.take(0, axis=fmt.index("N"))
        fmt = fmt.replace("N", "")
    if "C" not in fmt:
        array, fmt = array[..., None], fmt + "C"
    array = np.transpose(array, [fmt.index(axis) for axis in "HWC"])
    if array.shape[2] not in (1, 3, 4):
        raise RLBaseError(f"Image: {array.shape[2]} channels; TensorBoard shows 1, 3 or 4")
    return _to_uint8(array)


def video_gif(frames: Any, fps: float) -> tuple[bytes, int, int]:
    """An animated GIF of ``(N, T, C, H, W)`` frames (N videos side by side): bytes, width,
    height."""
    try:
        from PIL import Image as PILImage  # optional: Pillow
    except ImportError:
        raise RLBaseError("logging a Video to TensorBoard needs Pillow: pip install pillow "
                          "(or rlbase[plot])") from None
    array = _as_array(frames)
    if array.ndim != 5 or array.shape[2] not in (1, 3):
        raise RLBaseError(f"Video: frames of shape {array.shape}; use (N, T, C, H, W) with C "
                          "1 or 3")
    if not fps > 0:
        raise RLBaseError(f"Video: fps must be positive, got {fps!r}")
    # (N, T, C, H, W) -> (T, H, N*W, C): the N videos side by side.
    tiled = np.concatenate(list(np.transpose(array, (0, 1, 3, 4, 2))), axis=2)
    tiled = _to_uint8(tiled)
    if tiled.shape[3] == 1:
        tiled = np.repeat(tiled, 3, axis=3)
    images = [PILImage.fromarray(frame) for frame in tiled]
    buffer = io.BytesIO()
    images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:],
                   duration=max(int(round(1000 / fps)), 1), loop=0)
    return buffer.getvalue(), tiled.shape[2], tiled.shape[1]


def figure_png(figure: Any, close: bool) -> bytes:
    """A matplotlib figure as PNG bytes."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    if close:
        import matplotlib.pyplot as plt  # optional: the plot extra

        plt.close(figure)
    return buffer.getvalue()


class TensorBoardOutputFormat(KVWriter):
    """Key-values as TensorBoard events: numbers as scalars, strings as text, arrays as
    histograms, and :class:`Image`, :class:`Figure`, :class:`Video`, :class:`HParam` values.
    Lists and tuples are left to the other formats.

    :param path: the folder for the event files.
    """

    format_name = "tensorboard"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        import tensorflow as tf  # lazy: plain logging must not pay TensorFlow's import time

        self._tf = tf
        os.makedirs(path, exist_ok=True)
        self.dir = self.path = os.fspath(path)
        self._writer = tf.summary.create_file_writer(self.dir)
        self._metadata = {name: self._plugin(name) for name in ("scalars", "text", "histograms",
                                                                "images")}

    def _plugin(self, name: str) -> Any:
        metadata = self._tf.compat.v1.SummaryMetadata()
        metadata.plugin_data.plugin_name = name
        return metadata

    def _event(self, key: str, tensor: Any, step: int, plugin: str) -> None:
        self._tf.summary.write(key, tensor, step=step, metadata=self._metadata[plugin])

    def _encoded_image(self, key: str, encoded: bytes, width: int, height: int,
                       step: int) -> None:
        tensor = self._tf.constant([str(width).encode(), str(height).encode(), encoded])
        self._event(key, tensor, step, "images")

    def write(self, key_values: Mapping[str, Any],
              key_excluded: Mapping[str, tuple[str, ...] | None] | None = None,
              step: int = 0) -> None:
        tf = self._tf
        with self._writer.as_default():
            for key, value in sorted(key_values.items()):
                key = str(key)
                if _is_excluded(key_excluded, key, self.format_name):
                    continue
                if isinstance(value, str):
                    self._event(key, tf.constant(value), step, "text")
                elif isinstance(value, (numbers.Real, np.bool_)):
                    self._event(key, tf.constant(float(value), tf.float32), step, "scalars")
                elif isinstance(value, (np.ndarray, tf.Tensor)):
                    self._histogram(key, value, step)
                elif isinstance(value, Image):
                    pixels = image_hwc(value.image, value.dataformats)
                    self._encoded_image(key, tf.io.encode_png(pixels).numpy(), pixels.shape[1],
                                        pixels.shape[0], step)
                elif isinstance(value, Figure):
                    png = figure_png(value.figure, value.close)
                    # (width and height: big-endian in the PNG header's IHDR chunk)
                    self._encoded_image(key, png, int.from_bytes(png[16:20], "big"),
                                        int.from_bytes(png[20:24], "big"), step)
                elif isinstance(value, Video):
                    gif, width, height = video_gif(value.frames, value.fps)
                    self._encoded_image(key, gif, width, height, step)
                elif isinstance(value, HParam):
                    self._hparams(value)
        self._writer.flush()

    def _histogram(self, key: str, value: Any, step: int) -> None:
        """Buckets ``[left, right, count]`` as tf.summary.histogram writes them."""
        data = _as_array(value).astype(np.float64).ravel()
        if data.size == 0:
            buckets = np.zeros((0, 3))
        else:
            low, high = float(data.min()), float(data.max())
            if low == high:
                buckets = np.array([[low - 0.5, high + 0.5, float(data.size)]])
            else:
                counts, edges = np.histogram(data, bins=HISTOGRAM_BINS)
                buckets = np.stack([edges[:-1], edges[1:], counts.astype(np.float64)], axis=1)
        self._event(key, self._tf.constant(buckets), step, "histograms")

    def _hparams(self, value: HParam) -> None:
        try:
            from tensorboard.plugins.hparams import api as hp  # optional: the tensorboard extra
            from tensorboard.plugins.hparams import summary_v2  # optional: the tensorboard extra
        except ImportError:
            raise RLBaseError("logging an HParam needs the tensorboard package: pip install "
                              "tensorboard (or rlbase[tensorboard])") from None
        experiment = summary_v2.hparams_config_pb(
            hparams=[hp.HParam(name) for name in value.hparam_dict],
            metrics=[hp.Metric(name) for name in value.metric_dict])
        session = summary_v2.hparams_pb(dict(value.hparam_dict))
        for summary in (experiment, session):
            self._tf.summary.experimental.write_raw_pb(summary.SerializeToString(), step=0)

    def close(self) -> None:
        self._writer.close()
