"""What the logger's outputs share: the writer protocol (SB3's ``KVWriter`` and ``SeqWriter``)
and the values only TensorBoard shows (SB3's ``Video``, ``Figure``, ``Image``, ``HParam``).

Apart from the logger so that its formats (the TensorBoard one among them) and the logger can
import them without importing each other.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from rlbase.common.errors import RLBaseError

STEP_KEY = "time/total_timesteps"  # what a resumed run's files are cut by (truncate_after)


# --- values only TensorBoard shows (SB3's names) ---------------------------------------------


class Video:
    """Frames to show as a video in TensorBoard (an animated GIF; needs Pillow).

    :param frames: an array of shape ``(N, T, C, H, W)`` (N videos side by side, T frames, C 1 or
        3 channels), uint8 or floats in [0, 1].
    :param fps: frames per second.
    """

    def __init__(self, frames: Any, fps: float):
        self.frames = frames
        self.fps = fps


class Figure:
    """A matplotlib figure to show as an image in TensorBoard.

    :param figure: the figure.
    :param close: close the figure once it is written.
    """

    def __init__(self, figure: Any, close: bool):
        self.figure = figure
        self.close = close


class Image:
    """An image to show in TensorBoard.

    :param image: an array (uint8, or floats in [0, 1]) or a tensor.
    :param dataformats: the array's layout: ``HWC`` (what gymnasium envs render), ``CHW``,
        ``HW``, ``WH``, ``NHWC``, ``NCHW`` (the first of N images is shown).
    """

    def __init__(self, image: Any, dataformats: str):
        self.image = image
        self.dataformats = dataformats


class HParam:
    """Hyperparameters for TensorBoard's HPARAMS tab (needs the ``tensorboard`` package).

    :param hparam_dict: hyperparameter names and values (bool, str, number or None).
    :param metric_dict: the metrics to show beside them (their values come from the scalars
        logged under those keys); must not be empty.
    """

    def __init__(self, hparam_dict: Mapping[str, bool | str | float | None],
                 metric_dict: Mapping[str, float]):
        if not metric_dict:
            raise RLBaseError("HParam needs a non-empty metric_dict (the metrics TensorBoard's "
                              "HPARAMS tab shows), e.g. {'rollout/ep_rew_mean': 0}")
        self.hparam_dict = hparam_dict
        self.metric_dict = metric_dict


_TENSORBOARD_ONLY = (Video, Figure, Image, HParam)


class FormatUnsupportedError(RLBaseError, NotImplementedError):
    """A value the output format cannot write (a video on stdout)."""

    def __init__(self, unsupported_formats: Sequence[str], value_description: str):
        names = ", ".join(unsupported_formats)
        super().__init__(
            f"the log format{'s' if len(unsupported_formats) > 1 else ''} {names} cannot write "
            f"the {value_description} value logged: leave them out with record(key, value, "
            f"exclude=({', '.join(repr(f) for f in unsupported_formats)},))")


def _refuse_tensorboard_only(value: Any, fmt: str) -> None:
    for kind in _TENSORBOARD_ONLY:
        if isinstance(value, kind):
            raise FormatUnsupportedError([fmt], kind.__name__.lower())


def _is_excluded(key_excluded: Mapping[str, Any] | None, key: str, fmt: str) -> bool:
    excluded = key_excluded.get(key) if key_excluded else None
    return excluded is not None and fmt in excluded


def _step_of(kvs: Mapping[str, Any], default: int) -> int:
    """A Baselines dump's TensorBoard step: its ``time/total_timesteps`` value if it has one."""
    value = kvs.get(STEP_KEY)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return int(float(value))
    return default


# --- output formats ---------------------------------------------------------------------------


class KVWriter:
    """An output that receives one dict of key-values per dump.

    ``write(key_values, key_excluded, step)`` is SB3's call; ``writekvs(kvs)`` Baselines'.
    """

    path = ""  # the file or folder it writes (warnings name it)
    format_name = ""  # the name ``exclude`` refers to

    def write(self, key_values: Mapping[str, Any],
              key_excluded: Mapping[str, tuple[str, ...] | None] | None = None,
              step: int = 0) -> None:
        raise NotImplementedError

    def writekvs(self, kvs: Mapping[str, Any]) -> None:
        self.write(kvs, None, _step_of(kvs, 0))

    def close(self) -> None:
        """Release files or writers held by this output."""

    def truncate_after(self, steps: int) -> None:
        """Drop what was written for ``time/total_timesteps`` past ``steps`` (a resumed run
        rewrites those rows); outputs without rows to drop do nothing."""

    def _kept(self, key_values: Mapping[str, Any],
              key_excluded: Mapping[str, tuple[str, ...] | None] | None) -> dict[str, Any]:
        return {str(k): v for k, v in key_values.items()
                if not _is_excluded(key_excluded, k, self.format_name)}


class SeqWriter:
    """An output that receives free-form text lines from :func:`log`."""

    def write_sequence(self, sequence: Sequence[Any]) -> None:
        raise NotImplementedError

    def writeseq(self, seq: Sequence[Any]) -> None:  # Baselines' name
        self.write_sequence(seq)
