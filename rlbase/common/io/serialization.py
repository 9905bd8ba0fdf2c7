"""The one model-file format: a zip of JSON metadata, an npz of arrays and, optionally, a pickle.

A file holds ``metadata.json`` (always), ``arrays.npz`` (always; never object arrays) and
``pickled.pkl`` (only when the writer passed ``pickled``). Loading never unpickles unless the
caller says ``allow_pickle=True``: a model file from a stranger is data, not code. Anything that
is not a well-formed rlbase file (foreign, truncated, corrupt, oversized) raises
:class:`RLBaseError` naming the path; it never hangs and never allocates more than ``max_bytes``.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import json
import os
import pickle
import secrets
import sys
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common.errors import RLBaseError

FORMAT = "rlbase"
FORMAT_VERSION = 1
METADATA_NAME = "metadata.json"
ARRAYS_NAME = "arrays.npz"
PICKLED_NAME = "pickled.pkl"
DEFAULT_MAX_BYTES = 4 << 30
# Deflate cannot expand data more than ~1032:1, so a member that claims more is a zip bomb.
_MAX_DEFLATE_RATIO = 1100
# Metadata is a few kB; a hostile file must not make json.loads build gigabytes of objects.
MAX_METADATA_BYTES = 16 << 20
# A Box space allocates its bounds in full: refuse descriptions no real env has.
MAX_SPACE_ELEMENTS = 1 << 24

PathLike = str | os.PathLike


@contextlib.contextmanager
def atomic_write(path: PathLike) -> Iterator[str]:
    """Yield a temporary path next to ``path``; on success move it onto ``path`` in one step.

    If the body raises, the temporary file is removed and an existing ``path`` is untouched, so
    a crash mid-save never leaves a half-written model where a good one was.
    """
    path = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    # os.open with 0o666 lets the umask decide the permissions, as a plain open() would.
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    with contextlib.suppress(OSError):  # persist the rename too (not every OS opens a folder)
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def suffixed_path(path: PathLike, suffix: str, mode: str) -> str:
    """Stable-Baselines3's file-name rule: a path written without a suffix gets ``.suffix``
    (``"ppo_pend"`` -> ``"ppo_pend.zip"``); a path read that does not exist is tried with
    ``.suffix`` added. ``mode``: ``"w"`` or ``"r"``."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise RLBaseError(f"a file path is a str, a pathlib.Path or an open binary file, got "
                          f"{type(path).__name__} {path!r}")
    path = os.path.expanduser(os.fspath(path))
    if mode == "w":
        return path if os.path.splitext(path)[1] else f"{path}.{suffix}"
    if not os.path.exists(path) and os.path.exists(f"{path}.{suffix}"):
        return f"{path}.{suffix}"
    return path


def library_versions() -> dict[str, str]:
    """Versions of the libraries a model file depends on, without importing any of them."""

    def version(name: str) -> str:
        module = sys.modules.get(name)
        if module is not None and isinstance(getattr(module, "__version__", None), str):
            return module.__version__
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return "unknown"

    tf_version = version("tensorflow")
    if tf_version == "unknown":  # the CPU-only wheel registers under its own distribution name
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            tf_version = importlib.metadata.version("tensorflow-cpu")
    return {"rlbase": version("rlbase"), "tensorflow": tf_version,
            "gymnasium": version("gymnasium"), "numpy": np.__version__,
            "python": ".".join(map(str, sys.version_info[:3]))}


