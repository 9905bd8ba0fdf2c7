"""Plot learning curves: mean and spread over seeds, from the monitor files runs write.

    python examples/plot_results.py --num_timesteps 50000 --out curves.png
    python examples/plot_results.py --logdir path/to/runs --out curves.png   # existing runs

Every run that writes a ``monitor.csv`` can be plotted: ``python -m rlbase.run
--log_path=DIR``, ``make_vec_env(..., monitor_dir=DIR)``, or the benchmark suite (which draws
its own curves). ``load_results`` finds every run folder under a root; ``plot_results`` (or
``save_plot``, which needs no display) groups them, here by the folder name without its
trailing seed (``a2c-0``, ``a2c-1`` -> ``a2c``).
"""

from __future__ import annotations

import argparse
import os
import tempfile

from rlbase.common.logs.plot_util import load_results, save_plot


def train_runs(root: str, steps: int, seeds: int) -> None:
    """A2C and PPO on CartPole, a few seeds each, each writing monitor.csv in its folder."""
    from rlbase.a2c.a2c import learn as a2c
    from rlbase.common.envs.make import make_vec_env
    from rlbase.ppo.ppo import learn as ppo

    for name, learn, kwargs in (("a2c", a2c, dict(lrschedule="constant")),
                                ("ppo", ppo, dict(nsteps=32, nminibatches=1, noptepochs=20,
                                                  gamma=0.98, lam=0.8, lr=1e-3))):
        for seed in range(seeds):
            env = make_vec_env("CartPole-v1", num_env=8, seed=seed,
                               monitor_dir=os.path.join(root, f"{name}-{seed}"))
            learn("mlp", env, seed=seed, total_timesteps=steps, log_interval=10**9, **kwargs)
            env.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--logdir", default=None, help="plot these runs instead of training")
    parser.add_argument("--num_timesteps", type=float, default=50_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default="curves.png")
    args = parser.parse_args(argv)

    root = args.logdir
    if root is None:
        root = tempfile.mkdtemp()
        train_runs(root, int(args.num_timesteps), args.seeds)
    results = load_results(root)
    # split_fn=None: every run in one panel (the default is a panel per folder name).
    # Axes labelled with units, each panel titled with its algorithms and env.
    save_plot(results, args.out, split_fn=None, average_group=True, resample=256)
    print(f"plotted {len(results)} runs from {root} to {args.out}")


if __name__ == "__main__":
    main()
