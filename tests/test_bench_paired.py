"""``python -m rlbase.bench paired``: two whole processes timed in turn, ratios by pair."""

import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest

from rlbase.bench.__main__ import main
from rlbase.bench.paired import paired
from rlbase.common.errors import RLBaseError

PY = shlex.quote(sys.executable)


def py(code: str) -> str:
    return f"{PY} -c {shlex.quote(code)}"


def test_runs_in_turn_after_the_warmup_and_times_each(tmp_path):
    order = tmp_path / "order"
    a = f"sh -c 'echo A >> {order}'"
    b = f"sh -c 'echo B >> {order}'"
    result = paired(a, b, runs=2, warmup=1)
    assert order.read_text().split() == ["A", "B"] * 3
    assert len(result["a_runs"]) == len(result["b_runs"]) == 2
    assert all(r["exit"] == 0 and r["wall_s"] > 0 for r in result["a_runs"] + result["b_runs"])
    assert len(result["pair_ratios"]) == 2


def test_ratio_is_the_wall_time_of_b_over_a_pair_by_pair():
    result = paired(py("import time; time.sleep(0.2)"), py("import time; time.sleep(0.8)"),
                    runs=2)
    for ratio, a, b in zip(result["pair_ratios"], result["a_runs"], result["b_runs"]):
        assert ratio == pytest.approx(b["wall_s"] / a["wall_s"], rel=1e-2)
        assert a["wall_s"] >= 0.2 and b["wall_s"] >= 0.8
    # 0.8 s against 0.2 s, each plus the same interpreter start-up (< 0.6 s here)
    assert 1.7 < result["speedup"] < 4.0
    assert result["a_wall_s_median"] < result["b_wall_s_median"]


def test_cpu_seconds_and_peak_memory_are_the_childs_own():
    busy = py("import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass")
    big = py("x = bytearray(300 * 2**20); x[::4096] = b'1' * len(x[::4096])")
    # A forked child's peak starts at its parent's size (pytest's here, with TF loaded): run
    # the command from a shell's own child, as a user does ("; true" keeps sh from exec'ing it).
    command = shlex.join([sys.executable, "-m", "rlbase.bench", "paired", "--runs=1", busy, big])
    proc = subprocess.run(["sh", "-c", f"{command}; true"], capture_output=True, text=True,
                          check=True)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["floor_mib"] < 200
    assert result["a_runs"][0]["cpu_s"] >= 0.4
    assert result["b_runs"][0]["peak_mib"] >= 300
    assert result["a_runs"][0]["peak_mib"] < 200


def test_failed_and_killed_runs_are_reported_and_left_out_of_the_ratios():
    result = paired(py("import sys; sys.exit(3)"), "sleep 30", runs=1, timeout=0.5)
    assert result["a_runs"][0]["exit"] == 3
    assert result["b_runs"][0]["exit"] is None and result["b_runs"][0]["wall_s"] < 10
    assert result["pair_ratios"] == [] and result["speedup"] is None


def test_cli_prints_one_json_line_and_fails_when_no_pair_finished(capsys):
    main(["paired", "--runs=1", "true", "true"])
    line = json.loads(capsys.readouterr().out.strip())
    assert line["a"] == line["b"] == "true" and line["speedup"] > 0
    with pytest.raises(RLBaseError, match="no pair finished with both commands exiting 0"):
        main(["paired", "--runs=1", "false", "true"])


def test_log_keeps_both_commands_output(tmp_path):
    log = tmp_path / "log"
    paired("echo from-a", "echo from-b", runs=1, log=str(log))
    assert log.read_text().split() == ["from-a", "from-b"]


@pytest.mark.parametrize("args, message", [
    (dict(runs=0), "runs must be at least 1, got 0"),
    (dict(warmup=-1), "warmup must be at least 0, got -1"),
    (dict(timeout=0.0), "timeout must be a positive number of seconds, got 0.0"),
])
def test_bad_counts_are_one_line_errors(args, message):
    with pytest.raises(RLBaseError, match=message):
        paired("true", "true", **args)


def test_bad_commands_are_one_line_errors():
    with pytest.raises(RLBaseError, match="command B is empty"):
        paired("true", "  ")
    with pytest.raises(RLBaseError, match="command A 'echo \"x' does not split into words"):
        paired('echo "x', "true")
    with pytest.raises(RLBaseError, match="cannot start 'no-such-program-here'"):
        paired("no-such-program-here", "true")


def test_exit_status_2_at_the_command_line():
    proc = subprocess.run([sys.executable, "-m", "rlbase.bench", "paired", "--runs=0", "true",
                           "true"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == \
        "rlbase.bench: error: runs must be at least 1, got 0"


def test_ctrl_c_ends_the_running_command_too(tmp_path):
    pidfile = tmp_path / "pid"
    a = f"sh -c 'echo $$ > {pidfile}; exec sleep 600'"  # ends by itself far past the wait
    # Ctrl-C as a terminal sends it: to a process that has SIGINT's default action (whatever
    # an earlier test in this worker left behind)
    proc = subprocess.Popen([sys.executable, "-m", "rlbase.bench", "paired", "--runs=1", a,
                             "true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 180  # a loaded machine: starting Python can take a while
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    child = int(pidfile.read_text())
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)  # generous for a loaded machine, far below the 600 s
    assert proc.returncode != 0
    with pytest.raises(ProcessLookupError):  # killed and reaped: no such process
        os.kill(child, 0)
