"""Where a benchmark result came from: the code (git commit, dirty tree), the time, the command,
the machine, the library versions, and what the run really did (steps counted, wall and CPU
seconds, peak memory). ``rlbase.bench.suite`` puts :func:`finish`'s record into every
``result.json`` under ``provenance``, so a table built from the files can say which code on
which machine made each number.

    started = provenance.start()
    ...train...
    record = provenance.finish(started, steps_done=model.num_timesteps, env_id=env_id,
                               monitor_steps=provenance.monitor_steps(run_dir))
"""

from __future__ import annotations

import contextlib
import datetime
import glob
import gzip
import importlib.metadata
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import rlbase

# The record's keys, in order (tests/test_bench_provenance.py checks them exactly).
FIELDS = ("git_commit", "git_dirty", "started_utc", "ended_utc", "argv", "machine",
          "versions", "steps_done", "monitor_steps", "wall_s", "cpu_s", "peak_rss_mib_self",
          "peak_rss_mib_children")
MACHINE_FIELDS = ("cpu_model", "cpu_flags", "cores", "cores_usable", "memory_bytes",
                  "platform")
# The distribution whose simulator or emulator an env type runs on.
ENV_PACKAGES = {"mujoco": "mujoco", "atari": "ale-py", "minatar": "minatar",
                "box2d": "box2d", "robotics": "gymnasium-robotics"}
LIBRARIES = ("tensorflow", "keras", "numpy", "gymnasium")
# What a committed run keeps, compressed: the episodes and the logged rows.
KEPT_LOGS = ("*monitor.csv", "progress.csv")


@dataclass(frozen=True)
class Started:
    """What :func:`start` measured: the wall clock (UTC and a monotonic clock) and the CPU
    seconds of this process and its reaped children so far."""

    utc: str
    wall: float
    cpu: float


