"""``rlbase export --load_path=m.zip --format=saved_model|tflite|onnx --out=DIR [--quantize]``:
any saved rlbase model (or checkpoint) to a deployable policy."""

from __future__ import annotations

import argparse
import json
import os

from rlbase.common.arg_types import path_arg
from rlbase.common.export.metadata import FILENAME
from rlbase.export import FORMATS, export_model
from rlbase.registry import load


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rlbase export",
        description="Write a saved model's deterministic policy (observation normalization, "
                    "network, action post-processing) as a TensorFlow SavedModel, TFLite or "
                    "ONNX file whose actions equal predict(obs, deterministic=True).")
    p.add_argument("--load_path", required=True, type=path_arg,
                   help="the model file (.zip) to export")
    p.add_argument("--format", default="saved_model", choices=FORMATS)
    p.add_argument("--out", required=True, type=path_arg,
                   help="the folder to write (the SavedModel itself, or the folder of "
                        "policy.tflite / policy.onnx)")
    p.add_argument("--quantize", action="store_true",
                   help="tflite: also write policy_int8.tflite (dynamic-range int8 weights) "
                        "and report its action agreement with the float policy")
    return p


def main(argv: list[str]) -> None:
    args = parser().parse_args(argv)
    model = load(args.load_path, num_envs=1)
    path = export_model(model, args.out, args.format, quantize=args.quantize)
    print(f"exported {model.algorithm}'s {model.network} policy to {path}")
    info = os.path.join(args.out, FILENAME)
    if args.quantize and os.path.exists(info):
        with open(info, encoding="utf-8") as f:
            int8 = json.load(f).get("int8") or {}
        print(f"int8 agreement with the float policy: {json.dumps(int8)}")
