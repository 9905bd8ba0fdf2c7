"""Resumable checkpoints, shared by every algorithm.

A checkpoint is an ordinary rlbase model file (``--load_path`` and ``model.load`` read it) that
also holds what continuing needs: the learn loop's counters, random-generator states and, for
off-policy algorithms, the replay buffer (as plain arrays, never pickle). Files are
``<folder>/checkpoint_<timesteps>.zip``, written atomically; the newest ``keep`` are kept, and an
older one is deleted only after a newer one is complete, so a kill at any moment leaves at least
one loadable checkpoint.

How an algorithm adopts it (A2C, PPO and DQN do exactly this)::

    ckpt = Checkpointer(ALGORITHM, checkpoint_path, checkpoint_interval)
    ...build the model...
    resumed = ckpt.restore(model) if resume else None   # (loop_state, arrays) or None
    if resumed: put loop_state["..."] back into the loop's variables
    while training:
        ...
        if ckpt.due(model.num_timesteps) or stop_requested():
            ckpt.save(model, {"update": update, ...}, {"replay/...": array, ...})

``model`` needs ``save(path, extra_arrays=, extra_metadata=)`` and ``load(path)`` returning
``(metadata, arrays)``. :func:`rng_state`/:func:`set_rng_state` capture Python's and numpy's
global generators, :func:`object_state`/:func:`restore_object_state` any buffer made of numpy
arrays and numbers (rlbase's replay buffers and segment trees), and :func:`generator_state`
a ``numpy.random.Generator``. The env itself is not saved: a resumed run restores all of this
before its first env reset, so a checkpoint at an episode boundary continues exactly (for an
env whose reset repeats); one mid-episode loses the episodes in progress (docs/architecture.md,
'Resuming').
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import random
import re
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from rlbase.common.buffers.segment_tree import SegmentTree
from rlbase.common.errors import RLBaseError
from rlbase.common.logs import logger

PREFIX = "checkpoint_"
_NAME = re.compile(r"checkpoint_(\d+)\.zip$")
RESUME_KEY = "resume"


def checkpoint_folder(checkpoint_path: str | None) -> str:
    """``checkpoint_path``, else ``<logger dir>/checkpoints``; an error when there is neither."""
    if checkpoint_path:
        return os.path.expanduser(os.fspath(checkpoint_path))
    logdir = logger.get_dir()
    if logdir:
        return os.path.join(logdir, "checkpoints")
    raise RLBaseError("checkpoints need a folder: pass checkpoint_path (CLI: --checkpoint_path) "
                      "or configure a log directory (CLI: --log_path)")


def list_checkpoints(folder: str) -> list[tuple[int, str]]:
    """``(timesteps, path)`` of the checkpoint files in ``folder``, oldest first."""
    found = []
    for path in glob.glob(os.path.join(glob.escape(folder), PREFIX + "*.zip")):
        match = _NAME.search(os.path.basename(path))
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


class Checkpointer:
    """Writes a checkpoint every ``interval`` env steps and restores the newest one.

    algorithm: the model files' algorithm name (restore checks it through ``model.load``).
    checkpoint_path: the folder (None: ``<logger dir>/checkpoints``, needed only when used).
    interval: env steps between checkpoints (0 or None: only on request, e.g. at Ctrl-C).
    keep: how many of the newest checkpoints to keep on disk (at least 1).
    writer: False on MPI ranks other than 0: they restore checkpoints but never write them.
    """

    def __init__(self, algorithm: str, checkpoint_path: str | None, interval: int | None,
                 keep: int = 2, writer: bool = True):
        if interval is not None and (isinstance(interval, bool) or
                                     not isinstance(interval, (int, np.integer)) or interval < 0):
            raise RLBaseError(f"checkpoint_interval must be a non-negative integer number of "
                              f"env steps, got {interval!r}")
        if keep < 1:
            raise RLBaseError(f"keep must be at least 1, got {keep}")
        self.algorithm, self.path, self.interval = algorithm, checkpoint_path, int(interval or 0)
        self.keep, self.writer = keep, writer
        self.last_saved: int | None = None
        self._next = self.interval
        if self.interval:
            self.folder  # noqa: B018 - fail before training when there is nowhere to write

    @property
    def active(self) -> bool:
        """Whether a stop (Ctrl-C) should also write a checkpoint: an interval or a folder was
        given."""
        return self.writer and (bool(self.interval) or self.path is not None)

    @property
    def folder(self) -> str:
        return checkpoint_folder(self.path)

    def due(self, num_timesteps: int) -> bool:
        """True once ``num_timesteps`` has reached the next multiple of the interval."""
        return self.writer and bool(self.interval) and num_timesteps >= self._next

    def save(self, model: Any, loop_state: dict[str, Any],
             arrays: dict[str, np.ndarray] | None = None) -> str | None:
        """Write one checkpoint (model + ``loop_state`` JSON + ``arrays``); returns its path.

        A write that fails (a full disk) leaves the previous checkpoints as they were, warns
        once and returns None: training goes on, and the next checkpoint is tried again.
        """
        steps = int(model.num_timesteps)
        path = os.path.join(self.folder, f"{PREFIX}{steps:012d}.zip")
        meta = {RESUME_KEY: {"loop": loop_state, "rng": rng_state_meta()}}
        all_arrays = {**rng_state_arrays(), **(arrays or {})}
        if self.interval:
            self._next = (steps // self.interval + 1) * self.interval
        try:
            model.save(path, extra_arrays=all_arrays, extra_metadata=meta)
        except OSError as exc:
            logger.warn_once(f"checkpoint:{self.folder}",
                             f"could not write checkpoint {path} ({exc}); training goes on, "
                             "later checkpoints are tried again")
            return None
        self.last_saved = steps
        self._prune()
        return path

    def _prune(self) -> None:
        for _, old in list_checkpoints(self.folder)[:-self.keep]:
            with contextlib.suppress(OSError):
                os.remove(old)
        # Temporary files of saves killed mid-write (see serialization.atomic_write).
        for tmp in glob.glob(os.path.join(glob.escape(self.folder), f".{PREFIX}*.tmp")):
            with contextlib.suppress(OSError):
                os.remove(tmp)

    def latest(self) -> str | None:
        found = list_checkpoints(self.folder)
        return found[-1][1] if found else None

    def restore(self, model: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
        """Load the newest intact checkpoint into ``model`` and the global RNGs.

        A newer checkpoint that cannot be read (cut short, corrupted) is skipped with a log
        line naming it. Returns ``(loop_state, arrays)`` for the caller to put back, or None
        (with a log line) when the folder holds no checkpoint yet, so ``--resume`` also starts
        a fresh run. Before anything is logged, the current logger's rows past the
        checkpoint's timesteps are dropped (a resumed run appends to its logs).
        """
        found = list_checkpoints(self.folder)
        skipped: list[str] = []
        for _, path in reversed(found):
            try:
                state, arrays = self._load(model, path)
            except RLBaseError as exc:
                skipped.append(f"{path} ({exc})")
                continue
            logger.get_current().truncate_after(int(model.num_timesteps))
            if skipped:
                logger.log(f"Skipped unreadable checkpoint(s) {'; '.join(skipped)}: resuming "
                           f"from the newest intact one, {path}")
            self.last_saved = int(model.num_timesteps)
            if self.interval:
                self._next = (self.last_saved // self.interval + 1) * self.interval
            logger.log(f"Resumed from {path} at {model.num_timesteps} timesteps")
            return state, arrays
        if skipped:
            raise RLBaseError(f"no intact checkpoint in {self.folder} to resume from: "
                              f"{'; '.join(skipped)}; remove them to start a new run")
        logger.get_current().truncate_after(0)  # a run from scratch: its rows start again
        logger.log(f"No checkpoint in {self.folder}: starting from scratch")
        return None

    @staticmethod
    def _load(model: Any, path: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        metadata, arrays = model.load(path)
        state = metadata.get(RESUME_KEY)
        if not isinstance(state, dict) or not isinstance(state.get("loop"), dict):
            raise RLBaseError(f"{path} is a model file without resume state: load it with "
                              "load_path instead")
        set_rng_state(state.get("rng"), arrays, path)
        return state["loop"], arrays


# ---- random generators ----------------------------------------------------------------------


def _numpy_state() -> tuple[Any, ...]:
    """numpy's global MT19937 state as the legacy tuple (name, keys, pos, has_gauss, cached)."""
    return tuple(np.random.get_state(legacy=True))


