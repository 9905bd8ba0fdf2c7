"""``python -m rlbase.bench matmul-floor [--batch=256] [--obs=3] [--actions=1] [--hidden=400,300]
[--policy_delay=2] [--twin_q=True]``: the time the matrix products of one DDPG/TD3 gradient step
take alone on this machine, the floor under any implementation of the update.

A gradient step multiplies: the target actor and the target critics forward on the next
observations; each critic forward, and backward for its weight gradients and (but for the
first layer) its input gradients; and every ``policy_delay``-th step the actor forward, the
first critic forward on its actions, backward to the action, and the actor backward. This
command builds exactly those products with the step's shapes (random operands, each product's
left operand touched once so XLA cannot hoist it out of the loop), runs 50 pairs of steps
(one without, one with the actor step, for ``policy_delay=2``; the mix follows
``policy_delay``) in one XLA call; then the same with the memory passes a step cannot skip
either: Adam on every weight matrix it trains and the soft update of the targets. One JSON
line: GFLOP per step, milliseconds per step for both, and the products' GFLOP/s. Set beside
the training call's own time per step, the difference is what the rest of the step (biases,
activations, losses, the call itself) costs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import numpy as np

from rlbase.common.errors import RLBaseError

Product = tuple[int, int, int]  # (m, k, n): an [m, k] by [k, n] matrix product


def mlp_products(batch: int, sizes: list[int]) -> dict[str, list[Product]]:
    """The products of an MLP with layer widths ``sizes`` (input first, output last) on
    ``batch`` rows: forward, weight gradients, and input gradients of every layer but the
    first (the one a parameter step needs) plus the first's (what reaches the input)."""
    layers = _kernel_shapes(sizes)
    return {
        "forward": [(batch, i, o) for i, o in layers],
        "weights": [(i, batch, o) for i, o in layers],
        "inputs": [(batch, o, i) for i, o in layers[1:]],
        "first_input": [(batch, layers[0][1], layers[0][0])],
    }


def step_products(batch: int, obs: int, actions: int, hidden: list[int], twin_q: bool
                  ) -> tuple[list[Product], list[Product]]:
    """(the critic step's products, the delayed actor step's products) of DDPG/TD3."""
    critic = mlp_products(batch, [obs + actions, *hidden, 1])
    actor = mlp_products(batch, [obs, *hidden, actions])
    critics = 2 if twin_q else 1
    critic_step = (actor["forward"]  # the target actor on the next observations
                   + critics * critic["forward"]  # the target critics
                   + critics * (critic["forward"] + critic["weights"] + critic["inputs"]))
    actor_step = (actor["forward"] + critic["forward"] + critic["inputs"]
                  + critic["first_input"] + actor["weights"] + actor["inputs"])
    return critic_step, actor_step


def flop(products: list[Product]) -> int:
    return sum(2 * m * k * n for m, k, n in products)


