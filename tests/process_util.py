"""Running the CLI in a child process and killing it mid-training (kill-and-resume tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from rlbase.common.io.checkpoint import list_checkpoints

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
# Child processes can import the test helpers (fault_envs) as well as rlbase.
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": os.pathsep.join([ROOT, TESTS])}


def start_cli(args: list[str], log_path, env: dict[str, str] | None = None
              ) -> subprocess.Popen:
    """``python -m rlbase.run ARGS`` in the repository root, output to ``log_path``; ``env``
    adds to the child's environment."""
    with open(log_path, "w") as out:
        return subprocess.Popen([sys.executable, "-m", "rlbase.run", *args], stdout=out,
                                stderr=subprocess.STDOUT, env={**ENV, **(env or {})}, cwd=ROOT)


def kill_after_checkpoints(proc: subprocess.Popen, ckpt_dir, log_path, timeout: float,
                           count: int = 2) -> tuple[int, str]:
    """Wait for ``count`` checkpoints in ``ckpt_dir`` while ``proc`` keeps running, SIGKILL
    it, and return the newest checkpoint's (steps, path)."""
    try:
        end = time.monotonic() + timeout
        while len(list_checkpoints(str(ckpt_dir))) < count:
            assert time.monotonic() < end and proc.poll() is None, \
                open(log_path).read()[-3000:]
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    return list_checkpoints(str(ckpt_dir))[-1]


def two_worker_arrays(worker: str, out_dir, *args: str) -> tuple:
    """Run ``tests/<worker>`` under ``mpiexec -n 2`` (skipping without MPI) with ``out_dir`` and
    ``args``; returns the two ranks' dumps ``rank{r}_of_2.npy`` (numpy arrays)."""
    import importlib.util
    import shutil

    import numpy as np
    import pytest

    if importlib.util.find_spec("mpi4py") is None or shutil.which("mpiexec") is None:
        pytest.skip("mpi4py / mpiexec not installed (pip install -e .[mpi])")
    proc = subprocess.run(["mpiexec", "-n", "2", sys.executable, os.path.join(TESTS, worker),
                           str(out_dir), *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return tuple(np.load(os.path.join(str(out_dir), f"rank{r}_of_2.npy")) for r in (0, 1))


def cli_in_process(capsys, *args: str, command: str = "rlbase.run") -> tuple[int, str, str]:
    """``python -m COMMAND ARGS`` run in this process, for a mistake's error path (it stops
    before training): (exit status, stdout, stderr). The same ``run_cli`` wrapper prints the
    one line and exits 2; what a child process would add is ~7 s of importing TensorFlow (the
    real process's exit status is checked by one case per command)."""
    from rlbase.cli import main as rlbase_main
    from rlbase.run import main as run_main
    from rlbase.run import run_cli

    entry = {"rlbase.run": run_main, "rlbase.cli": rlbase_main}[command]
    capsys.readouterr()
    try:
        run_cli(lambda: entry(list(args)))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    else:
        raise AssertionError(f"{command} {' '.join(args)} succeeded; expected an error")
    out, err = capsys.readouterr()
    return code, out, err