def rng_state_meta() -> dict[str, Any]:
    """The JSON part of Python's and numpy's global generator states."""
    version, _, gauss = random.getstate()
    _, _, pos, has_gauss, cached = _numpy_state()
    return {"python": {"version": version, "gauss": gauss},
            "numpy": {"pos": int(pos), "has_gauss": int(has_gauss), "cached": float(cached)}}


def rng_state_arrays() -> dict[str, np.ndarray]:
    """The array part of Python's and numpy's global generator states."""
    return {"rng/python": np.array(random.getstate()[1], dtype=np.uint64),
            "rng/numpy": np.asarray(_numpy_state()[1], dtype=np.uint32)}


def set_rng_state(meta: Any, arrays: dict[str, np.ndarray], path: str = "") -> None:
    """Restore what :func:`rng_state_meta` and :func:`rng_state_arrays` captured."""
    try:
        py, npy = meta["python"], meta["numpy"]
        random.setstate((int(py["version"]), tuple(int(x) for x in arrays["rng/python"]),
                         py["gauss"]))
        np.random.set_state(("MT19937", arrays["rng/numpy"].astype(np.uint32),  # type: ignore[arg-type]
                             int(npy["pos"]), int(npy["has_gauss"]), float(npy["cached"])))
    except (KeyError, TypeError, ValueError) as exc:
        raise RLBaseError(f"checkpoint {path} has a malformed random-generator state "
                          f"({type(exc).__name__}: {exc})") from exc


