"""``python -m rlbase.bench export-speed --network=mlp|cnn [--sb3_python=PATH]``: how fast an
exported policy acts, against ``model.predict`` and against Stable-Baselines3's
``policy.predict`` (run by the peer venv's interpreter when ``--sb3_python`` is given).

Single-observation latency (median of ``--calls`` calls, one observation each) and batched
throughput (observations per second in batches of ``--batch``), all on one thread. The
policies are PPO's: a 64x64 tanh MLP on CartPole-sized observations (4 floats, 2 actions), or
the Nature CNN on 84x84x4 uint8 images (6 actions). Untrained: speed does not depend on the
weights. TFLite is called through its interpreter's tensor API (set_tensor, invoke,
get_tensor), ONNX through ``InferenceSession.run``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from typing import Any, Callable

import gymnasium as gym
import numpy as np

import rlbase
from rlbase.common.errors import RLBaseError

SHAPES = {"mlp": ((4,), np.float32, 2), "cnn": ((84, 84, 4), np.uint8, 6)}

# Stable-Baselines3's side, run by the peer interpreter: prints {"latency_us", "per_s"}.
SB3_SCRIPT = """
import json, sys, time
import gymnasium as gym, numpy as np, torch
from stable_baselines3 import PPO
torch.set_num_threads(1)
shape, dtype, n, calls, batch = json.loads(sys.argv[1])
dtype = np.dtype(dtype)
class Env(gym.Env):
    observation_space = gym.spaces.Box(0, 255, shape, dtype) if dtype == np.uint8 \\
        else gym.spaces.Box(-np.inf, np.inf, shape, dtype)
    action_space = gym.spaces.Discrete(n)
    def reset(self, *, seed=None, options=None):
        return self.observation_space.sample(), {}
    def step(self, a):
        return self.observation_space.sample(), 0.0, False, False, {}
policy = "CnnPolicy" if len(shape) == 3 else "MlpPolicy"
model = PPO(policy, Env(), device="cpu")
one = Env.observation_space.sample()
many = np.stack([Env.observation_space.sample() for _ in range(batch)])
for _ in range(20):
    model.policy.predict(one, deterministic=True)
times = []
for _ in range(calls):
    t = time.perf_counter(); model.policy.predict(one, deterministic=True)
    times.append(time.perf_counter() - t)
model.policy.predict(many, deterministic=True)
t, k = time.perf_counter(), 0
while time.perf_counter() - t < 1.0:
    model.policy.predict(many, deterministic=True); k += 1
print(json.dumps({"latency_us": 1e6 * float(np.median(times)),
                  "per_s": k * batch / (time.perf_counter() - t)}))
"""


class SpeedEnv(gym.Env):
    """Observations of the benchmark's shape (random), Discrete actions."""

    def __init__(self, network: str):
        shape, dtype, n = SHAPES[network]
        self.observation_space = gym.spaces.Box(0, 255, shape, dtype) if dtype == np.uint8 \
            else gym.spaces.Box(-np.inf, np.inf, shape, dtype)
        self.action_space = gym.spaces.Discrete(n)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> Any:
        return self.observation_space.sample(), 0.0, False, False, {}


def measure(fn: Callable[[np.ndarray], Any], one: np.ndarray, many: np.ndarray, calls: int
            ) -> dict[str, float]:
    """Median single-observation latency (us) and batched throughput (observations/s)."""
    for _ in range(20):
        fn(one)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn(one)
        times.append(time.perf_counter() - start)
    fn(many)
    start, k = time.perf_counter(), 0
    while time.perf_counter() - start < 1.0:
        fn(many)
        k += 1
    return {"latency_us": 1e6 * float(np.median(times)),
            "per_s": k * len(many) / (time.perf_counter() - start)}