def _json_default(value: Any) -> Any:
    """Let numpy scalars and arrays (common in hyperparameters) go into the JSON metadata."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    for key, value in arrays.items():
        if not isinstance(key, str) or not key:
            raise RLBaseError(f"array name {key!r} is not allowed: names are non-empty strings")
        dtype = np.asarray(value).dtype
        if dtype.hasobject or dtype.names is not None:
            raise RLBaseError(f"array {key!r} has dtype {dtype}: only plain numeric, bool and "
                              "string arrays can be saved (no objects, no structured dtypes)")
    # The npz layout np.savez writes, done by hand so that names like "file" cannot collide
    # with np.savez's own parameters.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        for key, value in arrays.items():
            with zf.open(key + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asarray(value), allow_pickle=False)
    return buffer.getvalue()


def save_file(path: PathLike, metadata: Mapping[str, Any], arrays: Mapping[str, np.ndarray],
              pickled: Any = None) -> None:
    """Write one model file atomically.

    :param path: where to write; parent folders are created.
    :param metadata: JSON-serializable description (algorithm, hyperparameters, spaces...);
        ``format``, ``format_version`` and ``versions`` are added.
    :param arrays: named numpy arrays (weights, optimizer state, statistics).
    :param pickled: optional object stored with cloudpickle; only read back on request.
    """
    meta = {**metadata, "format": FORMAT, "format_version": FORMAT_VERSION,
            "versions": library_versions()}
    try:
        meta_text = json.dumps(meta, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise RLBaseError(f"model metadata cannot be saved as JSON: {exc}") from exc
    npz = _npz_bytes(arrays)
    pickle_bytes = None
    if pickled is not None:
        import cloudpickle  # only writers of pickled payloads pay for the import

        pickle_bytes = cloudpickle.dumps(pickled)
    with atomic_write(path) as tmp, zipfile.ZipFile(tmp, "w") as zf:
        zf.writestr(METADATA_NAME, meta_text, compress_type=zipfile.ZIP_DEFLATED)
        zf.writestr(ARRAYS_NAME, npz, compress_type=zipfile.ZIP_STORED)
        if pickle_bytes is not None:
            zf.writestr(PICKLED_NAME, pickle_bytes, compress_type=zipfile.ZIP_DEFLATED)


class _Corrupt(Exception):
    """Internal: why a file is not a valid rlbase file (turned into RLBaseError by load_file)."""


def _check_members(zf: zipfile.ZipFile, archive_size: int, max_bytes: int) -> None:
    """Refuse sizes that would make reading the archive allocate too much (zip bombs)."""
    total = 0
    for info in zf.infolist():
        if info.compress_size > archive_size:
            raise _Corrupt(f"member {info.filename!r} is larger than the file itself")
        if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            raise _Corrupt(f"member {info.filename!r} has inconsistent sizes")
        if info.file_size > _MAX_DEFLATE_RATIO * max(info.compress_size, 1):
            raise _Corrupt(f"member {info.filename!r} claims an impossible compression ratio")
        total += info.file_size
        if total > max_bytes:
            raise _Corrupt(f"contents exceed the limit of {max_bytes} bytes (max_bytes)")


def _read_member(zf: zipfile.ZipFile, name: str, limit: int | None = None) -> bytes:
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise _Corrupt(f"member {name!r} is missing") from None
    if limit is not None and info.file_size > limit:
        raise _Corrupt(f"member {name!r} is larger than {limit} bytes")
    # ZipExtFile stops at the declared size and checks the CRC at the end of the data.
    with zf.open(info) as f:
        data = f.read()
    if len(data) != info.file_size:
        raise _Corrupt(f"member {name!r} is truncated")
    return data


def _load_arrays(data: bytes, max_bytes: int) -> dict[str, np.ndarray]:
    arrays = {}
    with zipfile.ZipFile(io.BytesIO(data)) as npz:
        _check_members(npz, len(data), max_bytes)
        for info in npz.infolist():
            if not info.filename.endswith(".npy"):
                raise _Corrupt(f"unexpected member {info.filename!r} in {ARRAYS_NAME}")
            arrays[info.filename[: -len(".npy")]] = _load_npy(_read_member(npz, info.filename))
    return arrays


def _load_npy(data: bytes) -> np.ndarray:
    """Parse one .npy, checking its header against the bytes really there before allocating."""
    fp = io.BytesIO(data)
    version = np.lib.format.read_magic(fp)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(fp)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(fp)
    else:
        raise _Corrupt(f"unsupported .npy version {version}")
    if dtype.hasobject:
        raise _Corrupt("it holds an object array (never unpickled)")
    expected = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if expected != len(data) - fp.tell():
        raise _Corrupt(f"an array of shape {shape} does not match its data size")
    fp.seek(0)
    return np.lib.format.read_array(fp, allow_pickle=False)


def load_file(path: PathLike, allow_pickle: bool = False, max_bytes: int = DEFAULT_MAX_BYTES
              ) -> tuple[dict[str, Any], dict[str, np.ndarray], Any]:
    """Read a file written by :func:`save_file`.

    :param path: the model file.
    :param allow_pickle: unpickle ``pickled.pkl`` if present (runs code from the file: only for
        files you trust); otherwise it is ignored and the third result is None.
    :param max_bytes: refuse files whose contents would take more than this many bytes.
    :return: ``(metadata, arrays, pickled_or_None)``.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise RLBaseError(f"model file not found: {path}")
    try:
        with zipfile.ZipFile(path) as zf:
            _check_members(zf, os.path.getsize(path), max_bytes)
            metadata = json.loads(
                _read_member(zf, METADATA_NAME, MAX_METADATA_BYTES).decode("utf-8"))
            if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
                raise _Corrupt("its metadata does not say format 'rlbase'")
            arrays = _load_arrays(_read_member(zf, ARRAYS_NAME), max_bytes)
            pickle_bytes = None
            if allow_pickle and PICKLED_NAME in zf.namelist():
                pickle_bytes = _read_member(zf, PICKLED_NAME)
    except Exception as exc:  # every parsing failure means "bad file", by design
        reason = str(exc) if isinstance(exc, _Corrupt) else f"{type(exc).__name__}: {exc}"
        raise RLBaseError(f"{path} is not an rlbase model file or is corrupt ({reason})") from exc
    version = metadata.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise RLBaseError(f"{path} has format_version {version!r}; this rlbase reads "
                          f"format_version <= {FORMAT_VERSION}")
    pickled = None
    if pickle_bytes is not None:

        import cloudpickle  # noqa: F401 - registers the reducers cloudpickle payloads may need

        try:
            pickled = pickle.loads(pickle_bytes)
        except Exception as exc:  # any failure of a corrupt payload is bad input
            raise RLBaseError(f"{path}: its pickled payload cannot be loaded "
                              f"({type(exc).__name__}: {exc})") from exc
    return metadata, arrays, pickled


