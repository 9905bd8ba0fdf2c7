"""``python -m rlbase.bench COMMAND ...``: run, compare, suite, report, export-speed,
env-limit, overlap, paired, matmul-floor (see rlbase.bench)."""

from __future__ import annotations

import importlib
import sys

from rlbase.common.errors import RLBaseError

# Each command's module has ``main(argv)``; ``run`` and ``compare`` share rlbase.bench.run,
# which takes the command itself as its first argument.
MODULES = {"run": "run", "compare": "run", "suite": "suite", "report": "report",
           "export-speed": "export_speed", "env-limit": "env_limit", "overlap": "overlap",
           "paired": "paired", "matmul-floor": "matmul_floor", "tables": "tables"}


USAGE = f"""usage: rlbase bench COMMAND [--help] ...   (= python -m rlbase.bench)

commands: {", ".join(MODULES)}
  run            train one algorithm on one env and record its speed and return
  compare        run, then the peer library's script at the same settings: steps/s ratio
  suite          a preset's algorithms, envs and seeds (--num_timesteps: one budget for all)
  report         rebuild a suite folder's results.csv, results.md and plots
  paired         alternate two whole-process commands and compare their times
  (the others: export-speed, env-limit, overlap, matmul-floor; see rlbase/docs/benchmarks.md)
'rlbase bench COMMAND --help' lists a command's flags."""


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv else ""
    if command in ("-h", "--help", "help"):
        print(USAGE)
        return
    if command not in MODULES:
        raise RLBaseError(f"unknown benchmark command {command!r}; use one of "
                          f"{', '.join(MODULES)}")
    module = importlib.import_module(f"rlbase.bench.{MODULES[command]}")
    module.main(argv if MODULES[command] == "run" else argv[1:])


def cli() -> None:
    try:
        main()
    except RLBaseError as exc:
        print(f"rlbase.bench: error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    cli()
