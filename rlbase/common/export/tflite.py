"""The TFLite format: ``policy.tflite`` (float32) with the SavedModel's signatures, and
optionally ``policy_int8.tflite`` (dynamic-range int8 weights), whose action agreement with
the float policy is measured on observations drawn from the space and recorded in
rlbase_export.json."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import tensorflow as tf

from rlbase.common.errors import RLBaseError
from rlbase.common.export import metadata, runners
from rlbase.common.export.check import verify
from rlbase.common.export.graph import DETERMINISTIC, ExportedPolicy
from rlbase.common.networks.policy_graph import ExportableModel

AGREEMENT_SAMPLES = 1000


def convert(saved_model: str, quantize: bool) -> tuple[bytes, bool]:
    """(the flatbuffer of the deterministic signature, whether it needs TF's "flex" ops):
    TFLite's built-in ops first, TF ops as a last resort. The sampling signature stays in the
    SavedModel: its stateless random ops exist in TFLite only as flex ops."""
    def attempt(flex: bool) -> bytes:
        converter = tf.lite.TFLiteConverter.from_saved_model(saved_model,
                                                             signature_keys=[DETERMINISTIC])
        ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        if flex:
            ops.append(tf.lite.OpsSet.SELECT_TF_OPS)
        converter.target_spec.supported_ops = ops
        if quantize:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        return converter.convert()

    error = ""
    for flex in (False, True):
        try:
            return attempt(flex), flex
        except Exception as exc:  # noqa: BLE001 - the converter raises many kinds
            error = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
    raise RLBaseError(f"TFLite cannot express this policy: {error}")


def write_tflite(policy: ExportedPolicy, model: ExportableModel, out: str, quantize: bool) -> str:
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "policy.tflite")
    name = f"{model.algorithm}'s {model.network} policy"
    with tempfile.TemporaryDirectory() as tmp:
        frozen = policy.frozen()
        tf.saved_model.save(frozen, os.path.join(tmp, "sm"),
                            signatures={DETERMINISTIC: frozen.act.get_concrete_function()})
        try:
            flat, flex = convert(os.path.join(tmp, "sm"), False)
        except RLBaseError as exc:
            raise RLBaseError(f"cannot export {name} to tflite: {exc}") from None
        _write(path, flat)
        verify(path, policy, model, "tflite")
        extra: dict[str, Any] = {"flex_ops": flex}
        if quantize:
            flat8 = convert(os.path.join(tmp, "sm"), True)[0]
            path8 = os.path.join(out, "policy_int8.tflite")
            _write(path8, flat8)
            extra["int8"] = {"file": os.path.basename(path8),
                             **int8_agreement(path, path8, policy, model)}
    metadata.write(out, metadata.describe(policy, model, "tflite", [DETERMINISTIC], **extra))
    return path


def int8_agreement(path: str, path8: str, policy: ExportedPolicy, model: ExportableModel
                   ) -> dict[str, Any]:
    """The int8 file's actions against the float file's on AGREEMENT_SAMPLES observations
    drawn from the observation space (seeded)."""
    inputs = runners.sample_inputs(model.observation_space, policy.names, AGREEMENT_SAMPLES,
                                   seed=0, state_size=policy.state_size,
                                   action_space=policy.mask_space)
    a = runners.load(path)(**inputs)["actions"]
    b = runners.load(path8)(**inputs)["actions"]
    return {"samples": AGREEMENT_SAMPLES, **runners.agreement(model.action_space, a, b)}


def _write(path: str, data: bytes) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