# ---- spaces -------------------------------------------------------------------------------


def _bound_to_json(bound: np.ndarray) -> Any:
    """A Box bound as a scalar when uniform (keeps image spaces small), else a nested list."""
    flat = bound.ravel()
    if flat.size and np.all(flat == flat[0]):
        return flat[0].item()
    return bound.tolist()


def space_to_json(space: gym.Space) -> dict[str, Any]:
    """Describe a space as a JSON-serializable dict (see :func:`space_from_json`)."""
    if isinstance(space, gym.spaces.Box):
        return {"type": "Box", "shape": list(space.shape), "dtype": str(space.dtype),
                "low": _bound_to_json(space.low), "high": _bound_to_json(space.high)}
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.MultiDiscrete):
        return {"type": "MultiDiscrete", "nvec": space.nvec.tolist(),
                "start": space.start.tolist(), "dtype": str(space.dtype)}
    if isinstance(space, gym.spaces.MultiBinary):
        return {"type": "MultiBinary", "n": np.asarray(space.n).tolist()}  # int or shape
    if isinstance(space, gym.spaces.Dict):
        bad = [k for k in space.spaces if not isinstance(k, str)]
        if bad:  # JSON keys are strings: the loaded space would not match the env's
            raise RLBaseError(f"cannot save Dict space {space}: its keys {bad!r} are not "
                              "strings")
        # Entries in the space's own order (JSON objects keep it; see space_from_json).
        return {"type": "Dict", "spaces": {k: space_to_json(s) for k, s in space.spaces.items()}}
    if isinstance(space, gym.spaces.Tuple):
        return {"type": "Tuple", "spaces": [space_to_json(s) for s in space.spaces]}
    raise RLBaseError(f"cannot save space {space}: supported are Box, Discrete, MultiDiscrete, "
                      "MultiBinary, Dict and Tuple")