def utc_now() -> str:
    """The time now, UTC, ISO 8601 to the second: ``2026-11-29T01:52:00Z``."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its children that were waited for."""
    own, children = (resource.getrusage(who) for who in
                     (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def start() -> Started:
    return Started(utc=utc_now(), wall=time.perf_counter(), cpu=cpu_seconds())


def git_state(path: str | None = None) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the checkout holding ``path`` (default: rlbase's source): dirty when a
    tracked file differs from the commit (untracked files do not count). (None, None) when it
    is not a git checkout or git is missing (an installed wheel)."""
    where = path or os.path.dirname(os.path.abspath(rlbase.__file__))
    git = shutil.which("git")
    if git is None:
        return None, None
    try:
        commit = subprocess.run([git, "-C", where, "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=30, check=True).stdout.strip()
        status = subprocess.run([git, "-C", where, "status", "--porcelain",
                                 "--untracked-files=no"], capture_output=True, text=True,
                                timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit or None, bool(status.strip())


def parse_cpuinfo(text: str) -> tuple[str | None, list[str]]:
    """(model name, sorted flags) of the first processor in ``/proc/cpuinfo``'s text."""
    model: str | None = None
    flags: list[str] = []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model is None:
            model = value.strip()
        elif key in ("flags", "Features") and not flags:  # Features: ARM's name
            flags = sorted(value.split())
    return model, flags


def parse_meminfo(text: str) -> int | None:
    """MemTotal of ``/proc/meminfo``'s text, in bytes."""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            number, _, unit = line.split(":", 1)[1].strip().partition(" ")
            return int(number) * (1024 if unit.strip() == "kB" else 1)
    return None


def _read(path: str) -> str:
    with contextlib.suppress(OSError), open(path, encoding="utf-8") as f:
        return f.read()
    return ""


def machine() -> dict[str, Any]:
    """The CPU model and flags, the cores (all, and those this process may run on), the memory
    and the platform string."""
    model, flags = parse_cpuinfo(_read("/proc/cpuinfo"))
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"cpu_model": model or platform.processor() or platform.machine(),
            "cpu_flags": flags, "cores": os.cpu_count(), "cores_usable": usable,
            "memory_bytes": parse_meminfo(_read("/proc/meminfo")),
            "platform": platform.platform()}


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def env_package(env_id: str | None) -> str | None:
    """The distribution that simulates ``env_id`` (mujoco, ale-py, minatar, box2d,
    gymnasium-robotics), or None for gymnasium's own envs."""
    if not env_id:
        return None
    # Lazy: the env makers import gymnasium's registries, which a provenance record without an
    # env never needs.
    from rlbase.common.envs.make import ROBOTICS_PREFIXES, get_env_type, registered_id

    if registered_id(env_id).startswith(ROBOTICS_PREFIXES):
        return ENV_PACKAGES["robotics"]
    return ENV_PACKAGES.get(get_env_type(env_id))


def versions(env_id: str | None = None) -> dict[str, str | None]:
    """rlbase, Python, TensorFlow, Keras, numpy, gymnasium and the env's package (installed
    distributions' versions; None where one is missing)."""
    out: dict[str, str | None] = {"rlbase": rlbase.__version__,
                                  "python": platform.python_version()}
    out.update({name: package_version(name) for name in LIBRARIES})
    package = env_package(env_id)
    if package is not None:
        out[package] = package_version(package)
    return out


def monitor_steps(folder: str) -> int | None:
    """The env steps of every finished episode in the folder's monitor files (plain or
    gzip'd): a count from the run's own output, not from its settings. None when there is no
    monitor file."""
    paths = glob.glob(os.path.join(folder, "*monitor.csv")) + \
        glob.glob(os.path.join(folder, "*monitor.csv.gz"))
    if not paths:
        return None
    total = 0
    for path in paths:
        with (gzip.open(path, "rt", encoding="utf-8") if path.endswith(".gz")
              else open(path, encoding="utf-8")) as f:
            lines = [line for line in f if line.strip() and not line.startswith("#")]
        column = lines[0].strip().split(",").index("l") if lines else 0
        total += sum(int(float(line.split(",")[column])) for line in lines[1:])
    return total


def peak_rss_mib() -> tuple[float, float]:
    """Peak resident memory (MiB) of this process and of its largest waited-for child
    (``ru_maxrss``: KiB on Linux, bytes on macOS). A forked child counts the pages it shares
    with its parent, so the children's figure is at least the parent's size when it forked
    (a git call, a SubprocVecEnv worker): read the larger of the two as the run's peak."""
    unit = 1 if sys.platform == "darwin" else 1024
    own, children = (resource.getrusage(who) for who in
                     (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return (round(own.ru_maxrss * unit / 2**20, 1), round(children.ru_maxrss * unit / 2**20, 1))


def finish(started: Started, steps_done: int | None, env_id: str | None = None,
           monitor_steps: int | None = None, argv: list[str] | None = None) -> dict[str, Any]:
    """The provenance record of a run that began at ``started`` and ends now.

    steps_done: the env steps the run took, counted by the run (the model's
    ``num_timesteps``), which can exceed the budget asked for (a whole last batch).
    monitor_steps: the steps of its finished episodes, from its monitor files.
    argv: the command (default: this process's, as typed: ``sys.orig_argv``).
    """
    wall = time.perf_counter() - started.wall
    cpu = cpu_seconds() - started.cpu
    commit, dirty = git_state()
    own, children = peak_rss_mib()
    command = list(argv) if argv is not None else list(sys.orig_argv)
    record = {"git_commit": commit, "git_dirty": dirty, "started_utc": started.utc,
              "ended_utc": utc_now(), "argv": command, "machine": machine(),
              "versions": versions(env_id),
              "steps_done": None if steps_done is None else int(steps_done),
              "monitor_steps": monitor_steps, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
              "peak_rss_mib_self": own, "peak_rss_mib_children": children}
    return {key: record[key] for key in FIELDS}


def compress_logs(folder: str) -> list[str]:
    """gzip copies of the folder's monitor files and progress.csv (``x`` -> ``x.gz``, the same
    bytes every time: no time stamp inside): the form a committed run keeps them in (the plain
    files stay for the plots and are git-ignored under examples/bench_results/). Returns the
    files written."""
    written = []
    for pattern in KEPT_LOGS:
        for path in sorted(glob.glob(os.path.join(folder, pattern))):
            with open(path, "rb") as src, gzip.GzipFile(path + ".gz.tmp", "wb", mtime=0) as dst:
                shutil.copyfileobj(src, dst)
            os.replace(path + ".gz.tmp", path + ".gz")
            written.append(path + ".gz")
    return written
