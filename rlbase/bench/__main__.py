"""``python -m rlbase.bench COMMAND ...``: run, compare, suite, report, export-speed,
env-limit, overlap, paired, matmul-floor (see rlbase.bench)."""

from __future__ import annotations

import sys

from rlbase.common.errors import RLBaseError

COMMANDS = ("run", "compare", "suite", "report", "export-speed", "env-limit", "overlap",
            "paired", "matmul-floor")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv else ""
    if command not in COMMANDS:
        raise RLBaseError(f"unknown benchmark command {command!r}; use one of "
                          f"{', '.join(COMMANDS)}")
    if command == "suite":
        from rlbase.bench.suite import main as suite_main

        suite_main(argv[1:])
    elif command == "export-speed":
        from rlbase.bench.export_speed import main as speed_main

        speed_main(argv[1:])
    elif command == "env-limit":
        from rlbase.bench.env_limit import main as limit_main

        limit_main(argv[1:])
    elif command == "overlap":
        from rlbase.bench.overlap import main as overlap_main

        overlap_main(argv[1:])
    elif command == "matmul-floor":
        from rlbase.bench.matmul_floor import main as floor_main

        floor_main(argv[1:])
    elif command == "paired":
        from rlbase.bench.paired import main as paired_main

        paired_main(argv[1:])
    elif command == "report":
        from rlbase.bench.report import main as report_main

        report_main(argv[1:])
    else:
        from rlbase.bench.run import main as run_main

        run_main(argv)


def cli() -> None:
    try:
        main()
    except RLBaseError as exc:
        print(f"rlbase.bench: error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    cli()