def tflite_fn(path: str) -> Callable[[np.ndarray], np.ndarray]:
    """The TFLite interpreter's tensor API, resized only when the batch changes."""
    from rlbase.common.export.runners import tflite_interpreter  # lazy: imports TensorFlow

    interpreter = tflite_interpreter(path, num_threads=1)
    runner = interpreter.get_signature_runner()
    inp = interpreter.get_input_details()[0]["index"]
    out = interpreter.get_output_details()[0]["index"]
    size = [0]
    del runner  # (its construction fixes the input/output details of the signature)

    def act(obs: np.ndarray) -> np.ndarray:
        if len(obs) != size[0]:
            interpreter.resize_tensor_input(inp, obs.shape)
            interpreter.allocate_tensors()
            size[0] = len(obs)
        interpreter.set_tensor(inp, obs)
        interpreter.invoke()
        return interpreter.get_tensor(out)
    return act


def onnx_fn(path: str) -> Callable[[np.ndarray], np.ndarray]:
    import onnxruntime as ort  # optional: the export extra

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return lambda obs: session.run(["actions"], {"obs": obs})[0]


def run(network: str, calls: int, batch: int, sb3_python: str | None) -> dict[str, Any]:
    import tensorflow as tf  # lazy: TensorFlow is heavy

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    env = SpeedEnv(network)
    model = rlbase.PPO("CnnPolicy" if network == "cnn" else "MlpPolicy", env, seed=0)
    one = env.observation_space.sample()[None]
    many = np.stack([env.observation_space.sample() for _ in range(batch)])
    results: dict[str, Any] = {"network": network, "calls": calls, "batch": batch}
    results["rlbase_predict"] = measure(lambda o: model.predict(o, deterministic=True), one,
                                        many, calls)
    with tempfile.TemporaryDirectory() as tmp:
        results["tflite"] = measure(tflite_fn(model.export(tmp + "/t", format="tflite")), one,
                                    many, calls)
        try:
            path = model.export(tmp + "/o", format="onnx")
            results["onnx"] = measure(onnx_fn(path), one, many, calls)
        except RLBaseError as exc:
            results["onnx"] = str(exc)
    if sb3_python:
        shape, dtype, n = SHAPES[network]
        proc = subprocess.run([sb3_python, "-c", SB3_SCRIPT,
                               json.dumps([list(shape), np.dtype(dtype).name, n, calls, batch])],
                              capture_output=True, text=True, timeout=600,
                              env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
        if proc.returncode != 0:
            raise RLBaseError(f"the SB3 side failed: {proc.stderr.strip().splitlines()[-1]}")
        results["sb3_predict"] = json.loads(proc.stdout.strip().splitlines()[-1])
    return results


def table(results: dict[str, Any]) -> str:
    """A markdown table with the ratios to rlbase's predict and to SB3's."""
    rows = ["| caller | 1 observation (us) | batch of {b} (obs/s) | speed-up vs rlbase predict "
            "(1 obs / batch) | speed-up vs SB3 predict (1 obs / batch) |"
            .format(b=results["batch"]), "|---|---|---|---|---|"]
    base = results["rlbase_predict"]
    sb3 = results.get("sb3_predict")

    def ratio(ref: dict[str, float], r: dict[str, float]) -> str:
        return f"{ref['latency_us'] / r['latency_us']:.1f}x / {r['per_s'] / ref['per_s']:.1f}x"

    for key in ("rlbase_predict", "tflite", "onnx", "sb3_predict"):
        r = results.get(key)
        if not isinstance(r, dict):
            continue
        vs_sb3 = ratio(sb3, r) if isinstance(sb3, dict) else "-"
        rows.append(f"| {key} | {r['latency_us']:.1f} | {r['per_s']:,.0f} | {ratio(base, r)} | "
                    f"{vs_sb3} |")
    return "\n".join(rows)


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="python -m rlbase.bench export-speed",
                                description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--network", choices=sorted(SHAPES), default="mlp")
    p.add_argument("--calls", type=int, default=2000, help="single-observation calls timed")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--sb3_python", default=None,
                   help="a Python with stable-baselines3 (e.g. /tmp/sb3env/bin/python)")
    args = p.parse_args(argv)
    results = run(args.network, args.calls, args.batch, args.sb3_python)
    print(json.dumps(results))
    print(table(results))
