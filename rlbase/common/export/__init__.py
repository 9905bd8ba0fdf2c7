"""Export a trained policy: TensorFlow SavedModel, TFLite and ONNX (``rlbase export``).

``export_model(model, out, format)`` writes the whole deterministic policy of an rlbase model
(observation normalization, network, action post-processing) so that the artifact's actions
equal ``predict(obs, deterministic=True)``. One job per file: :mod:`.graph` builds the
policy as a ``tf.Module``, :mod:`.saved_model`, :mod:`.tflite` and :mod:`.onnx` write the
formats, :mod:`.metadata` describes an artifact, :mod:`.cli` is the subcommand.
"""

from __future__ import annotations

import os

from rlbase.common.errors import RLBaseError
from rlbase.common.export.graph import ExportedPolicy
from rlbase.common.export.onnx import write_onnx
from rlbase.common.export.saved_model import write_saved_model
from rlbase.common.export.tflite import write_tflite
from rlbase.common.networks.policy_graph import ExportableModel

FORMATS = ("saved_model", "tflite", "onnx")


def export_model(model: ExportableModel, out: str, format: str = "saved_model",
                 quantize: bool = False) -> str:
    """Write ``model``'s policy into the folder ``out`` as ``format``; returns the artifact
    written (the SavedModel folder, ``policy.tflite`` or ``policy.onnx``).

    quantize: TFLite only: also write ``policy_int8.tflite`` (dynamic-range int8 weights) and
        record how often its actions agree with the float policy's.
    """
    if format not in FORMATS:
        raise RLBaseError(f"unknown export format {format!r}; use one of {', '.join(FORMATS)}")
    if quantize and format != "tflite":
        raise RLBaseError(f"quantize applies to the tflite format, not {format!r}")

    out = os.path.abspath(os.path.expanduser(os.fspath(out)))
    policy = ExportedPolicy(model)  # a model that is no network refuses here, in one line
    if format == "saved_model":
        return write_saved_model(policy, model, out)
    if format == "tflite":
        return write_tflite(policy, model, out, quantize)

    return write_onnx(policy, model, out)
