"""Run an exported artifact from Python (the tests, the benchmark, the exporter's own check):
``load(path)`` returns ``fn(**inputs) -> {"actions": ..., ["next_state": ...]}`` with numpy in
and out, whatever the format."""

from __future__ import annotations

import copy
import importlib.util
import os
import warnings
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.common import nested
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.action_masks import mask_groups

Runner = Callable[..., dict[str, np.ndarray]]
ONNX_HINT = "pip install 'rlbase[export]'"


def require_onnx() -> None:
    """A one-line error naming the extra when tf2onnx or onnxruntime is missing."""
    missing = [m for m in ("tf2onnx", "onnxruntime") if importlib.util.find_spec(m) is None]
    if missing:
        raise RLBaseError(f"ONNX export needs {' and '.join(missing)}, which "
                          f"{'is' if len(missing) == 1 else 'are'} not installed: {ONNX_HINT}")


def tflite_interpreter(path: str, num_threads: int | None = None) -> Any:
    """LiteRT's interpreter (``ai_edge_litert``, TensorFlow Lite's successor) where it is
    installed, else TensorFlow's ``tf.lite.Interpreter``, whose deprecation notice (it points
    to LiteRT) is silenced here: both run the same files."""
    try:
        from ai_edge_litert.interpreter import Interpreter  # optional: pip install ai-edge-litert
    except ImportError:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return tf.lite.Interpreter(model_path=path, num_threads=num_threads)
    return Interpreter(model_path=path, num_threads=num_threads)


def load(path: str, signature: str = "serving_default", num_threads: int | None = None
         ) -> Runner:
    """A runner of the SavedModel folder, ``.tflite`` or ``.onnx`` file at ``path``."""
    if os.path.isdir(path):
        fn = tf.saved_model.load(path).signatures[signature]
        return lambda **inputs: {k: v.numpy() for k, v in fn(**inputs).items()}
    if path.endswith(".tflite"):
        runner = tflite_interpreter(path, num_threads).get_signature_runner(signature)
        return lambda **inputs: dict(runner(**inputs))
    if path.endswith(".onnx"):
        require_onnx()
        import onnxruntime as ort  # optional: the export extra

        options = ort.SessionOptions()
        if num_threads:
            options.intra_op_num_threads = num_threads
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        return lambda **inputs: dict(zip(names, session.run(names, inputs)))
    raise RLBaseError(f"{path} is not an exported policy: a SavedModel folder, a .tflite or an "
                      ".onnx file")


def sample_inputs(space: gym.Space, names: list[str], n: int, seed: int = 0,
                  state_size: int = 0, action_space: gym.Space | None = None
                  ) -> dict[str, np.ndarray]:
    """``n`` observations drawn from ``space`` as named inputs (recurrent: a zero state and
    episode starts; ``action_space`` given: random ``action_masks`` of that space, each row
    (each dimension of a MultiDiscrete row) with at least one valid action)."""
    space = _seeded_copy(space, seed)
    batch = nested.stack(space, [space.sample() for _ in range(n)])
    inputs = dict(zip(names, (np.ascontiguousarray(x) for x in nested.flatten(space, batch))))
    if state_size:
        inputs["state"] = np.zeros((n, state_size), np.float32)
        inputs["mask"] = np.ones(n, np.float32)
    if action_space is not None:
        inputs["action_masks"] = random_masks(action_space, n, np.random.default_rng(seed))
    return inputs


def random_masks(space: gym.Space, n: int, rng: np.random.Generator) -> np.ndarray:
    """``[n, logits]`` bool masks: each entry valid with probability 1/2, and one action of
    each row's (each dimension's) drawn valid whatever the coin said."""
    sizes = mask_groups(space)
    parts = []
    for size in sizes:
        part = rng.random((n, size)) < 0.5
        part[np.arange(n), rng.integers(0, size, n)] = True
        parts.append(part)
    return np.concatenate(parts, axis=1)


def _seeded_copy(space: gym.Space, seed: int) -> gym.Space:
    space = copy.deepcopy(space)
    space.seed(seed)
    return space


def agreement(space: gym.Space, a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """How two policies' actions on the same observations agree: the fraction equal
    (discrete actions, whole action vectors) or the largest absolute difference (Box)."""
    if isinstance(space, gym.spaces.Box):
        return {"max_abs_diff": float(np.max(np.abs(a.astype(np.float64) - b)))}
    rows = np.reshape(a, (len(a), -1)) == np.reshape(b, (len(b), -1))
    return {"fraction_equal": float(np.mean(np.all(rows, axis=1)))}