def space_from_json(d: Mapping[str, Any]) -> gym.Space:
    """Rebuild a space from :func:`space_to_json`'s dict; a malformed dict raises RLBaseError."""
    try:
        kind = d["type"]
        if kind == "Box":
            shape = tuple(int(n) for n in d["shape"])
            if int(np.prod(shape, dtype=object)) > MAX_SPACE_ELEMENTS:
                raise RLBaseError(f"Box shape {shape} has more than {MAX_SPACE_ELEMENTS} "
                                  "elements: not a space this library saves")
            dtype = np.dtype(d["dtype"])
            low = np.broadcast_to(np.asarray(d["low"], dtype=dtype), shape)
            high = np.broadcast_to(np.asarray(d["high"], dtype=dtype), shape)
            return gym.spaces.Box(low=low, high=high, shape=shape, dtype=dtype)
        if kind == "Discrete":
            return gym.spaces.Discrete(int(d["n"]), start=int(d.get("start", 0)))
        if kind == "MultiDiscrete":
            return gym.spaces.MultiDiscrete(d["nvec"], dtype=np.dtype(d.get("dtype", "int64")),
                                            start=d.get("start"))
        if kind == "MultiBinary":
            return gym.spaces.MultiBinary(d["n"])
        if kind == "Dict":
            # The saved key order (gymnasium would sort a plain dict's keys).
            return gym.spaces.Dict({k: space_from_json(s) for k, s in d["spaces"].items()},
                                   sort_keys=False)
        if kind == "Tuple":
            return gym.spaces.Tuple([space_from_json(s) for s in d["spaces"]])
    except RLBaseError:
        raise
    except Exception as exc:  # a malformed description is bad input
        raise RLBaseError(f"malformed space description {d!r}: {exc}") from exc
    raise RLBaseError(f"unknown space type {kind!r}: allowed are Box, Discrete, MultiDiscrete, "
                      "MultiBinary, Dict, Tuple")


def spaces_metadata(observation_space: gym.Space, action_space: gym.Space) -> dict[str, Any]:
    """The metadata entries that :func:`check_spaces` compares against."""
    return {"observation_space": space_to_json(observation_space),
            "action_space": space_to_json(action_space)}


def check_spaces(metadata: Mapping[str, Any], observation_space: gym.Space | None,
                 action_space: gym.Space | None) -> None:
    """Raise RLBaseError unless the env's spaces are the ones the model was saved for.

    A space passed as None is not checked.
    """
    for key, space in (("observation_space", observation_space), ("action_space", action_space)):
        if space is None:
            continue
        if not isinstance(metadata.get(key), Mapping):
            raise RLBaseError(f"the model file records no {key.replace('_', ' ')} to check "
                              f"against the env's {space}")
        saved = space_from_json(metadata[key])
        if saved != space:
            raise RLBaseError(f"model was saved for {key.replace('_', ' ')} {saved}, "
                              f"the env has {space}"
                              f"{NORMALIZE_HINT if metadata.get('vec_normalize') else ''}")


# What an error about a model trained behind VecNormalize adds: how to load it.
NORMALIZE_HINT = ("; it was trained behind VecNormalize: wrap the env in VecNormalize (the "
                  "model's saved statistics are loaded into it), or pass --normalize at the CLI")


def numbered_arrays(arrays: Mapping[str, np.ndarray], prefix: str,
                    shapes: Sequence[Sequence[int]], path: str = "") -> list[np.ndarray]:
    """The arrays saved as ``prefix/0000``, ``prefix/0001``, ... in order, checked against the
    shapes the model expects (a count or shape mismatch is a one-line error), so that a load
    can check everything before it changes anything."""
    keys = sorted(k for k in arrays if k.startswith(prefix + "/"))
    if len(keys) != len(shapes):
        raise RLBaseError(f"model file {path} holds {len(keys)} '{prefix}' arrays, the model has "
                          f"{len(shapes)} variables: it was saved for another network or other "
                          "settings")
    for key, shape in zip(keys, shapes):
        if tuple(np.shape(arrays[key])) != tuple(shape):
            raise RLBaseError(f"model file {path}: '{prefix}' array {key} has shape "
                              f"{np.shape(arrays[key])}, the model expects {tuple(shape)}")
    return [arrays[key] for key in keys]


def check_named_arrays(arrays: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
                       path: str = "", missing: str = "it was saved with other settings") -> None:
    """Every array in ``expected`` is in ``arrays`` with the same shape (else a one-line error;
    ``missing`` says what a missing one means)."""
    for name, current in expected.items():
        if name not in arrays:
            raise RLBaseError(f"model file {path} lacks {name}: {missing}")
        if np.shape(arrays[name]) != np.shape(current):
            raise RLBaseError(f"model file {path}: {name} has shape {np.shape(arrays[name])}, "
                              f"the model expects {np.shape(current)}")
