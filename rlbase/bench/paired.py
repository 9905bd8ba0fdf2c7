"""``python -m rlbase.bench paired [--runs=N] [--warmup=W] [--timeout=S] [--log=FILE] 'A' 'B'``:
two commands timed as whole processes in turn (A B A B ...), the ratio taken pair by pair.

This is how the README's speed table compares rlbase with the peer. A process is timed from
its start to its exit, start-up included, because that is what a user waits for. On a shared
machine whose speed drifts over minutes, the two runs of a pair see nearly the same machine,
so the median of the pairs' ratios moves less than a ratio of two separate medians would.

Each command is split as a shell splits words and run without a shell (write ``sh -c '...'``
for a pipe or a redirection), with empty input, in its own process group; its output is
discarded, or appended to ``--log``. Wall seconds come from a monotonic clock read around the
run; user + system CPU seconds and the peak resident memory from the operating system's
accounting of the reaped child (which includes the children it waited for). A child starts as
a copy of this process, so its peak cannot read below this process's own, printed as
``floor_mib``. One JSON line: every run's figures, the medians, ``pair_ratios`` (B's wall
over A's, per pair) and ``speedup``, their median: A ran ``speedup`` times as fast as B.
Pairs where either command failed or timed out are left out of the ratios (their exit codes
are in the line).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shlex
import signal
import statistics
import subprocess
import threading
import time
from typing import IO, Any

from rlbase.common.errors import RLBaseError


def run_once(argv: list[str], timeout: float | None, log: IO[bytes] | None
             ) -> dict[str, Any]:
    """One run of ``argv``: wall and CPU seconds, peak memory (MiB) and exit code (None when
    it was killed at ``timeout``)."""
    output = log if log is not None else subprocess.DEVNULL
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output,
                                stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as exc:
        raise RLBaseError(f"cannot start {shlex.join(argv)!r}: {exc.strerror}") from exc
    timed_out = threading.Event()

    def kill_group() -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    def time_out() -> None:
        timed_out.set()
        kill_group()

    timer = threading.Timer(timeout, time_out) if timeout else None
    if timer is not None:
        timer.start()
    try:
        # wait4, not Popen.wait: only the reaping call returns the child's resource usage.
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:
        # Ctrl-C or a signal here: the child's own session would outlive us; end it.
        kill_group()
        proc.wait()
        raise
    finally:
        if timer is not None:
            timer.cancel()
    wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"wall_s": round(wall, 3), "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
            "peak_mib": round(usage.ru_maxrss / 1024, 1),
            "exit": None if timed_out.is_set() else proc.returncode}


def paired(command_a: str, command_b: str, runs: int = 3, warmup: int = 0,
           timeout: float | None = None, log: str | None = None) -> dict[str, Any]:
    """``runs`` timed pairs (A then B) after ``warmup`` untimed ones; see the module doc."""
    if runs < 1:
        raise RLBaseError(f"runs must be at least 1, got {runs}")
    if warmup < 0:
        raise RLBaseError(f"warmup must be at least 0, got {warmup}")
    if timeout is not None and timeout <= 0:
        raise RLBaseError(f"timeout must be a positive number of seconds, got {timeout}")
    argvs = []
    for name, command in (("A", command_a), ("B", command_b)):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise RLBaseError(f"command {name} {command!r} does not split into words: "
                              f"{exc}") from exc
        if not argv:
            raise RLBaseError(f"command {name} is empty; give the command line to time")
        argvs.append(argv)
    result: dict[str, Any] = {"a": command_a, "b": command_b, "runs": runs,
                              "a_runs": [], "b_runs": []}
    with open(log, "ab") if log else contextlib.nullcontext() as out:
        for k in range(warmup + runs):
            pair = [run_once(argv, timeout, out) for argv in argvs]
            if k >= warmup:
                result["a_runs"].append(pair[0])
                result["b_runs"].append(pair[1])
    ratios = [b["wall_s"] / a["wall_s"] for a, b in zip(result["a_runs"], result["b_runs"])
              if a["exit"] == 0 and b["exit"] == 0]
    for side in ("a", "b"):
        for key in ("wall_s", "cpu_s", "peak_mib"):
            values = [r[key] for r in result[f"{side}_runs"] if r["exit"] == 0]
            result[f"{side}_{key}_median"] = round(statistics.median(values), 3) \
                if values else None
    result["floor_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    result["pair_ratios"] = [round(r, 3) for r in ratios]
    result["speedup"] = round(statistics.median(ratios), 3) if ratios else None
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m rlbase.bench paired",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("command_a", help="the command measured (e.g. rlbase's)")
    parser.add_argument("command_b", help="the yardstick (e.g. the peer's)")
    parser.add_argument("--runs", type=int, default=3, help="timed pairs")
    parser.add_argument("--warmup", type=int, default=0, help="untimed pairs first")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds after which a run is killed (its pair is left out)")
    parser.add_argument("--log", default=None, help="append both commands' output here")
    args = parser.parse_args(argv)
    result = paired(args.command_a, args.command_b, args.runs, args.warmup, args.timeout,
                    args.log)
    print(json.dumps(result))
    if result["speedup"] is None:
        raise RLBaseError("no pair finished with both commands exiting 0 (exit codes in the "
                          "line above)")
    return result
