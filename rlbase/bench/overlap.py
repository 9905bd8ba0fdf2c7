"""``python -m rlbase.bench overlap --env=ID [--num_env=N] [--steps=S]``: would an Atari
rollout gain from acting on one half of the envs while the other half's emulators run?

A2C's and PPO's rollout acts on every env's frames in one call, then steps every emulator (in
ale-py's C++ threads) and waits for them. The overlapped order acts on half A while half B's
emulators run, then on half B while A's run. It can only pay where acting and emulating leave
cores idle, and it pays acting's fixed cost twice per step. This command measures both orders
and their parts with the CLI's Atari policy (rlbase's ``cnn``, untrained: the arithmetic of a
trained one) on the ``ale`` path's emulators, and prints one JSON line: milliseconds per
vector step and the cores kept busy (process CPU seconds over wall seconds) for acting on all
frames, acting on half of them, the emulators alone, the serial step and the overlapped one.
Each is timed in ``rounds`` alternating rounds; the medians are printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any, Callable

import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env.ale_vec_env import AleVecEnv


def measure(env_id: str, num_env: int = 8, steps: int = 400, rounds: int = 3,
            seed: int = 0) -> dict[str, Any]:
    """The serial and the overlapped rollout step of ``num_env`` games, and their parts."""
    if num_env < 2 or num_env % 2:
        raise RLBaseError(f"num_env must be an even number of at least 2 (two halves), got "
                          f"{num_env}")
    if steps < 1 or rounds < 1:
        raise RLBaseError(f"steps and rounds must be at least 1, got {steps} and {rounds}")
    import tensorflow as tf  # lazy: TensorFlow is heavy

    from rlbase.common.networks.compiled_policy import CompiledPolicy  # lazy: imports TensorFlow
    from rlbase.common.networks.policies import policy_from_kwargs  # lazy: imports TensorFlow
    from rlbase.common.tf_util import configure_threads  # lazy: imports TensorFlow

    configure_threads("convnet")  # as A2C and PPO do
    tf.random.set_seed(seed)
    env = AleVecEnv(env_id, num_env)
    try:
        env.seed(seed)
        frames = env.reset()  # [num_env, 84, 84, 4] uint8, kept current by recv
        policy = CompiledPolicy(policy_from_kwargs(env.observation_space, env.action_space,
                                                   "cnn", {}))
        state, mask = policy.policy.initial_state(num_env), np.zeros(num_env, np.float32)
        half = num_env // 2
        halves = (range(0, half), range(half, num_env))

        def act(envs: range) -> np.ndarray:
            rows = slice(envs.start, envs.stop)
            return policy.act(frames[rows], state[rows], mask[rows])[0]

        def send(envs: range, actions: np.ndarray) -> None:
            for k, i in enumerate(envs):
                env.emulators[i].send(actions[k:k + 1].astype(np.int32))

        def recv(envs: range) -> None:
            for i in envs:
                frames[i] = np.moveaxis(env.emulators[i].recv()[0][0], 0, -1)

        everyone = range(num_env)
        noop = np.zeros(num_env, np.int32)

        def act_all(n: int) -> None:
            for _ in range(n):
                act(everyone)

        def act_half(n: int) -> None:
            for _ in range(n):
                act(halves[0])

        def emulate(n: int) -> None:
            for _ in range(n):
                send(everyone, noop)
                recv(everyone)

        def serial(n: int) -> None:
            for _ in range(n):
                send(everyone, act(everyone))
                recv(everyone)

        def overlapped(n: int) -> None:
            send(everyone, act(everyone))
            for _ in range(n):  # steady state: each half acts while the other emulates
                for envs in halves:
                    recv(envs)
                    send(envs, act(envs))
            recv(everyone)

        parts: dict[str, Callable[[int], None]] = {
            "act_all": act_all, "act_half": act_half, "emulate": emulate, "serial": serial,
            "overlapped": overlapped}
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in parts}
        for run in parts.values():
            run(10)  # traces the policy for both batch sizes, warms the caches
        for _ in range(rounds):
            for name, run in parts.items():
                times[name].append(_timed(run, steps))
    finally:
        env.close()
    result: dict[str, Any] = {"env": env_id, "num_env": num_env, "steps": steps,
                              "rounds": rounds}
    for name, samples in times.items():
        result[f"{name}_ms"] = round(statistics.median(ms for ms, _ in samples), 3)
        result[f"{name}_cores"] = round(statistics.median(c for _, c in samples), 2)
    result["overlap_speedup"] = round(result["serial_ms"] / result["overlapped_ms"], 3)
    return result


def _timed(run: Callable[[int], None], steps: int) -> tuple[float, float]:
    """(milliseconds per step, cores busy) of ``run(steps)``."""
    wall, cpu = time.perf_counter(), time.process_time()
    run(steps)
    wall = time.perf_counter() - wall
    return wall / steps * 1e3, (time.process_time() - cpu) / wall


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m rlbase.bench overlap",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="PongNoFrameskip-v4")
    parser.add_argument("--num_env", type=int, default=8)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    result = measure(args.env, args.num_env, args.steps, args.rounds, args.seed)
    print(json.dumps(result))
    return result
