"""The model-file format: round trip, atomic writes, and refusal of bad or hostile files."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.io import serialization
from rlbase.common.io.serialization import (
    atomic_write,
    check_spaces,
    load_file,
    save_file,
    space_from_json,
    space_to_json,
    spaces_metadata,
)

ARRAYS = {"pi/dense/kernel": np.arange(12, dtype=np.float32).reshape(3, 4),
          "steps": np.array(7, dtype=np.int64), "mask": np.array([True, False]),
          "file": np.zeros(2)}  # "file" would collide with np.savez's own parameter


def _write_zip(path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _meta(**extra) -> bytes:
    return json.dumps({"format": "rlbase", "format_version": 1, **extra}).encode()


class _Marker:
    """Unpickling this creates a file: proof that the pickle was executed."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_round_trip(tmp_path):
    path = tmp_path / "sub" / "model.zip"
    save_file(path, {"alg": "ppo", "lr": np.float32(0.5), "n": np.int64(3)}, ARRAYS,
              pickled={"extra": [1, 2]})
    metadata, arrays, pickled = load_file(path)
    assert metadata["alg"] == "ppo" and metadata["lr"] == 0.5 and metadata["n"] == 3
    assert metadata["format"] == "rlbase" and metadata["format_version"] == 1
    assert set(metadata["versions"]) == {"rlbase", "tensorflow", "gymnasium", "numpy", "python"}
    assert pickled is None  # not unpickled by default
    assert set(arrays) == set(ARRAYS)
    for key, value in ARRAYS.items():
        assert arrays[key].dtype == value.dtype
        np.testing.assert_array_equal(arrays[key], value)
    _, _, pickled = load_file(path, allow_pickle=True)
    assert pickled == {"extra": [1, 2]}
    assert os.listdir(path.parent) == ["model.zip"]  # no temp file left behind


