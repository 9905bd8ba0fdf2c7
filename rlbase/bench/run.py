"""Benchmarks: training steps/s and the return reached, optionally beside the peer library.

    python -m rlbase.bench run --alg=a2c --env=CartPole-v1 --num_timesteps=5e4 --seed=0
    python -m rlbase.bench compare --alg=a2c --env=CartPole-v1 --num_timesteps=5e4 \
        --peer_python=/tmp/sb3env/bin/python --anchors=../shared/anchors
    python -m rlbase.bench suite --preset=classic --jobs=2   # see rlbase/bench_suite.py

``run`` prints one line (and appends a JSON record to ``--out`` when given). ``compare`` runs
rlbase and then the peer's anchor script at the same settings in the same process tree, one
after the other, and prints the ratio of steps/s: the machine is shared and noisy, so only
ratios measured together mean anything.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from typing import Any

from rlbase.bench.settings import PEER_SETTINGS


def train_and_evaluate(alg: str, env_id: str, num_timesteps: int, num_env: int | None,
                       seed: int, eval_episodes: int, extra: dict[str, Any],
                       normalize: bool = False,
                       monitor_dir: str | None = None) -> dict[str, Any]:
    """Train with ``learn()``, time it, then evaluate deterministically on a fresh env.

    ``monitor_dir``: where the training envs write monitor.csv (learning curves), or None.
    """
    from rlbase import registry
    from rlbase.common.cmd_util import get_env_type, make_vec_env
    from rlbase.common.evaluation import evaluate_policy

    name, preset = registry.resolve(alg)
    entry = registry.get_algorithm(name)
    learn = entry.learn
    env_type = get_env_type(env_id)
    kwargs = entry.defaults(env_type)
    kwargs.update(preset)
    kwargs.update(PEER_SETTINGS.get((alg, env_id), PEER_SETTINGS.get((name, env_id), {})))
    kwargs.update(extra)
    num_env = num_env or kwargs.pop("num_env", 1)
    kwargs.pop("num_env", None)
    network = kwargs.pop("network", "mlp")
    normalize = normalize or bool(kwargs.pop("normalize", False))
    env = make_vec_env(env_id, env_type, num_env, seed, monitor_dir=monitor_dir)
    if normalize:
        from rlbase.common.vec_env import VecNormalize

        env = VecNormalize(env)
    kwargs.setdefault("log_interval", 10**9)
    t0 = time.perf_counter()
    model = learn(network=network, env=env, seed=seed, total_timesteps=num_timesteps, **kwargs)
    wall = time.perf_counter() - t0
    env.close()
    mean = std = float("nan")
    if eval_episodes > 0:  # 0: a throughput run
        eval_env = make_vec_env(env_id, env_type, 1, seed=123)
        mean, std = evaluate_policy(model, eval_env, eval_episodes, deterministic=True)
        eval_env.close()
    return {"library": "rlbase", "alg": alg, "env": env_id, "seed": seed,
            "timesteps": num_timesteps, "num_env": num_env, "wall_s": round(wall, 2),
            "sps": round(num_timesteps / wall), "eval_mean": round(mean, 2),
            "eval_std": round(std, 2), "settings": {k: repr(v) for k, v in kwargs.items()},
            "hardware": f"{platform.machine()} x{os.cpu_count()}",
            "versions": _versions()}


def _versions() -> dict[str, str]:
    import gymnasium
    import numpy
    import tensorflow

    import rlbase

    return {"rlbase": rlbase.__version__, "tensorflow": tensorflow.__version__,
            "gymnasium": gymnasium.__version__, "numpy": numpy.__version__,
            "python": platform.python_version()}


def run_peer(peer_python: str, anchors: str, alg: str, env_id: str, num_timesteps: int,
             num_env: int, seed: int) -> dict[str, Any]:
    """Run the peer's anchor script and parse its one-line result."""
    anchors = os.path.abspath(anchors)
    script = os.path.join(anchors, "sb3_bench.py")
    cmd = [peer_python, script, alg, env_id, str(num_timesteps), str(num_env), str(seed)]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=anchors, check=True).stdout
    line = out.strip().splitlines()[-1]
    fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
    return {"library": "peer", "line": line, "sps": float(fields["sps"]),
            "eval_mean": float(fields["eval"].split("+-")[0])}


def main(argv: list[str] | None = None) -> None:
    """``run`` and ``compare`` (see rlbase.bench)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    from rlbase.common.cmd_util import parse_unknown_args
    from rlbase.common.misc_util import import_tensorflow_quietly

    parser = argparse.ArgumentParser(prog="python -m rlbase.bench")
    parser.add_argument("command", choices=["run", "compare"])
    parser.add_argument("--alg", default="a2c")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--num_timesteps", type=float, default=5e4)
    parser.add_argument("--num_env", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=1, help="run seeds seed..seed+N-1")
    parser.add_argument("--eval_episodes", type=int, default=10)
    parser.add_argument("--peer_python", default="/tmp/sb3env/bin/python")
    parser.add_argument("--anchors", default=os.path.join("..", "shared", "anchors"))
    parser.add_argument("--normalize", action="store_true",
                        help="train on VecNormalize'd observations and rewards")
    parser.add_argument("--out", default=None, help="append JSON lines here")
    parser.add_argument("--monitor_dir", default=None,
                        help="write the training envs' monitor.csv here (learning curves)")
    args, unknown = parser.parse_known_args(argv)
    import_tensorflow_quietly()
    extra = parse_unknown_args(unknown)
    steps = int(args.num_timesteps)
    for seed in range(args.seed, args.seed + args.seeds):
        ours = train_and_evaluate(args.alg, args.env, steps, args.num_env, seed,
                                  args.eval_episodes, extra, args.normalize,
                                  monitor_dir=args.monitor_dir and os.path.join(
                                      args.monitor_dir, f"seed{seed}"))
        print(f"rlbase {args.alg} {args.env} steps={steps} n_envs={ours['num_env']} "
              f"seed={seed} time={ours['wall_s']}s sps={ours['sps']} "
              f"eval={ours['eval_mean']}+-{ours['eval_std']}", flush=True)
        records = [ours]
        if args.command == "compare":
            peer = run_peer(args.peer_python, args.anchors, args.alg, args.env, steps,
                            ours["num_env"], seed)
            print(peer["line"], flush=True)
            ratio = ours["sps"] / peer["sps"]
            print(f"ratio rlbase/peer steps/s = {ratio:.2f}; eval {ours['eval_mean']} vs "
                  f"{peer['eval_mean']}", flush=True)
            records.append(peer)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as f:
                for record in records:
                    f.write(json.dumps(record) + "\n")

