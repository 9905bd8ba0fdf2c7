"""The suite report's interval sections (rlbase.bench.intervals) on hand-made rows, and the
mujoco-v5 preset's wiring at a tiny budget (its real runs are a benchmark, never a test)."""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np
import pandas as pd
import pytest

from rlbase.bench import intervals, stats
from rlbase.bench import suite as bench_suite


def _row(name: str, env: str, seed: int, ret: float, last: float = float("nan"),
         steps: int = 100) -> dict:
    return dict(name=name, alg=name, env=env, seed=seed, timesteps=steps, eval_return=ret,
                train_return_last100=last, wall_s=1.0, sps=1.0)


def test_interval_text_and_values() -> None:
    out = intervals.interval([10.0, 3.0, 7.0, 1.0, 100.0])
    assert out["n"] == 5 and out["iqm"] == pytest.approx(20 / 3) and out["mean"] == 24.2
    low, high = stats.stratified_bootstrap_ci(
        stats.as_scores([10.0, 3.0, 7.0, 1.0, 100.0]),
        lambda s: np.stack([stats.iqm(s), stats.mean(s)], axis=-1), intervals.REPS, seed=0)
    assert out["iqm_ci"] == (low[0], high[0]) and out["mean_ci"] == (low[1], high[1])
    assert out["iqm_text"] == f"6.7 [{low[0]:.1f}, {high[0]:.1f}]"
    # One seed has no interval; NaN (no training episodes) is left out; none at all: "-".
    one = intervals.interval([5.0, float("nan")])
    assert one["iqm_text"] == "5.0 (1 seed)" and one["iqm_ci"] is None and one["n"] == 1
    assert intervals.interval([float("nan")])["mean_text"] == "-"
    assert intervals.fmt_ci(0.51234, (0.4, 0.6), 5, 2) == "0.51 [0.40, 0.60]"


def test_setting_table_lists_every_seed() -> None:
    rows = [_row("ppo", "Hopper-v5", s, r, r + 1) for s, r in ((1, 20.0), (0, 10.0))]
    (entry,) = intervals.per_setting(rows)
    assert entry["seeds"] == [0, 1] and entry["eval_return"]["values"] == [10.0, 20.0]
    table = intervals.setting_table([entry]).splitlines()
    cells = [c.strip() for c in table[2].strip("|").split("|")]
    assert cells[:5] == ["ppo", "Hopper-v5", "100", "0,1", "10.0, 20.0"]
    assert cells[7] == "11.0, 21.0"
    assert cells[5].startswith("15.0 [") and cells[6].startswith("15.0 [")


def test_aggregates_normalize_and_use_common_seeds() -> None:
    low, high, _ = intervals.NORMALIZATION["Hopper-v5"]
    clow, chigh, _ = intervals.NORMALIZATION["HalfCheetah-v5"]
    rows = [_row("ppo", "Hopper-v5", 0, high), _row("ppo", "Hopper-v5", 1, low),
            _row("ppo", "Hopper-v5", 2, 99.0),  # no HalfCheetah seed 2: left out
            _row("ppo", "HalfCheetah-v5", 0, (clow + chigh) / 2),
            _row("ppo", "HalfCheetah-v5", 1, clow),
            _row("ppo", "Swimmer-v5", 0, 1.0)]  # no reference pair: not aggregated
    matrix, seeds = intervals.score_matrix(rows, "ppo", ["HalfCheetah-v5", "Hopper-v5"],
                                           "eval_return", normalize=True)
    assert seeds == [0, 1]
    np.testing.assert_allclose(matrix, [[0.5, 1.0], [0.0, 0.0]], atol=1e-12)
    (agg,) = intervals.aggregates(rows)
    assert agg["envs"] == ["HalfCheetah-v5", "Hopper-v5"] and agg["seeds"] == [0, 1]
    # IQM of 0, 0, 0.5, 1 is 0.25; the mean of the env means (0.25, 0.5) is 0.375.
    assert agg["iqm_text"].startswith("0.250 [") and agg["mean_text"].startswith("0.375 [")
    text, _ = intervals.markdown(rows)
    assert "Left out (no reference pair): Swimmer-v5." in text


def test_improvement_pairs_share_envs_and_budget() -> None:
    rows = [_row("a2c", "E", s, r) for s, r in enumerate((1.0, 2.0, 1.0, 2.0))]
    rows += [_row("ppo", "E", s, r) for s, r in enumerate((1.0, 2.0, 3.0))]
    rows += [_row("ppo", "F", 0, 5.0), _row("trpo", "F", 0, 5.0, steps=200)]
    (entry,) = intervals.improvements(rows)
    assert (entry["x"], entry["y"], entry["envs"], entry["runs"]) == ("a2c", "ppo", ["E"],
                                                                      (4, 3))
    # a2c's 1,2,1,2 against ppo's 1,2,3: 2 wins and 4 ties of 12 pairs.
    assert entry["p"] == pytest.approx(1 / 3)
    assert entry["ci"] == stats.improvement_ci(np.array([[1.0], [2.0], [1.0], [2.0]]),
                                               np.array([[1.0], [2.0], [3.0]]),
                                               intervals.IMPROVEMENT_REPS, seed=0)
    assert "| a2c | ppo | 100 | E | 4, 3 | 0.33 [" in intervals.improvement_table([entry])


