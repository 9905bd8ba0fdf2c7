"""The exporter's own check: a written artifact acts as the in-memory policy it came from,
or it is removed and the export fails in one line (never a broken file)."""

from __future__ import annotations

import os
import shutil

import gymnasium as gym
import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.export import runners
from rlbase.common.export.graph import ExportedPolicy
from rlbase.common.networks.policy_graph import ExportableModel

CHECK_BATCH = 16
BOX_TOLERANCE = 1e-4  # float32 kernels of two runtimes; the tests hold 1e-5 against predict


def verify(path: str, policy: ExportedPolicy, model: ExportableModel, fmt: str) -> None:
    inputs = runners.sample_inputs(model.observation_space, policy.names, CHECK_BATCH,
                                   seed=1, state_size=policy.state_size,
                                   action_space=policy.mask_space)
    expected = policy.run(inputs)["actions"].numpy()
    try:
        got = runners.load(path)(**inputs)["actions"]
    except RLBaseError:
        raise
    except Exception as exc:  # noqa: BLE001 - any runtime failure means the file is unusable
        _remove(path)
        raise RLBaseError(f"the {fmt} file of {model.algorithm}'s {model.network} policy "
                          f"does not run ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
                          "nothing was written") from None
    if isinstance(model.action_space, gym.spaces.Box):
        ok = got.shape == expected.shape and np.allclose(got, expected, atol=BOX_TOLERANCE)
    else:
        ok = np.array_equal(got, expected)
    if not ok:
        _remove(path)
        raise RLBaseError(f"the {fmt} file of {model.algorithm}'s {model.network} policy acts "
                          "differently from the model; nothing was written")


def _remove(path: str) -> None:
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.exists(path):
        os.remove(path)
