"""What an exported artifact records about itself (``rlbase_export.json``): the env's spaces,
rlbase's version, the algorithm, the named inputs and outputs, and what was baked in."""

from __future__ import annotations

import json
import os
from typing import Any

import rlbase
from rlbase.common.export.graph import ExportedPolicy
from rlbase.common.io.serialization import space_to_json
from rlbase.common.networks.policy_graph import ExportableModel

FILENAME = "rlbase_export.json"


def describe(policy: ExportedPolicy, model: ExportableModel, format: str,
             signatures: list[str], **extra: Any) -> dict[str, Any]:
    def spec(s: Any) -> dict[str, Any]:
        return {"name": s.name, "shape": [d for d in s.shape.as_list()],
                "dtype": s.dtype.name}

    outputs = [{"name": "actions", "dtype": str(model.action_space.dtype),
                "shape": [None, *(model.action_space.shape or ())]}]
    if policy.recurrent:
        outputs.append({"name": "next_state", "dtype": "float32",
                        "shape": [None, policy.state_size]})
    stats = model.normalization
    return {
        "rlbase_version": rlbase.__version__, "format": format, "algorithm": model.algorithm,
        "network": model.network, "num_timesteps": int(model.num_timesteps),
        "observation_space": space_to_json(model.observation_space),
        "action_space": space_to_json(model.action_space),
        "inputs": [spec(s) for s in policy.input_specs],
        "seed_input": {"name": "seed", "shape": [2], "dtype": "int64"}
        if policy.stochastic else None,
        "outputs": outputs, "signatures": signatures,
        "recurrent": policy.recurrent, "state_size": policy.state_size,
        "action_mask_size": policy.action_mask_size,
        "vec_normalize_baked_in": bool(stats is not None and stats.space is not None
                                       and stats.norm_obs),
        **extra}


def write(folder: str, info: dict[str, Any]) -> str:
    path = os.path.join(folder, FILENAME)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(info, f, indent=1)
        f.write("\n")
    return path