def generator_state(rng: np.random.Generator) -> dict[str, Any]:
    """A numpy Generator's state as JSON-serializable data."""
    return dict(rng.bit_generator.state)


def set_generator_state(rng: np.random.Generator, state: Any) -> None:
    try:
        rng.bit_generator.state = state
    except (KeyError, TypeError, ValueError) as exc:
        raise RLBaseError(f"malformed generator state in checkpoint ({exc})") from exc


# ---- numpy-array objects (replay buffers) ---------------------------------------------------


@runtime_checkable
class RingStorage(Protocol):
    """A replay storage whose ``ring_fields`` (arrays, or lists of arrays) have one row per
    slot, of which only rows ``0 .. filled_rows() - 1`` hold data (a ring fills from row 0
    and wraps only once full). Checkpoints save just those rows, so a large buffer holding
    few transitions makes a small file; the rest is restored as the zeros it was."""

    ring_fields: ClassVar[tuple[str, ...]]

    def filled_rows(self) -> int: ...


def _state_items(obj: Any) -> list[tuple[str, Any]]:
    """``obj``'s attributes a checkpoint holds: all but its class's ``transient_fields``
    (settings and links the constructor or the run rebuilds: an env's method, an enum)."""
    transient = set(getattr(type(obj), "transient_fields", ()))
    return [(name, value) for name, value in vars(obj).items() if name not in transient]


def _is_state_object(value: Any) -> bool:
    return hasattr(value, "__dict__") and type(value).__module__.startswith("rlbase.")


def _is_array_dict(value: Any) -> bool:
    """A dict from int to array (the frame-stack buffer's side stores of frames)."""
    return isinstance(value, dict) and all(
        isinstance(k, int) and isinstance(v, np.ndarray) for k, v in value.items())


