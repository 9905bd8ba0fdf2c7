"""The SavedModel format: ``serving_default`` (deterministic) and ``sample`` (with a seed)
signatures, callable from ``tf.saved_model.load`` and TF Serving; ``assets/`` holds
rlbase_export.json (spaces, version, inputs)."""

from __future__ import annotations

import os
import shutil
import tempfile

import tensorflow as tf

from rlbase.common.errors import RLBaseError
from rlbase.common.export import metadata
from rlbase.common.export.check import verify
from rlbase.common.export.graph import ExportedPolicy
from rlbase.common.networks.policy_graph import ExportableModel


def save(policy: ExportedPolicy, model: ExportableModel, folder: str, fmt: str = "saved_model"
         ) -> list[str]:
    """Write the SavedModel into ``folder`` (made fresh); returns its signature keys."""
    signatures = policy.signatures()
    info = metadata.describe(policy, model, fmt, sorted(signatures))
    with tempfile.TemporaryDirectory() as tmp:
        asset = metadata.write(tmp, info)
        policy.metadata = tf.saved_model.Asset(asset)
        try:
            tf.saved_model.save(policy, folder, signatures=signatures)
        except (ValueError, TypeError, tf.errors.OpError) as exc:
            raise RLBaseError(f"cannot write {model.algorithm}'s {model.network} policy as a "
                              f"SavedModel: {str(exc).splitlines()[0]}") from None
    return sorted(signatures)


def write_saved_model(policy: ExportedPolicy, model: ExportableModel, out: str) -> str:
    """``out`` becomes the SavedModel folder (replaced atomically if it exists)."""
    parent = os.path.dirname(out) or "."
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".export-", dir=parent)
    try:
        save(policy, model, os.path.join(tmp, "m"))
        if os.path.isdir(out):
            shutil.rmtree(out)
        os.replace(os.path.join(tmp, "m"), out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    verify(out, policy, model, "saved_model")
    return out
