"""Does ``precision='mixed_bfloat16'`` pay on this machine? float32 against bfloat16 GFLOP/s
for the shapes rlbase trains most: the TD3 critic's (256 x 400 x 300) and SAC's
(256 x 256 x 256) matmuls and the Nature CNN's convolutions on a batch of 32 Atari frames.

    python -m rlbase.bench.precision [--repeats 30] [--jit] [--train]

``--train`` also times whole SAC and TD3 gradient steps (Pendulum-v1, the zoo's networks: SAC
256x256, TD3 400x300) with each precision, in turns in one process.

bfloat16 is fast only where the hardware multiplies it (GPUs; CPUs with AVX512-BF16 or AMX,
see the ``flags`` line of /proc/cpuinfo); elsewhere TensorFlow converts it and it is slower
than float32. rlbase/docs/precision.md has the figures measured for rlbase.
"""

from __future__ import annotations

import argparse
import functools
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from rlbase import registry
from rlbase.common.logs import logger
from rlbase.common.misc_util import import_tensorflow_quietly
from rlbase.common.precision import PRECISIONS

#: (name, the input's shape, the weight's shape, stride): matmuls have stride 0
SHAPES: tuple[tuple[str, tuple[int, ...], tuple[int, ...], int], ...] = (
    ("td3 critic 256x400 @ 400x300", (256, 400), (400, 300), 0),
    ("sac 256x256 @ 256x256", (256, 256), (256, 256), 0),
    ("nature conv1 32x84x84x4, 8x8/4 -> 32", (32, 84, 84, 4), (8, 8, 4, 32), 4),
    ("nature conv2 32x20x20x32, 4x4/2 -> 64", (32, 20, 20, 32), (4, 4, 32, 64), 2),
    ("nature conv3 32x9x9x64, 3x3/1 -> 64", (32, 9, 9, 64), (3, 3, 64, 64), 1),
)


def flops(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: int) -> float:
    """Multiply-adds x 2 of one matmul or VALID convolution."""
    if stride == 0:
        return 2.0 * x_shape[0] * x_shape[1] * w_shape[1]
    out_h = (x_shape[1] - w_shape[0]) // stride + 1
    out_w = (x_shape[2] - w_shape[1]) // stride + 1
    return 2.0 * x_shape[0] * out_h * out_w * w_shape[0] * w_shape[1] * w_shape[2] * w_shape[3]


def median_seconds(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """The median time of one call of each function, timed in turns (one call of each per
    round, after two warm-up calls that trace), so a busy machine slows both alike."""
    for fn in fns.values():
        fn()
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: sorted(t)[len(t) // 2] for name, t in times.items()}


def _run(op: Callable[[], Any]) -> Any:
    return op().numpy()


def measure(repeats: int = 30, jit: bool = False) -> list[dict[str, Any]]:
    """One row per shape: GFLOP/s in float32 and in bfloat16, and their ratio."""
    import tensorflow as tf  # lazy: TensorFlow is heavy

    rows = []
    for name, x_shape, w_shape, stride in SHAPES:
        fns: dict[str, Callable[[], Any]] = {}
        for dtype in (tf.float32, tf.bfloat16):
            x = tf.cast(tf.random.normal(x_shape), dtype)
            w = tf.cast(tf.random.normal(w_shape) * 0.05, dtype)

            @tf.function(jit_compile=jit)
            def op(x: tf.Tensor = x, w: tf.Tensor = w, s: int = stride) -> tf.Tensor:
                out = tf.matmul(x, w) if s == 0 else tf.nn.conv2d(x, w, s, "VALID")
                return tf.reduce_sum(tf.cast(out, tf.float32))

            fns[dtype.name] = functools.partial(_run, op)
        seconds = median_seconds(fns, repeats)
        work = flops(x_shape, w_shape, stride) / 1e9
        f32, bf16 = work / seconds["float32"], work / seconds["bfloat16"]
        rows.append({"shape": name, "float32_gflops": f32, "bfloat16_gflops": bf16,
                     "bfloat16_speedup": bf16 / f32})
    return rows


#: the networks of the zoo's Pendulum rows (rlbase/hyperparams)
TRAIN_SETTINGS: dict[str, tuple[str, dict[str, Any]]] = {
    "sac": ("sac", dict(num_layers=2, num_hidden=256, activation="relu")),
    "td3": ("ddpg", dict(layer_sizes=(400, 300), activation="relu", twin_q=True, policy_delay=2,
                         target_noise=0.2, noise_type="normal_0.1")),
}


def train_step_seconds(repeats: int = 300) -> dict[str, dict[str, float]]:
    """Per algorithm and precision: the median seconds of one training call (one gradient
    step, then acting on one observation), after 300 env steps fill the replay buffer."""
    out = {}
    obs = np.zeros((1, 3), np.float32)
    for name, (alg, settings) in TRAIN_SETTINGS.items():
        learn = registry.get_algorithm(alg).learn
        fns: dict[str, Callable[[], Any]] = {}
        for precision in PRECISIONS:
            with tempfile.TemporaryDirectory() as folder, \
                    logger.scoped_configure(folder, format_strs=[]):
                model = learn("mlp", "Pendulum-v1", total_timesteps=400, seed=0,
                              learning_starts=300, precision=precision, **settings)
            lrs = (1e-3,) if alg == "sac" else (1e-3, 1e-3)
            fns[precision] = functools.partial(model.train_and_act, obs, *lrs)
        out[name] = median_seconds(fns, repeats)
    return out


def cpu_flags() -> str:
    """The CPU's bfloat16 features (Linux), or '' when /proc/cpuinfo cannot say."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return ""
    wanted = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
    have = set(flags.split())
    return ", ".join(f"{w} {'yes' if w in have else 'no'}" for w in wanted)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rlbase.bench.precision",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30, help="timed calls per shape")
    parser.add_argument("--jit", action="store_true", help="compile with XLA (as SAC and "
                        "TD3 train by default)")
    parser.add_argument("--train", action="store_true", help="also time SAC's and TD3's "
                        "gradient steps on Pendulum-v1 with each precision")
    args = parser.parse_args(argv)

    import_tensorflow_quietly()
    import tensorflow as tf  # lazy: TensorFlow is heavy

    devices = ", ".join(d.device_type for d in tf.config.list_logical_devices())
    print(f"devices: {devices}; CPU: {cpu_flags() or 'unknown'}; XLA: {args.jit}")
    print(f"{'shape':42s} {'float32 GFLOP/s':>16s} {'bfloat16 GFLOP/s':>17s} {'speed-up':>9s}")
    for row in measure(args.repeats, args.jit):
        print(f"{row['shape']:42s} {row['float32_gflops']:16.1f} {row['bfloat16_gflops']:17.1f} "
              f"{row['bfloat16_speedup']:8.2f}x")
    if args.train:
        for name, seconds in train_step_seconds(10 * args.repeats).items():
            f32, mixed = seconds["float32"], seconds["mixed_bfloat16"]
            print(f"{name} Pendulum-v1, one gradient step + act: float32 {f32 * 1e3:.2f} ms, "
                  f"mixed_bfloat16 {mixed * 1e3:.2f} ms ({f32 / mixed:.2f}x)")


if __name__ == "__main__":
    main()