def _is_array_list(value: Any) -> bool:
    """A list of arrays or of int-to-array dicts: the per-leaf storage of Dict/Tuple
    observations (one entry per leaf, see rlbase.common.nested)."""
    return isinstance(value, list) and all(
        isinstance(v, np.ndarray) or _is_array_dict(v) for v in value)


def _array_dict_state(value: dict[int, np.ndarray], key: str) -> dict[str, np.ndarray]:
    keys = np.array(sorted(value), dtype=np.int64)
    values = np.stack([value[k] for k in keys.tolist()]) if len(keys) else np.zeros(0)
    return {f"{key}/keys": keys, f"{key}/values": values}


def _ring_fields(obj: Any) -> tuple[tuple[str, ...], int]:
    """The row-per-slot fields of ``obj`` and how many rows hold data (none: ((), 0))."""
    if isinstance(obj, RingStorage):
        return tuple(obj.ring_fields), int(obj.filled_rows())
    return (), 0


def _tree_leaves(tree: SegmentTree) -> np.ndarray:
    """A segment tree's leaves up to the last one that is not the neutral value (the rest,
    and every inner node, follow from them)."""
    leaves = tree.tree[tree.capacity:]
    used = np.flatnonzero(leaves != tree.neutral)
    return leaves[:used[-1] + 1 if len(used) else 0].copy()


def _rebuild_tree(tree: SegmentTree, leaves: np.ndarray) -> None:
    """Set ``tree``'s leaves and recompute every inner node: the same values as the writes
    that made them, since each node is always ``operation`` of its two children."""
    tree.tree[:] = tree.neutral
    tree.tree[tree.capacity:tree.capacity + len(leaves)] = leaves
    size = tree.capacity
    while size > 1:
        half = size // 2
        tree.tree[half:size] = tree.operation(tree.tree[size:2 * size:2],
                                              tree.tree[size + 1:2 * size:2])
        size = half