def test_atomic_write_keeps_old_file_when_writer_fails(tmp_path):
    path = tmp_path / "model.zip"
    save_file(path, {"version": "old"}, {"w": np.ones(3)})
    with pytest.raises(RuntimeError), atomic_write(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(b"half a model")
        raise RuntimeError("crash midway")
    assert load_file(path)[0]["version"] == "old"
    assert os.listdir(tmp_path) == ["model.zip"]


def test_save_rejects_object_arrays(tmp_path):
    with pytest.raises(RLBaseError, match="'bad'"):
        save_file(tmp_path / "m.zip", {}, {"bad": np.array([{}, 1], dtype=object)})
    assert not (tmp_path / "m.zip").exists()


def test_missing_file(tmp_path):
    with pytest.raises(RLBaseError, match="model file not found"):
        load_file(tmp_path / "nope.zip")


def _bad_files(tmp_path, good: bytes) -> dict[str, bytes]:
    members_npz_object = {"metadata.json": _meta(),
                          "arrays.npz": _npz(x=np.array([{"a": 1}], dtype=object))}
    buffers = {}
    for name, members in {"no_metadata": {"arrays.npz": _npz(x=np.ones(2))},
                          "foreign": {"metadata.json": b'{"format": "other"}',
                                      "arrays.npz": _npz(x=np.ones(2))},
                          "metadata_list": {"metadata.json": b"[1, 2]",
                                            "arrays.npz": _npz()},
                          "no_arrays": {"metadata.json": _meta()},
                          "npz_object": members_npz_object}.items():
        buffer = io.BytesIO()
        _write_zip(buffer, members)
        buffers[name] = buffer.getvalue()
    rng = np.random.default_rng(0)
    buffers.update({"empty": b"", "random": rng.bytes(4096), "truncated": good[: len(good) // 2],
                    "plain_npz": _npz(x=np.ones(3))})
    return buffers


def test_bad_files_raise_rlbase_error(tmp_path):
    good_path = tmp_path / "good.zip"
    save_file(good_path, {}, ARRAYS)
    for name, data in _bad_files(tmp_path, good_path.read_bytes()).items():
        path = tmp_path / f"{name}.zip"
        path.write_bytes(data)
        with pytest.raises(RLBaseError, match="not an rlbase model file"):
            load_file(path)


def test_newer_format_version_refused(tmp_path):
    path = tmp_path / "future.zip"
    _write_zip(path, {"metadata.json": json.dumps({"format": "rlbase",
                                                   "format_version": 99}).encode(),
                      "arrays.npz": _npz()})
    with pytest.raises(RLBaseError, match="format_version 99"):
        load_file(path)


def test_zip_bomb_and_size_limit_refused(tmp_path):
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("metadata.json", _meta())
        zf.writestr("arrays.npz", b"\0" * (8 << 20))  # deflates ~1000:1
    with pytest.raises(RLBaseError, match="max_bytes|compression ratio"):
        load_file(path, max_bytes=1 << 20)
    good = tmp_path / "good.zip"
    save_file(good, {}, {"w": np.zeros(1000)})
    with pytest.raises(RLBaseError, match="max_bytes"):
        load_file(good, max_bytes=1000)


def test_npy_header_larger_than_data_refused(tmp_path):
    # A header promising 10**12 floats over 8 bytes of data must not allocate 8 TB.
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
    npz = io.BytesIO()
    _write_zip(npz, {"x.npy": header.getvalue() + b"\0" * 8})
    path = tmp_path / "liar.zip"
    _write_zip(path, {"metadata.json": _meta(), "arrays.npz": npz.getvalue()})
    with pytest.raises(RLBaseError, match="does not match its data size"):
        load_file(path)


def test_pickle_only_executed_when_allowed(tmp_path):
    marker = tmp_path / "marker"
    path = tmp_path / "model.zip"
    save_file(path, {}, {}, pickled=_Marker(str(marker)))
    assert not marker.exists()  # saving does not run it either
    _, _, pickled = load_file(path)
    assert pickled is None and not marker.exists()
    load_file(path, allow_pickle=True)
    assert marker.exists()


def test_fuzzed_files_load_or_raise_rlbase_error(tmp_path):
    path = tmp_path / "good.zip"
    save_file(path, {"alg": "a2c", "text": "x" * 200}, ARRAYS)
    good = path.read_bytes()
    rng = np.random.default_rng(12345)
    fuzz_path = tmp_path / "fuzz.zip"
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(300):
        data = bytearray(good)
        if rng.random() < 0.3:
            data = data[: rng.integers(0, len(data))]
        for _ in range(int(rng.integers(1, 4)) if data else 0):
            data[rng.integers(0, len(data))] = int(rng.integers(0, 256))
        fuzz_path.write_bytes(bytes(data))
        try:
            load_file(fuzz_path)
            outcomes["loaded"] += 1
        except RLBaseError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0


SPACES = [
    gym.spaces.Box(-1.0, 2.0, (3,), np.float32),
    gym.spaces.Box(low=np.array([-np.inf, 0.0]), high=np.array([np.inf, 1.0]), dtype=np.float64),
    gym.spaces.Box(0, 255, (84, 84, 4), np.uint8),
    gym.spaces.Discrete(5, start=2),
    gym.spaces.MultiDiscrete([3, 4]),
    gym.spaces.MultiBinary(6),
    gym.spaces.Dict({"a": gym.spaces.Discrete(2),
                     "b": gym.spaces.Tuple([gym.spaces.MultiBinary([2, 3]),
                                            gym.spaces.Box(-1, 1, (2,))])}),
]


@pytest.mark.parametrize("space", SPACES, ids=lambda s: type(s).__name__)
def test_space_json_round_trip(space):
    d = json.loads(json.dumps(space_to_json(space)))
    assert space_from_json(d) == space


def test_space_json_is_compact_for_images():
    assert len(json.dumps(space_to_json(SPACES[2]))) < 200


def test_check_spaces(tmp_path):
    obs, act = gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2)
    path = tmp_path / "m.zip"
    save_file(path, spaces_metadata(obs, act), {})
    metadata = load_file(path)[0]
    check_spaces(metadata, obs, act)
    check_spaces(metadata, gym.spaces.Box(-1, 1, (4,)), None)
    with pytest.raises(RLBaseError, match="saved for observation space .* the env has"):
        check_spaces(metadata, gym.spaces.Box(-1, 1, (5,)), act)
    with pytest.raises(RLBaseError, match="saved for action space Discrete\\(2\\), the env has"):
        check_spaces(metadata, obs, gym.spaces.Discrete(3))
    with pytest.raises(RLBaseError, match="records no observation space"):
        check_spaces({}, obs, act)


def test_unsupported_and_malformed_spaces():
    with pytest.raises(RLBaseError, match="cannot save space"):
        space_to_json(gym.spaces.Text(5))
    with pytest.raises(RLBaseError, match="unknown space type"):
        space_from_json({"type": "Graph"})
    with pytest.raises(RLBaseError, match="malformed space"):
        space_from_json({"type": "Box", "shape": "x"})


def test_versions_do_not_import_tensorflow():
    # Reading versions must stay cheap: it may only look tensorflow up, never import it.
    import subprocess
    import sys

    code = ("import sys; from rlbase.common.io.serialization import library_versions; "
            "v = library_versions(); assert 'tensorflow' not in sys.modules; print(v)")
    repo_root = Path(serialization.__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=repo_root, check=False)
    assert out.returncode == 0, out.stderr