def measure(batch: int = 256, obs: int = 3, actions: int = 1, hidden: tuple[int, ...] = (400, 300),
            policy_delay: int = 2, twin_q: bool = True, steps: int = 100, repeats: int = 7,
            seed: int = 0) -> dict[str, Any]:
    """Milliseconds per step of the step's products alone, and of the products with the
    parameter updates a step must also make (Adam on the critics' and, every
    ``policy_delay``-th step, the actor's weight matrices, and the soft target update): medians
    of ``repeats`` calls of ``steps`` steps each, the two timed in turns."""
    for name, value in (("batch", batch), ("obs", obs), ("actions", actions),
                        ("policy_delay", policy_delay), ("steps", steps), ("repeats", repeats)):
        if value < 1:
            raise RLBaseError(f"{name} must be at least 1, got {value}")
    if not hidden or min(hidden) < 1:
        raise RLBaseError(f"hidden must be one or more layer widths of at least 1, got "
                          f"{list(hidden)}")
    import tensorflow as tf  # lazy: TensorFlow is heavy

    critic_step, actor_step = step_products(batch, obs, actions, list(hidden), twin_q)
    # One round: policy_delay critic steps, one of them with the actor step.
    products = critic_step * policy_delay + actor_step
    rounds = max(1, steps // policy_delay)
    rng = np.random.default_rng(seed)

    def variable(shape: tuple[int, ...]) -> tf.Variable:
        return tf.Variable(rng.normal(0, 0.05, shape).astype(np.float32))

    lhs = [variable((m, k)) for m, k, _ in products]
    rhs = [variable((k, n)) for _, k, n in products]
    critics = 2 if twin_q else 1
    critic_kernels = critics * _kernel_shapes([obs + actions, *hidden, 1])
    actor_kernels = _kernel_shapes([obs, *hidden, actions])
    trained = {name: [(variable(shape), variable(shape), variable(shape)) for shape in shapes]
               for name, shapes in (("critic", critic_kernels), ("actor", actor_kernels))}
    targets = [variable(shape) for shape in critic_kernels + actor_kernels]

    def adam(slots: list[tuple[tf.Variable, tf.Variable, tf.Variable]], acc: tf.Tensor
             ) -> None:
        # The gradient stands in as the parameter itself (one read fewer than a real step).
        for param, m, v in slots:
            grad = param * 1e-3 + acc * 1e-9
            m.assign(0.9 * m + 0.1 * grad)
            v.assign(0.999 * v + 0.001 * tf.square(grad))
            param.assign_sub(1e-3 * m / (tf.sqrt(v) + 1e-8))

    def compiled(with_updates: bool) -> Any:
        @tf.function(jit_compile=True)
        def run(n: tf.Tensor) -> tf.Tensor:
            def body(i: tf.Tensor, acc: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
                total = acc
                for a, b in zip(lhs, rhs):
                    total = total + tf.reduce_sum(tf.matmul(a + acc * 1e-9, b)[:1, :1])
                if with_updates:
                    for _ in range(policy_delay):
                        adam(trained["critic"], total)
                    adam(trained["actor"], total)
                    online = [p for p, _, _ in trained["critic"] + trained["actor"]]
                    for target, param in zip(targets, online):
                        target.assign(0.995 * target + 0.005 * param)
                return i + 1, total
            return tf.while_loop(lambda i, _: i < n, body,
                                 (tf.constant(0), tf.constant(0.0)))[1]
        return run

    gflop = (flop(critic_step) + flop(actor_step) / policy_delay) / 1e9
    result: dict[str, Any] = {"batch": batch, "obs": obs, "actions": actions,
                              "hidden": list(hidden), "policy_delay": policy_delay,
                              "twin_q": twin_q, "gflop_per_step": float(f"{gflop:.6g}")}
    runs = {"products": compiled(False), "with_updates": compiled(True)}
    for run in runs.values():
        run(tf.constant(1)).numpy()  # compiles
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):  # in turns, so both see the same load
        for name, run in runs.items():
            start = time.perf_counter()
            run(tf.constant(rounds)).numpy()
            seconds[name].append((time.perf_counter() - start) / (rounds * policy_delay))
    for name, samples in seconds.items():
        result[f"{name}_ms_per_step"] = round(statistics.median(samples) * 1e3, 3)
        result[f"{name}_min_ms_per_step"] = round(min(samples) * 1e3, 3)
    result["products_gflops"] = float(f"{gflop / statistics.median(seconds['products']):.4g}")
    return result


def _kernel_shapes(sizes: list[int]) -> list[tuple[int, int]]:
    """The weight matrices of an MLP with layer widths ``sizes`` (biases are left out)."""
    return list(zip(sizes[:-1], sizes[1:]))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m rlbase.bench matmul-floor",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--obs", type=int, default=3, help="observation size (Pendulum: 3)")
    parser.add_argument("--actions", type=int, default=1)
    parser.add_argument("--hidden", default="400,300", help="hidden widths, comma-separated")
    parser.add_argument("--policy_delay", type=int, default=2)
    parser.add_argument("--twin_q", choices=("True", "False"), default="True")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    try:
        hidden = tuple(int(w) for w in args.hidden.split(","))
    except ValueError as exc:
        raise RLBaseError(f"hidden must be comma-separated layer widths such as 400,300, got "
                          f"{args.hidden!r}") from exc
    result = measure(args.batch, args.obs, args.actions, hidden, args.policy_delay,
                     args.twin_q == "True", args.steps, args.repeats)
    print(json.dumps(result))
    return result