def test_mujoco_v5_preset_is_the_issues_table() -> None:
    specs = bench_suite.PRESETS["mujoco-v5"]
    assert {(s.name, s.alg, s.env) for s in specs} == {
        (a, a, e) for a in ("ppo", "a2c", "trpo")
        for e in ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5")}
    assert all(s.timesteps == 1_000_000 and s.seeds == (0, 1, 2, 3, 4) and s.extra == {}
               for s in specs)
    assert sum(len(s.seeds) for s in specs) == 75
    for spec in specs:  # every row can run here: algorithm landed, env installed
        assert bench_suite.available(spec) is None, spec


def test_mujoco_v5_wiring_at_a_tiny_budget(tmp_path, monkeypatch) -> None:
    # The preset's TRPO Hopper row, cut to one 1024-step batch, two seeds, one evaluation
    # episode: the suite runs it through the CLI's mujoco() defaults and reports intervals.
    (spec,) = bench_suite.select("mujoco-v5", algs=["trpo"], envs=["Hopper-v5"])
    tiny = dataclasses.replace(spec, timesteps=1024, seeds=(0, 1), eval_episodes=1)
    monkeypatch.setitem(bench_suite.PRESETS, "mujoco-v5", [tiny])
    out = str(tmp_path)
    summary = bench_suite.run_suite("mujoco-v5", out, in_process=True, progress=False,
                                    plots=True)
    assert summary["failed"] == {} and summary["ran"] == 2
    table = pd.read_csv(os.path.join(out, "results.csv"))
    # The CLI's mujoco() defaults, no flag beyond them.
    assert list(table["cli"]) == [
        f"python -m rlbase.run --alg=trpo --env=Hopper-v5 --num_timesteps=1024 --seed={s} "
        "--num_env=1 --play --play_episodes=1" for s in (0, 1)]
    text = open(os.path.join(out, "results.md"), encoding="utf-8").read()
    (entry,) = intervals.per_setting(table.to_dict("records"))
    assert "| trpo | Hopper-v5 | 1,024 | 0,1 | " in text
    assert entry["eval_return"]["iqm_text"] in text
    assert "| trpo | 1,024 | Hopper-v5 | 0,1 | " in text  # the normalized aggregate
    assert os.path.getsize(os.path.join(out, "profile.png")) > 1000
    csv = pd.read_csv(os.path.join(out, "intervals.csv"))
    assert list(csv["figure"]) == ["eval_return", "train_return_last100"]
    assert math.isclose(csv["mean"].iloc[0], table["eval_return"].mean(), rel_tol=1e-5)


def test_compare_reports_both_libraries_with_intervals(monkeypatch, capsys) -> None:
    # `bench compare --seeds=3` with both trainings replaced by fixed evaluations.
    from rlbase.bench import run as bench_run
    from rlbase.common import misc_util

    ours = {0: 10.0, 1: 30.0, 2: 20.0}
    peers = {0: 15.0, 1: 25.0, 2: 20.0}
    monkeypatch.setattr(misc_util, "import_tensorflow_quietly", lambda: None)
    monkeypatch.setattr(bench_run, "train_and_evaluate", lambda *a, **k: dict(
        num_env=1, wall_s=1.0, sps=100, eval_mean=ours[a[4]], eval_std=0.0))
    monkeypatch.setattr(bench_run, "run_peer", lambda *a, **k: dict(
        line="peer line", sps=50.0, eval_mean=peers[a[6]]))
    bench_run.main(["compare", "--alg=ppo", "--env=CartPole-v1", "--seeds=3"])
    lines = capsys.readouterr().out.strip().splitlines()
    summary = bench_run.seed_summary([10.0, 30.0, 20.0], [15.0, 25.0, 20.0])
    assert lines[-3:] == summary
    ours_est, peer_est = intervals.interval([10.0, 30.0, 20.0]), intervals.interval(
        [15.0, 25.0, 20.0])
    assert summary[0] == f"rlbase eval over 3 seed(s): IQM {ours_est['iqm_text']}, " \
                         f"mean {ours_est['mean_text']}"
    assert summary[1].startswith("peer eval over 3 seed(s): IQM 20.0 [")
    assert peer_est["mean_text"] in summary[1]
    # 9 pairs: 10 loses 3; 20 beats 15, ties 20, loses 25; 30 wins 3 -> (1 + 0.5 + 3) / 9.
    assert summary[2].startswith("P(rlbase > peer) = 0.50 [")
    # `run` prints rlbase's line only.
    bench_run.main(["run", "--alg=ppo", "--env=CartPole-v1", "--seeds=2"])
    assert capsys.readouterr().out.strip().splitlines()[-1] == bench_run.seed_summary(
        [10.0, 30.0], None)[0]
