"""How many times each compiled call of a model has been traced (a retrace shows up here)."""

from __future__ import annotations

from typing import Any

import keras

from rlbase.common.tf_util import CompiledFunction


def compiled_functions(obj: Any, prefix: str = "", depth: int = 0) -> dict[str, CompiledFunction]:
    """Every compiled call an rlbase object holds (its own, its policy calls', its parameter
    noise's), by attribute path."""
    found: dict[str, CompiledFunction] = {}
    for name, value in vars(obj).items():
        if isinstance(value, CompiledFunction):
            found[prefix + name] = value
        elif depth < 2 and type(value).__module__.startswith("rlbase.") and \
                not isinstance(value, (keras.layers.Layer, tuple)):
            found.update(compiled_functions(value, f"{prefix}{name}.", depth + 1))
    return found


def tracing_counts(model: Any) -> dict[str, int]:
    return {name: fn.function.experimental_get_tracing_count()
            for name, fn in compiled_functions(model).items()}
