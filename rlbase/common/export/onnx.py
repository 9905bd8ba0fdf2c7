"""The ONNX format through tf2onnx (``pip install 'rlbase[export]'``): ``policy.onnx`` (the
deterministic policy, inputs and outputs named as in the SavedModel); the spaces and rlbase's
version are in the model's metadata_props and in rlbase_export.json. No sampling variant:
tf2onnx 1.17 converts none of TF's stateless random ops."""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from rlbase.common.errors import RLBaseError
from rlbase.common.export import metadata
from rlbase.common.export.check import verify
from rlbase.common.export.graph import ExportedPolicy
from rlbase.common.export.runners import require_onnx
from rlbase.common.networks.policy_graph import ExportableModel

OPSET = 17


def _convert(fn: Any, specs: list[Any], path: str, props: dict[str, str]) -> None:
    import tf2onnx  # optional: the export extra

    logging.getLogger("tf2onnx").setLevel(logging.ERROR)
    proto, _ = tf2onnx.convert.from_function(fn, input_signature=specs, opset=OPSET)
    for key, value in props.items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(proto.SerializeToString())
    os.replace(tmp, path)


def write_onnx(policy: ExportedPolicy, model: ExportableModel, out: str) -> str:
    require_onnx()
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "policy.onnx")
    signatures = ["serving_default"]
    info = metadata.describe(policy, model, "onnx", signatures)
    props = {"rlbase_export": json.dumps(info)}
    try:
        _convert(policy.frozen().act, policy.input_specs, path, props)
    except Exception as exc:  # noqa: BLE001 - tf2onnx raises many kinds
        raise RLBaseError(f"cannot export {model.algorithm}'s {model.network} policy to onnx: "
                          f"{str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}"
                          ) from None
    verify(path, policy, model, "onnx")
    metadata.write(out, info)
    return path
