"""The ``rlbase`` console command.

    rlbase train --alg=ppo --env=CartPole-v1 --num_timesteps=1e5     (= python -m rlbase.run)
    rlbase --alg=ppo --env=CartPole-v1 ...                            (train, as above)
    rlbase play --alg=ppo --env=CartPole-v1 --load_path=m.zip [--play_episodes=5]
    rlbase enjoy ...                                                  (= play)
    rlbase plot LOG_DIR [LOG_DIR ...] [--out=curves.png] [--y=rollout/success_rate]
    rlbase bench {run,compare,suite,report} ...                       (= python -m rlbase.bench)
    rlbase export --load_path=m.zip --format=saved_model|tflite|onnx --out=DIR [--quantize]
    rlbase tune --algo=ppo --env=CartPole-v1 --n-trials=20 [--storage=sqlite:///study.db]
    rlbase docs {build [--out=DIR],serve [--addr=HOST:PORT],config}  (= python -m rlbase.docs_site)
    rlbase train --algo=ppo --env=CartPole-v1 --optimize --n-trials=20          (= tune)
    rlbase --version
"""

from __future__ import annotations

import importlib
import sys

import rlbase
from rlbase.common.arg_types import OneLineParser
from rlbase.common.errors import RLBaseError
from rlbase.common.logs.media import plot_runs, save_plots
from rlbase.run import main as train_main
from rlbase.run import run_cli

USAGE = __doc__ or ""
# rl-baselines3-zoo's train.py flags that run a study instead of one training.
OPTIMIZE_FLAGS = ("--optimize", "-optimize", "--optimize-hyperparameters")
# Commands that are another module's main(argv), imported only when run.
MODULES = {"train": "rlbase.run", "bench": "rlbase.bench.__main__", "export": "rlbase.export.cli",
           "tune": "rlbase.tuning.cli", "docs": "rlbase.docs_site"}


def _plot(argv: list[str]) -> None:
    parser = OneLineParser(prog="rlbase plot",
                           description="Learning curves of log folders to a PNG.")
    parser.add_argument("log_dirs", nargs="+", help="folders with monitor.csv / progress.csv")
    parser.add_argument("--out", default=None, help="the PNG (default "
                                                    "<first log dir>/learning_curves.png)")
    parser.add_argument("--title", default=None)
    parser.add_argument("--y", default=None, metavar="KEY",
                        help="plot this progress.csv column against time/total_timesteps "
                             "(e.g. rollout/success_rate) instead of the episode returns")
    args = parser.parse_args(argv)
    # Optional: needs pandas (the plot extra).
    from rlbase.common.logs.plot_util import load_results, progress_xy_fn

    curve: dict = {} if args.y is None else {"xy_fn": progress_xy_fn(y_key=args.y)}
    if len(args.log_dirs) == 1:
        print(save_plots(args.log_dirs[0], args.out, title=args.title, **curve))
        return
    results = [r for d in args.log_dirs for r in load_results(d)]
    if not results:
        raise RLBaseError(f"no monitor.csv or progress.csv under {', '.join(args.log_dirs)}")
    # Runs compared: a panel per env, a curve per algorithm, its seeds averaged.
    print(plot_runs(results, args.out or "learning_curves.png", args.title, **curve))


def _play(argv: list[str]) -> None:
    if not any(a.startswith("--load_path") for a in argv):
        raise RLBaseError("rlbase play needs --load_path=MODEL.zip (and --env; the algorithm "
                          "is the file's)")
    train_main(["--num_timesteps=0", "--play", *argv])


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv else "--help"
    rest = argv[1:]
    if command in ("-h", "--help", "help"):
        print(USAGE.strip())
        return
    if command == "--version":
        print(f"rlbase {rlbase.__version__}")
        return
    if command.startswith("--"):  # flags only: train, as python -m rlbase.run does
        command, rest = "train", argv
    optimize = [a for a in rest if a in OPTIMIZE_FLAGS]
    if command == "train" and optimize:  # the zoo's spelling of a study: rlbase tune
        command, rest = "tune", [a for a in rest if a not in OPTIMIZE_FLAGS]
    if command in MODULES:
        importlib.import_module(MODULES[command]).main(rest)
    elif command in ("play", "enjoy"):
        _play(rest)
    elif command == "plot":
        _plot(rest)
    else:
        raise RLBaseError(f"unknown command {command!r}; use train, play (enjoy), plot, "
                          "bench, export, tune or docs (rlbase --help)")


def cli() -> None:
    """Entry point of the ``rlbase`` command: a user's mistake is one line, exit status 2."""
    run_cli(main)


if __name__ == "__main__":
    cli()
