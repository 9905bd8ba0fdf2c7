"""Fuzzing the model-file loader: truncated, mutated and hostile files give RLBaseError (or load,
when a mutation hit bytes that do not matter), never another exception, a hang or a huge
allocation. Byte-level mutations mostly die at the zip CRC check, so structure-aware mutations
rebuild valid zips around mutated metadata and .npy headers to reach the deeper checks. And
pickle payloads: code in a file never runs unless the caller passes ``allow_pickle=True``."""

from __future__ import annotations

import collections
import contextlib
import io
import json
import pickle
import signal
import tracemalloc
import zipfile

import gymnasium as gym
import numpy as np
import pytest
from fault_envs import FaultyEnv

from rlbase.common.errors import RLBaseError
from rlbase.common.io.serialization import load_file, save_file, spaces_metadata
from rlbase.common.vec_env import DummyVecEnv

SEED = 20240611
MAX_SECONDS = 5          # per load: anything slower counts as a hang
MAX_PEAK_BYTES = 64 << 20  # per load: the valid file's arrays are < 100 kB


@contextlib.contextmanager
def deadline(seconds: int):
    def expire(signum, frame):
        raise TimeoutError(f"load took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def valid_file(path) -> bytes:
    meta = {"algorithm": "a2c", "network": "mlp", "num_timesteps": 1000,
            "hyperparameters": {"lr": 7e-4, "nsteps": 5},
            **spaces_metadata(gym.spaces.Box(-1, 1, (4,), np.float32), gym.spaces.Discrete(2))}
    rng = np.random.default_rng(0)
    arrays = {"policy/0000": rng.standard_normal((4, 64)).astype(np.float32),
              "policy/0001": np.zeros(64, np.float32),
              "policy/0002": rng.standard_normal((64, 2)).astype(np.float32),
              "optimizer/0000": np.array(5, np.int64),
              "flags": np.array([True, False])}
    save_file(path, meta, arrays)
    return path.read_bytes()


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def rezip(parts: dict[str, bytes], compress: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compress) as zf:
        for name, data in parts.items():
            zf.writestr(name, data)
    return buf.getvalue()


HOSTILE_VALUES = [None, -1, 2**70, 1e308, float("nan"), "", "x" * 100, [], {}, [[[[[]]]]],
                  {"type": "Box", "shape": [10**9, 10**9], "dtype": "float32", "low": 0,
                   "high": 1},
                  {"type": "Box", "shape": [3], "dtype": "object", "low": 0, "high": 1},
                  {"type": "Tuple", "spaces": [{"type": "Discrete", "n": -5}]},
                  {"type": "Nope"}]


def mutate_metadata(parts: dict[str, bytes], rng: np.random.Generator) -> bytes:
    meta = json.loads(parts["metadata.json"])
    key = rng.choice(sorted(meta))
    meta[key] = HOSTILE_VALUES[rng.integers(len(HOSTILE_VALUES))]
    if rng.random() < 0.2:
        meta = [meta]  # not a mapping at all
    return rezip({**parts, "metadata.json": json.dumps(meta).encode()})


def mutate_npy(parts: dict[str, bytes], rng: np.random.Generator) -> bytes:
    inner = members(parts["arrays.npz"])
    name = rng.choice(sorted(inner))
    data = bytearray(inner[name])
    header_end = data.index(b"\n") + 1
    header = data[10:header_end].decode("latin1")
    replacements = ["(1000000000000,)", "(-1,)", "(2, 3, 4, 5, 6, 7)", "()", "(10**9,)"]
    dtypes = ["'|O'", "'<U1000000000'", "'V0'", "'<f8'", "'|b1'", "'>i2'"]
    if rng.random() < 0.5:
        start, end = header.index("'shape': ") + 9, header.index(")") + 1
        header = header[:start] + replacements[rng.integers(len(replacements))] + header[end:]
    else:
        start = header.index("'descr': ") + 9
        end = header.index(",", start)
        header = header[:start] + dtypes[rng.integers(len(dtypes))] + header[end:]
    header = header.rstrip("\n").ljust(header_end - 11) + "\n"
    new = bytes(data[:8]) + len(header).to_bytes(2, "little") + header.encode("latin1") + \
        bytes(data[header_end:])
    inner[name] = new
    return rezip({**parts, "arrays.npz": rezip(inner)})


def mutate_bytes(data: bytes, rng: np.random.Generator) -> bytes:
    kind = rng.integers(5)
    n = len(data)
    if kind == 0:  # truncated
        return data[: rng.integers(n)]
    out = bytearray(data)
    if kind == 1:  # a few bytes flipped
        for i in rng.integers(0, n, rng.integers(1, 17)):
            out[i] ^= int(rng.integers(1, 256))
    elif kind == 2:  # a span overwritten
        i = int(rng.integers(n))
        span = rng.integers(0, 256, int(rng.integers(1, 64)), dtype=np.uint8).tobytes()
        out[i:i + len(span)] = span
    elif kind == 3:  # bytes inserted
        i = int(rng.integers(n))
        out[i:i] = rng.integers(0, 256, int(rng.integers(1, 64)), dtype=np.uint8).tobytes()
    else:  # a span deleted
        i = int(rng.integers(n))
        del out[i:i + int(rng.integers(1, 256))]
    return bytes(out)


def fuzzed_files(original: bytes, count: int) -> list[tuple[str, bytes]]:
    rng = np.random.default_rng(SEED)
    parts = members(original)
    files: list[tuple[str, bytes]] = [
        ("empty", b""), ("not a zip", b"\x80\x04K\x01." * 10),
        ("metadata bomb", rezip({**parts, "metadata.json": b" " * (20 << 20)},
                                zipfile.ZIP_DEFLATED)),
        ("zip of zips", rezip({"metadata.json": original, "arrays.npz": original}))]
    while len(files) < count:
        roll = rng.random()
        if roll < 0.6:
            files.append(("bytes", mutate_bytes(original, rng)))
        elif roll < 0.8:
            files.append(("metadata", mutate_metadata(parts, rng)))
        else:
            files.append(("npy header", mutate_npy(parts, rng)))
    return files


def test_loader_survives_1200_truncated_mutated_and_hostile_files(tmp_path):
    original = valid_file(tmp_path / "valid.zip")
    outcomes: collections.Counter = collections.Counter()
    path = tmp_path / "fuzzed.zip"
    for i, (kind, data) in enumerate(fuzzed_files(original, 1200)):
        path.write_bytes(data)
        # Tracing allocations is slow: trace every structure-aware file (those reach the size
        # checks) and every 10th byte-level one.
        traced = kind != "bytes" or i % 10 == 0
        if traced:
            tracemalloc.start()
        try:
            try:
                with deadline(MAX_SECONDS):
                    metadata, arrays, _ = load_file(path)
                outcomes[(kind, "loaded")] += 1
                assert isinstance(metadata, dict) and all(
                    isinstance(a, np.ndarray) for a in arrays.values())
            except RLBaseError as exc:
                outcomes[(kind, "RLBaseError")] += 1
                assert str(path) in str(exc) and "\n" not in str(exc)
            if traced:
                peak = tracemalloc.get_traced_memory()[1]
                assert peak < MAX_PEAK_BYTES, f"{kind} mutation allocated {peak} bytes"
        finally:
            tracemalloc.stop()
    print("\nfuzz outcomes:", dict(sorted(outcomes.items())))
    assert sum(outcomes.values()) == 1200
    # Every family of mutation was exercised, and most were refused.
    assert {k for k, _ in outcomes} == {"bytes", "metadata", "npy header", "empty",
                                        "not a zip", "metadata bomb", "zip of zips"}
    assert sum(n for (_, what), n in outcomes.items() if what == "RLBaseError") > 800


@pytest.fixture(scope="module")
def a2c_model():
    from rlbase.a2c.a2c import learn

    return learn("mlp", "CartPole-v1", seed=0, nsteps=5, total_timesteps=5)


def test_model_load_refuses_mutated_model_files_cleanly(tmp_path, a2c_model):
    """The same through a real model's load(): space checks and variable assignment too."""
    good = tmp_path / "model.zip"
    a2c_model.save(str(good))
    original = good.read_bytes()
    before = [v.numpy() for v in a2c_model.policy.weights]
    outcomes: collections.Counter = collections.Counter()
    path = tmp_path / "fuzzed.zip"
    for kind, data in fuzzed_files(original, 300):
        path.write_bytes(data)
        try:
            with deadline(MAX_SECONDS):
                a2c_model.load(str(path))
            outcomes[(kind, "loaded")] += 1
            a2c_model.load(str(good))
        except RLBaseError:
            outcomes[(kind, "RLBaseError")] += 1
    print("\nmodel.load fuzz outcomes:", dict(sorted(outcomes.items())))
    assert sum(outcomes.values()) == 300
    # A refused file changed nothing: every check runs before the first assignment.
    for a, b in zip(before, [v.numpy() for v in a2c_model.policy.weights]):
        np.testing.assert_array_equal(a, b)


# ---- hostile model files ------------------------------------------------------------------


class _Payload:
    """Unpickling this creates the marker file: proof that code from the file ran."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def test_pickle_payloads_never_run_unless_allowed(tmp_path):
    marker = tmp_path / "marker"
    payload = pickle.dumps(_Payload(str(marker)))
    meta = json.dumps({"format": "rlbase", "format_version": 1, "algorithm": "a2c"}).encode()
    npz = io.BytesIO()
    np.savez(npz, w=np.ones(3))
    object_npz = io.BytesIO()
    np.savez(object_npz, w=np.array([_Payload(str(marker))], dtype=object))
    files = {
        "pickled_member.zip": _zip({"metadata.json": meta, "arrays.npz": npz.getvalue(),
                                    "pickled.pkl": payload}),
        "object_array.zip": _zip({"metadata.json": meta, "arrays.npz": object_npz.getvalue()}),
        "raw_pickle.zip": payload,
        "npz_with_object.npz": object_npz.getvalue(),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    load_file(tmp_path / "pickled_member.zip")  # loads: the pickle is ignored
    for name in ("object_array.zip", "raw_pickle.zip", "npz_with_object.npz"):
        with pytest.raises(RLBaseError, match="not an rlbase model file or is corrupt"):
            load_file(tmp_path / name)
    from rlbase.a2c.a2c import learn

    model = learn("mlp", DummyVecEnv([lambda: FaultyEnv()]), seed=0, total_timesteps=5)
    for name in files:
        with pytest.raises(RLBaseError):
            model.load(str(tmp_path / name))
    assert not marker.exists()
    # The payload is real: asked to, the loader runs it.
    load_file(tmp_path / "pickled_member.zip", allow_pickle=True)
    assert marker.exists()
