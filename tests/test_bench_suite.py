"""The benchmark suite: a tiny preset end to end, resume, report consistency, presets."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from rlbase.bench import report as bench_report
from rlbase.bench import suite as bench_suite
from rlbase.common.errors import RLBaseError


@pytest.fixture(scope="module")
def tiny_suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    out = str(tmp_path_factory.mktemp("suite"))
    summary = bench_suite.run_suite("tiny", out, in_process=True, progress=False)
    return out, summary


def test_tiny_suite_runs_end_to_end(tiny_suite: tuple[str, dict]) -> None:
    out, summary = tiny_suite
    assert summary["failed"] == {} and summary["unavailable"] == {}
    assert summary["ran"] == len(bench_suite.PRESETS["tiny"]) and summary["skipped"] == 0
    table = pd.read_csv(os.path.join(out, "results.csv"))
    assert list(table.columns) == bench_report.CSV_COLUMNS
    assert sorted(table["name"]) == ["a2c", "qlearning", "random"]
    assert (table["sps"] > 0).all() and (table["timesteps"] > 0).all()
    assert table["tensorflow"].notna().all() and table["hardware"].str.contains("cores").all()
    # Learning runs evaluate and have curves; the raw env row has steps/s only.
    learned = table[table["name"] != "random"]
    assert learned["eval_return"].notna().all()
    assert learned["train_return_last100"].notna().all()
    assert os.path.getsize(os.path.join(out, "curves_CartPole-v1.png")) > 1000
    assert os.path.getsize(os.path.join(out, "curves_FrozenLake-v1.png")) > 1000


def _markdown_rows(path: str) -> dict[tuple[str, str], list[str]]:
    """The rows of the first table (the mean ± std one)."""
    rows: dict[tuple[str, str], list[str]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("|") and cells[0] not in ("algorithm", "---"):
                rows[(cells[0], cells[1])] = cells
            elif rows and not line.startswith("|"):
                break
    return rows


def test_markdown_agrees_with_csv(tiny_suite: tuple[str, dict]) -> None:
    out, _ = tiny_suite
    table = pd.read_csv(os.path.join(out, "results.csv"))
    md = _markdown_rows(os.path.join(out, "results.md"))
    assert set(md) == set(zip(table["name"], table["env"]))
    for (name, env), group in table.groupby(["name", "env"]):
        cells = md[(name, env)]
        assert cells[2] == f"{int(group['timesteps'].iloc[0]):,}"
        assert cells[3] == ",".join(str(s) for s in sorted(group["seed"]))
        mean, std = bench_report.mean_std(list(group["eval_return"]))
        assert cells[4] == bench_report.fmt(mean, std)
        assert cells[6] == bench_report.fmt(*bench_report.mean_std(list(group["sps"])), 0)
        if name == "random":  # no training: the suite's own command
            assert f"--algs={name} --envs={env}" in cells[9]
        else:
            assert cells[9].startswith(f"`python -m rlbase.run --alg={group['alg'].iloc[0]} "
                                       f"--env={env} ")


def test_a_row_is_what_its_cli_command_hands_back(tiny_suite: tuple[str, dict]) -> None:
    # The README's promise: the row's command, run as a user copies it, prints the row's
    # evaluation (same settings, same seed, same evaluation episodes).
    out, _ = tiny_suite
    row = pd.read_csv(os.path.join(out, "results.csv")).set_index("name").loc["a2c"]
    args = row["cli"].split()[3:]  # after "python -m rlbase.run"
    assert "--num_env=2" in args and "--play_episodes=2" in args
    done = subprocess.run([sys.executable, "-m", "rlbase.run", *args, "--no_progress"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    played = re.search(r"mean return over 2 episodes: (\S+)", done.stdout)
    assert played is not None, done.stdout
    assert float(played.group(1)) == pytest.approx(row["eval_return"], abs=0.005)


def test_resume_skips_finished_runs(tiny_suite: tuple[str, dict]) -> None:
    out, _ = tiny_suite
    runs = os.path.join(out, "runs")
    mtimes = {d: os.path.getmtime(os.path.join(runs, d, "result.json"))
              for d in os.listdir(runs)}
    again = bench_suite.run_suite("tiny", out, in_process=True, progress=False, plots=False)
    assert again["ran"] == 0 and again["skipped"] == len(mtimes)
    assert mtimes == {d: os.path.getmtime(os.path.join(runs, d, "result.json")) for d in mtimes}
    # A run killed midway (no result.json, a stale monitor file) runs again from a clean folder.
    killed = bench_suite.PRESETS["tiny"][2].run_id(0)
    os.remove(os.path.join(runs, killed, "result.json"))
    with open(os.path.join(runs, killed, "stale.monitor.csv"), "w") as f:
        f.write("garbage")
    third = bench_suite.run_suite("tiny", out, in_process=True, progress=False, plots=False)
    assert third["ran"] == 1 and third["skipped"] == len(mtimes) - 1
    assert not os.path.exists(os.path.join(runs, killed, "stale.monitor.csv"))
    assert len(pd.read_csv(os.path.join(out, "results.csv"))) == len(mtimes)


def test_mean_std_and_format_exact() -> None:
    mean, std = bench_report.mean_std([1.0, 2.0, 3.0, float("nan")])
    assert mean == 2.0 and std == pytest.approx(math.sqrt(2 / 3), abs=1e-12)
    assert all(math.isnan(v) for v in bench_report.mean_std([float("nan")]))
    assert bench_report.fmt(2.0, 0.8165) == "2.0 ± 0.8"
    assert bench_report.fmt(float("nan"), 1.0) == "-"


def test_summary_groups_seeds() -> None:
    rows = [dict(name="ppo", env="E", timesteps=10, seed=s, eval_return=r, sps=100 * (s + 1),
                 train_return_last100=float("nan"), wall_s=1.0)
            for s, r in ((0, 10.0), (1, 20.0))]
    (entry,) = bench_report.summarize(rows)
    assert entry["seeds"] == [0, 1]
    assert entry["eval_return"] == (15.0, 5.0) and entry["sps"] == (150.0, 50.0)


def test_row_commands_name_only_their_row() -> None:
    rows = [dict(name="dqn", env="CartPole-v1", timesteps=10, seed=0, eval_return=1.0, sps=1.0,
                 train_return_last100=1.0, wall_s=1.0)]
    command = bench_suite.suite_command("classic", ["dqn"], ["CartPole-v1"], 1)
    table = bench_report.markdown_table(bench_report.summarize(rows), command)
    assert table.count("--algs=") == 1 and table.count("--envs=") == 1
    assert "`python -m rlbase.bench suite --preset=classic --seeds=1 --algs=dqn " \
           "--envs=CartPole-v1`" in table


def test_select_filters_and_rejects_bad_names() -> None:
    specs = bench_suite.select("classic", algs=["td3"], seeds=2)
    assert [(s.alg, s.env, s.seeds) for s in specs] == [("ddpg", "Pendulum-v1", (0, 1))]
    assert specs[0].extra["twin_q"] is True
    with pytest.raises(RLBaseError, match="unknown preset 'nope'; available: classic"):
        bench_suite.select("nope")
    with pytest.raises(RLBaseError, match="--algs value.*'classic'; valid: a2c, acer"):
        bench_suite.select("classic", algs=["trpo"])
    mujoco = bench_suite.select("mujoco", algs=["sac", "ppo"], envs=["HalfCheetah-v5"])
    assert [(s.name, s.env, s.timesteps) for s in mujoco] == [
        ("ppo", "HalfCheetah-v5", 1_000_000), ("sac", "HalfCheetah-v5", 1_000_000)]
    from rlbase.bench.report import PUBLISHED
    for spec in bench_suite.PRESETS["mujoco"] + bench_suite.PRESETS["box2d"]:
        if spec.name in ("td3", "sac"):  # every off-policy row names its published figure
            assert (spec.name, spec.env) in PUBLISHED, spec
    with pytest.raises(RLBaseError, match="--seeds must be at least 1, got 0"):
        bench_suite.select("classic", seeds=0)


def test_presets_cover_the_issue() -> None:
    classic = {(s.name, s.env) for s in bench_suite.PRESETS["classic"]}
    for name in ("a2c", "ppo", "dqn", "acer", "es"):
        assert (name, "CartPole-v1") in classic
    for name in ("ddpg", "td3", "ppo", "es"):
        assert (name, "Pendulum-v1") in classic
    assert {("qlearning", "Taxi-v4"), ("qlearning", "FrozenLake-v1")} <= classic
    atari = bench_suite.PRESETS["atari-cpu"]
    assert {(s.alg, s.env.split("No")[0]) for s in atari} == {
        (a, g) for a in ("a2c", "ppo", "acer", "dqn") for g in ("Pong", "Breakout")}
    assert all(s.timesteps == 1_000_000 for s in atari)
    throughput = bench_suite.PRESETS["throughput"]
    assert all(s.eval_episodes == 0 for s in throughput)
    assert {s.env for s in throughput if s.alg == "random"} == {s.env for s in throughput}
    # Every setting here runs: its algorithm has landed and its env exists.
    for spec in bench_suite.PRESETS["classic"] + throughput:
        assert bench_suite.available(spec) is None, spec


def test_update_readme_replaces_only_the_marked_block(tmp_path) -> None:
    path = tmp_path / "README.md"
    start, end = bench_report.README_START, bench_report.README_END
    path.write_text(f"# x\n## Results\nkept\n{start}\nold\n{end}\nafter\n")
    bench_report.update_readme(str(path), "new table")
    assert path.read_text() == f"# x\n## Results\nkept\n{start}\nnew table\n{end}\nafter\n"
    (tmp_path / "bare.md").write_text("no markers")
    with pytest.raises(RLBaseError, match="has no '<!-- bench-suite:start -->'"):
        bench_report.update_readme(str(tmp_path / "bare.md"), "x")


def test_cli_bad_preset_is_one_line_exit_2(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-m", "rlbase.bench", "suite", "--preset=nope",
                           f"--out={tmp_path}"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "rlbase.bench: error: unknown preset 'nope'; available: classic, atari-cpu, mujoco, "
        "mujoco-v5, minatar, box2d, throughput, tiny"]


def test_result_json_written_atomically(tiny_suite: tuple[str, dict]) -> None:
    out, _ = tiny_suite
    for run in os.listdir(os.path.join(out, "runs")):
        files = os.listdir(os.path.join(out, "runs", run))
        assert "result.json" in files and not any(f.endswith(".tmp") for f in files)
        with open(os.path.join(out, "runs", run, "result.json")) as f:
            record = json.load(f)
        assert re.fullmatch(r"\w+__[\w.-]+__s\d+", run) and record["seed"] == 0


def test_report_rebuilds_a_folder_and_refuses_another(tiny_suite: tuple[str, dict],
                                                      tmp_path) -> None:
    out, _ = tiny_suite
    os.remove(os.path.join(out, "results.md"))
    readme = tmp_path / "README.md"
    readme.write_text(f"{bench_report.README_START}\nold\n{bench_report.README_END}\n")
    bench_report.main([out, f"--readme={readme}"])
    assert os.path.isfile(os.path.join(out, "results.md"))
    assert "| a2c | CartPole-v1 |" in readme.read_text()
    proc = subprocess.run([sys.executable, "-m", "rlbase.bench", "report", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"rlbase.bench: error: '{tmp_path}' is not a benchmark suite folder (it has no runs/ "
        "folder); pass the --out folder of `python -m rlbase.bench suite`"]
