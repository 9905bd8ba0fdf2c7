"""Small numpy helpers shared by the algorithms."""

from __future__ import annotations

import os
import random
from typing import Iterable, Sequence

import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.mpi_util import mpi_rank

# Set to 1 to make TensorFlow's kernels deterministic in every seeded run of this process
# (rlbase/docs/reproducibility.md).
DETERMINISTIC_OPS_ENV = "RLBASE_DETERMINISTIC_OPS"


def set_global_seeds(seed: int | None, deterministic_ops: bool = False) -> None:
    """Seed python, numpy and TensorFlow; offset by the MPI rank so workers differ.

    seed: the base seed; None leaves every generator unseeded.
    deterministic_ops: also make TensorFlow's kernels deterministic, for the rest of the
        process (slower, mainly on GPUs). The environment variable
        ``RLBASE_DETERMINISTIC_OPS=1`` does the same for every seeded run.
    """
    import tensorflow as tf  # lazy: TensorFlow is heavy

    if deterministic_ops or (seed is not None and deterministic_ops_requested()):
        tf.config.experimental.enable_op_determinism()
    if seed is None:
        return
    import keras  # lazy: TensorFlow is heavy

    seed = (int(seed) + 1000 * mpi_rank()) % 2**31
    os.environ["PYTHONHASHSEED"] = str(seed)
    # Also resets Keras' global seed generator, which weight initializers draw from: without
    # it a second seeded run in the same process starts from other weights.
    keras.utils.set_random_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    tf.random.set_seed(seed)


def deterministic_ops_requested() -> bool:
    """``RLBASE_DETERMINISTIC_OPS``: '1' on, unset, '' or '0' off, anything else an error."""
    value = os.environ.get(DETERMINISTIC_OPS_ENV, "")
    if value not in ("", "0", "1"):
        raise RLBaseError(f"{DETERMINISTIC_OPS_ENV}={value!r}: use 1 (deterministic "
                          f"TensorFlow kernels) or 0")
    return value == "1"


def env_seed(seed: int | None, index: int, rank: int = 0) -> int | None:
    """The seed of env number ``index`` on MPI rank ``rank`` (distinct for every pair)."""
    return None if seed is None else int(seed) + 10000 * rank + index


def explained_variance(ypred: np.ndarray, y: np.ndarray) -> float:
    """1 - Var[y - ypred] / Var[y]: 1 is a perfect fit, 0 no better than a constant, nan if y
    is constant."""
    vary = np.var(y)
    return float("nan") if vary == 0 else float(1 - np.var(y - ypred) / vary)


def discount_with_dones(rewards: Sequence[float], dones: Sequence[float], gamma: float
                        ) -> np.ndarray:
    """Discounted returns of one env's reward sequence; ``dones[t]`` cuts the sum after step t."""
    out = np.zeros(len(rewards), dtype=np.float64)
    running = 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * running * (1.0 - dones[t])
        out[t] = running
    return out


def safemean(xs: Iterable[float]) -> float:
    """Mean of xs, nan when empty (so logging an empty window is not an error)."""
    xs = list(xs)
    return float(np.mean(xs)) if xs else float("nan")


def import_tensorflow_quietly() -> None:
    """Import TensorFlow and Keras now (the CLI does, before it seeds and sets threads).

    TensorFlow's start-up notices are kept off stderr by the hook ``import rlbase`` installs
    (:mod:`rlbase.common.quiet_import`), which lets every other line through. Set
    RLBASE_TF_VERBOSE=1 to see TF's start-up messages.
    """
    # Lazy on purpose: importing TensorFlow is this function's whole job.
    import keras  # noqa: F401
    import tensorflow  # noqa: F401
