"""What the model classes' ``save``/``load`` add to the model file: Stable-Baselines3's file
names (``.zip`` added), file objects, and ``exclude``/``include``/``custom_objects`` over the
names a class file records (its hyperparameters and a few attributes)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from typing import Any

from rlbase.common.config import AlgorithmConfig
from rlbase.common.errors import RLBaseError
from rlbase.common.io.serialization import suffixed_path

# Attributes a class file records besides the hyperparameters (``exclude``: not recorded, the
# loaded model starts from the default: verbose 0, no TensorBoard folder, step count 0).
SAVED_ATTRIBUTES = ("verbose", "tensorboard_log", "num_timesteps")
# Never in a model file (as in Stable-Baselines3, where they are excluded by default):
# including one is refused with what to do instead.
NOT_SAVED = {
    "env": "pass the env to load(path, env=...)",
    "replay_buffer": "save it with model.save_replay_buffer(path)",
    "rollout_buffer": "learn() refills it from the env",
    "device": "pass device= to load()",
    "_logger": "configure logging again after load()",
    "_custom_logger": "configure logging again after load()",
}


def _is_file_object(target: Any) -> bool:
    return hasattr(target, "write") or hasattr(target, "read")


@contextlib.contextmanager
def writing(target: Any, suffix: str) -> Iterator[str]:
    """A path to write to: ``target`` itself (``.suffix`` added when it has none), or for an
    open binary file a temporary path whose bytes are copied into that file afterwards."""
    if not _is_file_object(target):
        yield suffixed_path(target, suffix, "w")
        return
    if getattr(target, "closed", False) or not getattr(target, "writable", lambda: True)():
        raise RLBaseError(f"cannot save to {target!r}: it is closed or not open for writing")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, f"model.{suffix}")
        yield path
        with open(path, "rb") as f:
            shutil.copyfileobj(f, target)
    with contextlib.suppress(AttributeError, OSError):
        target.flush()


@contextlib.contextmanager
def reading(source: Any, suffix: str) -> Iterator[str]:
    """A path to read from: ``source`` (or, when it does not exist, ``source.suffix``), or for
    an open binary file a temporary copy of its contents (read from its start)."""
    if not _is_file_object(source):
        yield suffixed_path(source, suffix, "r")
        return
    if getattr(source, "closed", False) or not getattr(source, "readable", lambda: True)():
        raise RLBaseError(f"cannot load from {source!r}: it is closed or not open for reading")
    with contextlib.suppress(AttributeError, OSError):
        source.seek(0)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, f"model.{suffix}")
        with open(path, "wb") as f:
            shutil.copyfileobj(source, f)
        yield path


def excluded_names(config: type[AlgorithmConfig], exclude: Iterable[str] | None,
                   include: Iterable[str] | None) -> tuple[set[str], set[str]]:
    """``(hyperparameter fields, attributes)`` that ``save(exclude=..., include=...)`` leaves
    out of the file: ``exclude`` minus ``include``. A name of neither kind, a field that
    shapes the variables and an ``include`` of what is never saved are refused."""
    exclude = _names("exclude", exclude)
    include = _names("include", include)
    for name in include:
        if name in NOT_SAVED:
            raise RLBaseError(f"save(include=[{name!r}]): a model file never holds the "
                              f"{name}; {NOT_SAVED[name]}")
    fields: set[str] = set()
    attributes: set[str] = set()
    for name in exclude | include:
        if name in NOT_SAVED or name in SAVED_ATTRIBUTES:
            continue
        if name in ("policy", "policy_kwargs"):
            continue
        if name not in config.field_names() and not config.fields_of(name):
            raise RLBaseError(f"save: {name!r} is not something a {config.algorithm} model "
                              f"file holds; exclude takes hyperparameter names and "
                              f"{', '.join(SAVED_ATTRIBUTES)}")
    architecture = set(config.architecture())
    for name in exclude - include:
        if name in ("policy", "policy_kwargs") or name in architecture or \
                set(config.fields_of(name)) & architecture:
            raise RLBaseError(f"save cannot exclude {name!r}: the weights and the settings "
                              "that shape them are always saved")
        if name in SAVED_ATTRIBUTES:
            attributes.add(name)
        elif name not in NOT_SAVED:
            fields.update(config.fields_of(name) or [name])
    return fields, attributes


def _names(what: str, names: Iterable[str] | None) -> set[str]:
    if names is None:
        return set()
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise RLBaseError(f"save({what}=...) takes a list of names, got {names!r}")
    return set(names)


def custom_object_kwargs(config: type[AlgorithmConfig], custom_objects: dict[str, Any] | None
                         ) -> dict[str, Any]:
    """``load(custom_objects=...)`` as load() keyword arguments: each value replaces the file's
    (hyperparameters under any accepted name, ``verbose``, ``tensorboard_log``; SB3's
    ``lr_schedule`` is the learning rate). Any other name is refused."""
    out: dict[str, Any] = {}
    for name, value in (custom_objects or {}).items():
        key = "learning_rate" if name == "lr_schedule" and config.accepts("learning_rate") \
            else name
        if not (config.accepts(key) or key in ("verbose", "tensorboard_log")):
            raise RLBaseError(f"custom_objects: {name!r} is not something a "
                              f"{config.algorithm} model file holds; allowed: its "
                              "hyperparameters (rlbase's or SB3's names), verbose, "
                              "tensorboard_log")
        out[key] = value
    return out
