"""rlbase.bench.provenance: the record every suite result.json carries, field by field."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest

import rlbase
from rlbase.bench import provenance
from rlbase.bench import suite as bench_suite

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9R14
flags\t\t: sse2 avx512f avx2 fpu
processor\t: 1
model name\t: AMD EPYC 9R14
flags\t\t: sse2 avx512f avx2 fpu
"""


def test_cpuinfo_and_meminfo_parsed_exactly() -> None:
    assert provenance.parse_cpuinfo(CPUINFO) == ("AMD EPYC 9R14",
                                                 ["avx2", "avx512f", "fpu", "sse2"])
    assert provenance.parse_cpuinfo("") == (None, [])
    assert provenance.parse_meminfo("MemFree: 5 kB\nMemTotal:       24684092 kB\n") == \
        24684092 * 1024
    assert provenance.parse_meminfo("") is None


def test_monitor_steps_counts_episode_lengths_plain_and_gzip(tmp_path) -> None:
    text = '#{"t_start": 1.0, "env_id": "CartPole-v1"}\nr,l,t\n10.0,10,0.1\n22.0,22,0.3\n'
    (tmp_path / "0.monitor.csv").write_text(text)
    with gzip.open(tmp_path / "1.monitor.csv.gz", "wt") as f:
        f.write(text.replace("10.0,10", "5.0,5"))
    assert provenance.monitor_steps(str(tmp_path)) == 10 + 22 + 5 + 22
    assert provenance.monitor_steps(str(tmp_path / "nothing")) is None


def test_compress_logs_writes_identical_gzip_copies(tmp_path) -> None:
    (tmp_path / "0.monitor.csv").write_text("#{}\nr,l,t\n1,1,0\n")
    (tmp_path / "progress.csv").write_text("a,b\n1,2\n")
    (tmp_path / "result.json").write_text("{}")
    written = provenance.compress_logs(str(tmp_path))
    assert sorted(os.path.basename(p) for p in written) == ["0.monitor.csv.gz",
                                                             "progress.csv.gz"]
    assert gzip.open(tmp_path / "progress.csv.gz", "rt").read() == "a,b\n1,2\n"
    first = (tmp_path / "progress.csv.gz").read_bytes()
    provenance.compress_logs(str(tmp_path))  # no time stamp inside: the same bytes again
    assert (tmp_path / "progress.csv.gz").read_bytes() == first
    assert (tmp_path / "progress.csv").exists()  # the plain file stays for the plots


def test_env_package_by_env_type() -> None:
    assert provenance.env_package("CartPole-v1") is None
    assert provenance.env_package("Hopper-v5") == "mujoco"
    assert provenance.env_package("PongNoFrameskip-v4") == "ale-py"
    assert provenance.versions("Hopper-v5")["mujoco"] == provenance.package_version("mujoco")


def test_finish_has_exactly_the_fields(monkeypatch) -> None:
    started = provenance.start()
    sum(i * i for i in range(200_000))  # some CPU time
    record = provenance.finish(started, steps_done=1234, env_id="CartPole-v1",
                               monitor_steps=1200, argv=["python", "-m", "x"])
    assert tuple(record) == provenance.FIELDS
    assert tuple(record["machine"]) == provenance.MACHINE_FIELDS
    assert record["steps_done"] == 1234 and record["monitor_steps"] == 1200
    assert record["argv"] == ["python", "-m", "x"]
    assert record["started_utc"] <= record["ended_utc"]
    assert record["started_utc"].endswith("Z") and len(record["started_utc"]) == 20
    assert record["wall_s"] >= 0 and record["cpu_s"] > 0
    assert record["peak_rss_mib_self"] > 10
    assert set(record["versions"]) == {"rlbase", "python", "tensorflow", "keras", "numpy",
                                       "gymnasium"}
    assert record["versions"]["rlbase"] == rlbase.__version__
    machine = record["machine"]
    assert machine["cores"] == os.cpu_count() and machine["memory_bytes"] > 2**28
    if os.path.exists("/proc/cpuinfo"):
        assert machine["cpu_model"] and machine["cpu_flags"] == sorted(machine["cpu_flags"])
    # Without argv: the command as typed.
    assert provenance.finish(started, None)["argv"] == list(sys.orig_argv)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_state_is_the_checkouts() -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(rlbase.__file__)))
    if not os.path.isdir(os.path.join(root, ".git")):
        pytest.skip("rlbase is not run from a git checkout")
    head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    commit, dirty = provenance.git_state()
    assert commit == head and isinstance(dirty, bool)
    assert provenance.git_state("/") == (None, None)


def test_suite_result_carries_provenance_and_compressed_logs(tmp_path) -> None:
    out = str(tmp_path)
    summary = bench_suite.run_suite("tiny", out, in_process=True, progress=False, plots=False,
                                    algs=["a2c"])
    assert summary["failed"] == {} and summary["ran"] == 1
    run_dir = os.path.join(out, "runs", "a2c__CartPole-v1__s0")
    with open(os.path.join(run_dir, "result.json"), encoding="utf-8") as f:
        result = json.load(f)
    record = result["provenance"]
    assert tuple(record) == provenance.FIELDS
    # Counted, not copied: the model's count, and the finished episodes' steps below it.
    assert result["steps_done"] == record["steps_done"] == 200
    assert 0 < record["monitor_steps"] <= 200
    assert record["monitor_steps"] == provenance.monitor_steps(run_dir) // 2  # plain + .gz
    with open(os.path.join(run_dir, "spec.json"), encoding="utf-8") as f:
        assert record["argv"] == json.load(f)["command"] == list(sys.orig_argv)
    for name in ("0.monitor.csv.gz", "progress.csv.gz"):
        assert os.path.getsize(os.path.join(run_dir, name)) > 20
    assert "time/total_timesteps" in gzip.open(os.path.join(run_dir, "progress.csv.gz"),
                                               "rt").readline()