def object_state(obj: Any, prefix: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Every numpy array (as arrays) and number (as JSON) of ``obj``, recursing into rlbase
    objects it holds (a prioritized buffer's storage and trees) and into lists of arrays
    (``<name>/0000``, ...). Other attributes (functions, shapes) are structure, rebuilt by the
    constructor, and are skipped. Of a :class:`RingStorage` only the filled rows are kept, of a
    segment tree only the leaves in use."""
    meta: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    fields, filled = _ring_fields(obj)
    for name, value in _state_items(obj):
        key = f"{prefix}/{name}"
        rows = filled if name in fields else None
        if isinstance(obj, SegmentTree) and name == "tree":
            arrays[f"{prefix}/leaves"] = _tree_leaves(obj)
        elif isinstance(value, np.ndarray):
            arrays[key] = value[:rows]
        elif isinstance(value, (bool, int, float, np.integer, np.floating, np.bool_)):
            meta[name] = value.item() if isinstance(value, np.generic) else value
        elif _is_array_dict(value):
            arrays.update(_array_dict_state(value, key))
        elif _is_array_list(value):
            for i, item in enumerate(value):
                if isinstance(item, np.ndarray):
                    arrays[f"{key}/{i:04d}"] = item[:rows]
                else:
                    arrays.update(_array_dict_state(item, f"{key}/{i:04d}"))
        elif _is_state_object(value):
            sub_meta, sub_arrays = object_state(value, key)
            meta[name] = sub_meta
            arrays.update(sub_arrays)
    return meta, arrays


def restore_object_state(obj: Any, meta: Any, arrays: dict[str, np.ndarray], prefix: str
                         ) -> None:
    """Inverse of :func:`object_state`, into an ``obj`` built with the same settings; a shape,
    dtype or field mismatch raises RLBaseError before anything is changed."""
    plan: list[Callable[[], None]] = []
    _plan_restore(obj, meta, arrays, prefix, plan)
    for apply in plan:
        apply()


def _checked_array(current: np.ndarray, arrays: dict[str, np.ndarray], key: str,
                   ring: bool = False) -> np.ndarray:
    """The saved array for ``current``; of a ring field, any number of leading rows up to
    ``current``'s."""
    saved = arrays.get(key)
    fits = saved is not None and saved.dtype == current.dtype and (
        saved.shape[1:] == current.shape[1:] and saved.ndim and
        saved.shape[0] <= current.shape[0] if ring else saved.shape == current.shape)
    if not fits:
        got = None if saved is None else f"{saved.dtype}{list(saved.shape)}"
        raise RLBaseError(f"checkpoint array {key} is {got}, this run needs "
                          f"{current.dtype}{list(current.shape)}: it was written with "
                          "other settings (buffer size, number of envs, spaces)")
    assert saved is not None
    return saved


def _checked_array_dict(arrays: dict[str, np.ndarray], key: str) -> dict[int, np.ndarray]:
    keys, values = arrays.get(f"{key}/keys"), arrays.get(f"{key}/values")
    if keys is None or values is None or len(keys) != len(values) or keys.dtype != np.int64:
        raise RLBaseError(f"checkpoint arrays {key}/keys and /values are missing or "
                          "do not match")
    return {int(k): v.copy() for k, v in zip(keys, values)}


def _copy_into(current: np.ndarray, saved: np.ndarray) -> Callable[[], None]:
    """Copy ``saved`` into ``current``'s leading rows, zeros after them (a ring's unfilled
    rows)."""
    def apply() -> None:
        current[:len(saved)] = saved
        current[len(saved):] = 0
    return apply


def _tree_plan(tree: SegmentTree, arrays: dict[str, np.ndarray], prefix: str
               ) -> Callable[[], None]:
    leaves = arrays.get(f"{prefix}/leaves")
    if leaves is None and f"{prefix}/tree" in arrays:  # written before leaves-only trees
        leaves = _checked_array(tree.tree, arrays, f"{prefix}/tree")[tree.capacity:]
    if leaves is None or leaves.ndim != 1 or len(leaves) > tree.capacity:
        raise RLBaseError(f"checkpoint segment tree {prefix} is missing or larger than this "
                          f"run's ({tree.capacity} slots)")
    return lambda: _rebuild_tree(tree, leaves.astype(np.float64))


def _plan_restore(obj: Any, meta: Any, arrays: dict[str, np.ndarray], prefix: str,
                  plan: list[Callable[[], None]]) -> None:
    if not isinstance(meta, dict):
        raise RLBaseError(f"checkpoint state {prefix!r} is malformed (expected a mapping)")
    fields, _ = _ring_fields(obj)
    for name, current in _state_items(obj):
        key = f"{prefix}/{name}"
        ring = name in fields
        if isinstance(obj, SegmentTree) and name == "tree":
            plan.append(_tree_plan(obj, arrays, prefix))
        elif isinstance(current, np.ndarray):
            plan.append(_copy_into(current, _checked_array(current, arrays, key, ring)))
        elif isinstance(current, (bool, int, float, np.integer, np.floating, np.bool_)):
            if name not in meta or not isinstance(meta[name], (bool, int, float)):
                raise RLBaseError(f"checkpoint state {key} is missing or not a number")
            plan.append(functools.partial(setattr, obj, name, type(current)(meta[name])))
        elif _is_array_dict(current):
            plan.append(functools.partial(setattr, obj, name, _checked_array_dict(arrays, key)))
        elif _is_array_list(current):
            for i, item in enumerate(current):
                item_key = f"{key}/{i:04d}"
                if isinstance(item, np.ndarray):
                    plan.append(_copy_into(item, _checked_array(item, arrays, item_key, ring)))
                else:
                    plan.append(functools.partial(current.__setitem__, i,
                                                  _checked_array_dict(arrays, item_key)))
        elif _is_state_object(current):
            _plan_restore(current, meta.get(name), arrays, key, plan)
