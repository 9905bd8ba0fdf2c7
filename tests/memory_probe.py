"""Peak and current memory of a long run, sampled every ``--every`` env steps.

``python tests/memory_probe.py --alg=dqn --num_timesteps=1e6 --every=1e5`` trains with the
CLI's classic-control defaults and prints one line per sample: steps, resident memory (RSS)
and the peak so far (VmHWM), in MiB. Flat RSS after the replay buffer is full means no leak.
"""

from __future__ import annotations

import argparse
import time


def memory_mib() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MiB, from /proc (Linux)."""
    values = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--alg", default="dqn")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--num_timesteps", type=float, default=1e6)
    parser.add_argument("--every", type=float, default=1e5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from rlbase.common.envs.make import make_vec_env
    from rlbase.common.logs import logger
    from rlbase.hyperparams import env_type_defaults
    from rlbase.registry import get_algorithm

    logger.configure(None, [])
    entry = get_algorithm(args.alg)
    kwargs = env_type_defaults(entry.name, "classic_control")
    num_env = kwargs.pop("num_env", 1)
    every, next_sample, start = int(args.every), 0, time.perf_counter()

    def sample(model, info) -> None:
        nonlocal next_sample
        if info["num_timesteps"] >= next_sample:
            rss, peak = memory_mib()
            print(f"steps {info['num_timesteps']:>8d}  rss {rss:7.1f} MiB  peak {peak:7.1f} MiB"
                  f"  elapsed {time.perf_counter() - start:6.0f} s", flush=True)
            next_sample += every

    env = make_vec_env(args.env, "classic_control", num_env, args.seed)
    entry.learn(env=env, seed=args.seed, total_timesteps=int(args.num_timesteps),
                callback=sample, log_interval=10**9, **kwargs)
    rss, peak = memory_mib()
    print(f"final rss {rss:.1f} MiB  peak {peak:.1f} MiB  "
          f"elapsed {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
