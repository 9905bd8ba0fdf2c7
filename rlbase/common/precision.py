"""Mixed precision, one mechanism for every algorithm: ``precision='mixed_bfloat16'`` builds
the registry networks (the torsos: MLPs, convolutions, the LSTM's input projection) with Keras'
``mixed_bfloat16`` dtype policy, so their matmuls and convolutions run in bfloat16 on float32
variables, and casts their outputs back to float32. Everything after a torso stays float32:
the heads (logits, means, values, Q-values), the losses, targets and log-probabilities, the
optimizers' state, the normalization statistics and the saved arrays.

``learn()`` and ``rlbase.registry.build_model`` build the model inside
:func:`precision_scope`; :func:`rlbase.common.networks.registry.build_network` builds each
torso inside :func:`network_dtype_policy`, which sets Keras' global policy for that one build
and restores it after, so nothing else (heads, optimizers, another model built later) is touched.

bfloat16 pays only where the hardware multiplies it natively (GPUs; CPUs with AVX512-BF16 or
AMX): elsewhere TensorFlow emulates it and it is slower than float32 (rlbase/docs/precision.md
has the figures; ``python -m rlbase.bench.precision`` measures a machine).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from rlbase.common.errors import RLBaseError

# (TensorFlow and Keras are imported where used: the configs import this module, and they are
# read by the CLI's --help and the registry before any algorithm is.)

FLOAT32 = "float32"
MIXED_BFLOAT16 = "mixed_bfloat16"
#: the values of every config's ``precision``
PRECISIONS = (FLOAT32, MIXED_BFLOAT16)

PRECISION_DOC = ("'mixed_bfloat16': the networks' matmuls and convolutions in bfloat16 on "
                 "float32 weights (heads, losses, targets, log-probabilities, optimizer state "
                 "and saved weights stay float32; faster only on GPUs and on CPUs with "
                 "AVX512-BF16 or AMX); 'float32': everything in float32")

_current: ContextVar[str] = ContextVar("rlbase_precision", default=FLOAT32)


def check_precision(precision: str, algorithm: str = "") -> str:
    if precision not in PRECISIONS:
        who = f"{algorithm}: " if algorithm else ""
        raise RLBaseError(f"{who}precision must be one of "
                          f"{', '.join(repr(p) for p in PRECISIONS)}, got {precision!r}")
    return precision


def current_precision() -> str:
    """The precision networks built now get (``'float32'`` outside :func:`precision_scope`)."""
    return _current.get()


@contextlib.contextmanager
def precision_scope(precision: str) -> Iterator[None]:
    """Networks built by ``build_network`` inside this block compute in ``precision``."""
    token = _current.set(check_precision(precision))
    try:
        yield
    finally:
        _current.reset(token)


@contextlib.contextmanager
def network_dtype_policy() -> Iterator[None]:
    """Keras' global dtype policy set to the current precision while one network is built
    (its layers read the policy when they are made), restored in every case."""
    precision = _current.get()
    if precision == FLOAT32:
        yield
        return
    import keras  # lazy: TensorFlow is heavy

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(precision)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def to_float32(x: Any) -> Any:
    """A tensor ``x`` as float32 (a no-op when it already is): where a torso's output leaves
    it."""
    import tensorflow as tf  # lazy: TensorFlow is heavy

    return x if x.dtype == tf.float32 else tf.cast(x, tf.float32)
