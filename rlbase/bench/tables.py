"""``python -m rlbase.bench tables [--check]``: every results table in the docs, written from
the committed result files (examples/bench_results/), never typed.

A table lives between ``<!-- table:NAME -->`` and ``<!-- /table -->`` in a Markdown page; this
command rewrites what is between the markers and nothing else. ``--check`` writes nothing and
exits 1 naming each block that differs (tests/test_generated_tables.py runs it). Every figure
is rounded once, from the value stored in the files, and each column names its statistic.

Blocks (NAME: what it is made from):

- ``mujoco-v5``, ``mujoco-v5-improvement``, ``mujoco-v5-aggregate``, ``mujoco-v5-anchors``,
  ``mujoco-v5-random``: examples/bench_results/mujoco-v5/ (runs/*/result.json, anchors.json,
  random_Humanoid-v5.json), with ``rlbase.bench.intervals``' estimates;
- ``her-fetchpush``: examples/bench_results/her/FetchPush-v4__sac_her__s0/progress.csv;
- ``precision-breakout``: examples/bench_results/precision-breakout/*/runs/.
"""

from __future__ import annotations

import argparse
import csv
import glob
import gzip
import json
import math
import os
import re
import statistics
import sys
from typing import Any, Callable

from rlbase.bench import intervals
from rlbase.common.errors import RLBaseError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "examples", "bench_results")
DOCS = tuple(os.path.join(ROOT, "rlbase", "docs", page) for page in
             ("benchmarks.md", "her.md", "precision.md"))
BLOCK = re.compile(r"(<!-- table:(?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /table -->)",
                   re.DOTALL)
MUJOCO_V5 = os.path.join(RESULTS, "mujoco-v5")
FETCHPUSH = os.path.join(RESULTS, "her", "FetchPush-v4__sac_her__s0", "progress.csv")
BREAKOUT = os.path.join(RESULTS, "precision-breakout")


def num(value: float, digits: int = 0) -> str:
    """``value`` rounded once to ``digits`` decimals, thousands separated: ``3,339``."""
    return "-" if not math.isfinite(value) else f"{value:,.{digits}f}"


def budget(steps: int) -> str:
    """``1000000`` -> ``1e6``; other counts with separators."""
    exponent = len(str(steps)) - 1
    lead = steps / 10**exponent
    return f"{lead:g}e{exponent}" if steps % 10**max(exponent - 1, 0) == 0 else f"{steps:,}"


def ci_text(point: float, ci: tuple[float, float] | None, digits: int = 0) -> str:
    if ci is None:
        return f"{num(point, digits)} (1 seed)"
    return f"{num(point, digits)} [{num(ci[0], digits)}, {num(ci[1], digits)}]"


# --- the MuJoCo-v5 runs --------------------------------------------------------------------


def load_runs(folder: str) -> list[dict[str, Any]]:
    """Every ``runs/*/result.json`` as a row (the names ``rlbase.bench.intervals`` reads),
    with what the run's folder holds beside it."""
    rows = []
    for path in sorted(glob.glob(os.path.join(folder, "runs", "*", "result.json"))):
        with open(path, encoding="utf-8") as f:
            rec = json.load(f)
        run_dir = os.path.dirname(path)
        rows.append({"name": rec["name"], "env": rec["env"], "seed": int(rec["seed"]),
                     "timesteps": int(rec["timesteps"]), "eval_return": rec["eval_mean"],
                     "train_return_last100": rec.get("train_return_last100", math.nan),
                     "wall_s": rec["wall_s"], "sps": rec["sps"],
                     "has_provenance": "provenance" in rec,
                     "has_precision": "precision" in rec,
                     "has_logs": bool(glob.glob(os.path.join(run_dir, "*monitor.csv.gz")))})
    return rows


ENV_ORDER = ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5")
ALG_ORDER = ("ppo", "a2c", "trpo")


def _order(entry: dict[str, Any]) -> tuple[int, int]:
    def index(seq: tuple[str, ...], item: str) -> int:
        return seq.index(item) if item in seq else len(seq)
    return index(ALG_ORDER, entry["name"]), index(ENV_ORDER, entry["env"])


def _seeds_text(seeds: list[int]) -> str:
    return ",".join(map(str, seeds))


def _markers(group: list[dict[str, Any]]) -> str:
    """The footnote letters of a setting's runs: what their files lack."""
    marks = []
    if not all(r["has_provenance"] for r in group):
        marks.append("a")
    if not all(r["has_logs"] for r in group):
        marks.append("b")
    missing = [r["seed"] for r in group if not r["has_precision"]]
    if missing:
        marks.append(f"c (seeds {_seeds_text(sorted(missing))})")
    return ", ".join(marks) or "-"


MARKER_NOTES = (
    "a: no provenance record (commit, time, command, machine, versions, counted steps): the run "
    "predates it; `hardware` says only the CPU family and core count.",
    "b: no monitor or progress file committed: per-episode figures (the last-100 column) "
    "cannot be recomputed from the repository.",
    "c: no `precision` key in result.json: these seeds ran on older code, before the key was "
    "written (they trained in float32, the only precision then).",
)


def mujoco_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| algorithm | env | seeds | evaluation per seed | evaluation IQM [95% CI] | "
             "evaluation mean [95% CI] | last-100 training per seed | last-100 IQM [95% CI] | "
             "last-100 mean [95% CI] | wall min per run: median over seeds (min-max) | "
             "steps/s: median over seeds | files |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    groups = intervals.group_by(rows, intervals.setting_key)
    for entry in sorted(intervals.per_setting(rows), key=_order):
        group = groups[(entry["name"], entry["env"], entry["timesteps"])]
        cells = [entry["name"], entry["env"], _seeds_text(entry["seeds"])]
        for key, _ in intervals.FIGURES:
            fig = entry[key]
            cells += ["; ".join(num(v) for v in fig["values"]),  # "," groups thousands
                      ci_text(fig["iqm"], fig["iqm_ci"]), ci_text(fig["mean"], fig["mean_ci"])]
        minutes = [r["wall_s"] / 60 for r in group]
        cells += [f"{num(statistics.median(minutes), 1)} ({num(min(minutes), 1)}-"
                  f"{num(max(minutes), 1)})", num(statistics.median(r["sps"] for r in group)),
                  _markers(group)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def mujoco_v5() -> str:
    rows = load_runs(MUJOCO_V5)
    n = len(rows)
    return (mujoco_table(rows) + "\n\n"
            f"{n} runs, each 1e6 requested env steps. Per seed: the run's own figure (evaluation: "
            "the mean return of 10 deterministic episodes on a fresh env; last-100: the mean "
            "return of its last 100 training episodes). IQM and mean are over the seeds, with "
            f"95% stratified bootstrap intervals ({intervals.REPS:,} resamples, seed "
            f"{intervals.SEED}). Wall time is the run's `learn()` call; steps/s is the requested "
            "steps over it (these runs did not count their steps). The machines differed "
            "between runs and most runs shared theirs with other jobs (see the text above): "
            "the time columns say how long, not how fast rlbase is.\n\n"
            + "\n".join(f"- {note}" for note in MARKER_NOTES) + "\n")


THREE_ENVS = ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5")


def mujoco_v5_improvement() -> str:
    rows = load_runs(MUJOCO_V5)
    three = [r for r in rows if r["env"] in THREE_ENVS]
    aggregate = {e["name"]: e["iqm_text"] for e in intervals.aggregates(three)}
    lines = [intervals.improvement_table(intervals.improvements(rows)), "",
             "The same on HalfCheetah-v5, Hopper-v5 and Walker2d-v5 alone (Ant-v5, where TRPO "
             "fails at these defaults, and Humanoid-v5, where none learns to walk, left out), "
             "with each algorithm's normalized IQM [95% CI] there:", "",
             intervals.improvement_table(intervals.improvements(three)), "",
             "; ".join(f"{name} {text}" for name, text in sorted(aggregate.items())) + ".", "",
             "P(X > Y): over the envs both ran, the chance that a seed of X evaluates above a "
             "seed of Y on the same env (ties one half), averaged over envs; 95% interval from "
             f"{intervals.IMPROVEMENT_REPS:,} resamples of each one's seeds."]
    return "\n".join(lines) + "\n"


def _random_humanoid() -> dict[str, Any]:
    with open(os.path.join(MUJOCO_V5, "random_Humanoid-v5.json"), encoding="utf-8") as f:
        return dict(json.load(f))


def check_normalization() -> None:
    """intervals.NORMALIZATION's Humanoid pair must be the committed files' figures."""
    low, high, _ = intervals.NORMALIZATION["Humanoid-v5"]
    random_mean = round(_random_humanoid()["mean"], 1)
    reference = round(_anchors()["normalization_reference"]["mean"], 1)
    if (low, high) != (random_mean, reference):
        raise RLBaseError(f"rlbase.bench.intervals.NORMALIZATION['Humanoid-v5'] is "
                          f"({low}, {high}); the committed files give ({random_mean}, "
                          f"{reference}): set it to them")


def mujoco_v5_aggregate() -> str:
    check_normalization()
    rows = load_runs(MUJOCO_V5)
    lines = ["| algorithm | timesteps | envs | seeds | normalized IQM [95% CI] | "
             "normalized mean [95% CI] |", "|---|---|---|---|---|---|"]
    for e in intervals.aggregates(rows):
        lines.append(f"| {e['name']} | {e['timesteps']:,} | {', '.join(e['envs'])} | "
                     f"{_seeds_text(e['seeds'])} | {e['iqm_text']} | {e['mean_text']} |")
    pairs = "; ".join(f"{env} {num(low, 1)} / {num(high, 1)}"
                      for env, (low, high, _) in intervals.NORMALIZATION.items())
    return ("\n".join(lines) + "\n\nNormalized score = (evaluation return - random) / "
            "(reference - random), per run; the IQM pools every run of every env, the mean is "
            "the mean of the envs' means; intervals resample seeds within each env "
            f"({intervals.REPS:,} resamples). Every env of the table is in: {pairs} "
            "(random / reference; HalfCheetah, Hopper, Walker2d and Ant: D4RL's pairs, measured "
            "on v2; Humanoid: the random policy below and rl-zoo3's SAC).\n")


def mujoco_v5_random() -> str:
    rec = _random_humanoid()
    ref = _anchors()["normalization_reference"]
    lengths = rec["lengths"]
    return (f"| env | policy | episodes | seeds | mean return | std over episodes | standard "
            f"error | mean episode length | file |\n|---|---|---|---|---|---|---|---|---|\n"
            f"| {rec['env']} | {rec['policy']} | {rec['episodes']:,} | reset seeds "
            f"{rec['seed']}-{rec['seed'] + rec['episodes'] - 1} | {num(rec['mean'], 1)} | "
            f"{num(rec['std'], 1)} | {num(rec['stderr'], 2)} | "
            f"{num(sum(lengths) / len(lengths), 1)} | "
            "`examples/bench_results/mujoco-v5/random_Humanoid-v5.json` (made by "
            "`python examples/bench_results/mujoco-v5/random_returns.py Humanoid-v5 "
            f"--episodes={rec['episodes']} --seed={rec['seed']}`) |\n\n"
            f"Humanoid's reference is {ref['source']}'s {num(ref['mean'])} "
            f"(± {num(ref['spread'])} over {ref['spread_over']}) on Humanoid-{ref['env_version']} "
            f"at {budget(ref['budget'])} steps, one agent: a figure of another env version and "
            "twice this table's budget, used only as the top of the scale.\n")


def _anchors() -> dict[str, Any]:
    with open(os.path.join(MUJOCO_V5, "anchors.json"), encoding="utf-8") as f:
        return dict(json.load(f))


def _verdict(anchor: dict[str, Any], point: float, ci: tuple[float, float]) -> str:
    """Where the published figure falls against rlbase's interval, its spread counted."""
    mean, spread = anchor["mean"], anchor["spread"]
    low, high = ci
    if low <= mean <= high:
        return "inside the interval: no significant difference"
    side = "above" if mean > high else "below"
    if anchor["spread_over"] == "seeds":
        if mean - spread <= high and mean + spread >= low:
            return (f"its mean is {side} the interval, but its seeds' mean ± std "
                    f"({num(mean - spread)} to {num(mean + spread)}) overlaps it: no clear "
                    f"difference with {anchor['runs']} seeds")
        return f"{side} the interval, its seeds' mean ± std included"
    return f"{side} the interval (one run: its ± is over evaluation episodes, not seeds)"


def mujoco_v5_anchors() -> str:
    settings = {(e["name"], e["env"]): e for e in intervals.per_setting(load_runs(MUJOCO_V5))}
    lines = ["| algorithm | env | published | env version | budget | runs | figure ± spread "
             "(over) | rlbase column | rlbase IQM [95% CI] | where the figure falls |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for a in _anchors()["anchors"]:
        entry = settings.get((a["alg"], a["env"]))
        if entry is None:
            continue
        fig = entry["eval_return" if a["column"] == "evaluation" else "train_return_last100"]
        lines.append(
            f"| {a['alg']} | {a['env']} | {a['source']} | {a['env_version']} | "
            f"{budget(a['budget'])} | {a['runs']} | {num(a['mean'])} ± {num(a['spread'])} "
            f"({a['spread_over']}) | {a['column']} | {ci_text(fig['iqm'], fig['iqm_ci'])} | "
            f"{_verdict(a, fig['iqm'], fig['iqm_ci'])} |")
    return ("\n".join(lines) + "\n\n" + _anchors()["about"] + " A figure measured over more "
            "steps than rlbase's budget (Humanoid's 2e6) or on another env version is context, "
            "not a like-for-like comparison.\n")


# --- HER: FetchPush ------------------------------------------------------------------------


def _read_progress(path: str) -> list[dict[str, str]]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return list(csv.DictReader(f))


CHECKPOINTS = (24_000, 100_000, 150_000, 200_000, 250_000, 300_000, 400_000)


def her_fetchpush(threshold: float = 0.97, late: int = 400_000) -> str:
    rows = [(int(float(r["time/total_timesteps"])), float(r["rollout/success_rate"]),
             float(r["time/time_elapsed"])) for r in _read_progress(FETCHPUSH)
            if r.get("rollout/success_rate")]
    at = []
    for mark in CHECKPOINTS:
        step, rate, _ = next(r for r in rows if r[0] >= mark)
        at.append(f"| {step:,} | {rate:.2f} |")
    tail = [r for r in rows if r[0] >= late]
    below = [r for r in tail if r[1] < threshold]
    low = min(tail, key=lambda r: r[1])
    end_step, end_rate, elapsed = rows[-1]
    below_text = (f"{len(below)} of them below {threshold:.2f}, between {below[0][0]:,} and "
                  f"{below[-1][0]:,} steps" if below else f"none below {threshold:.2f}")
    return ("| env steps (first logged point at or after) | training `rollout/success_rate` |\n"
            "|---|---|\n" + "\n".join(at) + "\n\n"
            f"From {late:,} steps to the end, {len(tail)} logged points: {below_text}; the "
            f"lowest {low[1]:.2f} at {low[0]:,} steps; {end_rate:.2f} at the end ({end_step:,} "
            f"steps). The loop ran {elapsed / 60:.0f} min ({end_step / elapsed:.0f} steps/s). "
            "`rollout/success_rate` is the success share of the last 100 finished episodes (of "
            "all of them before 100 had finished), logged every "
            f"{rows[1][0] - rows[0][0]:,} steps; from "
            "`examples/bench_results/her/FetchPush-v4__sac_her__s0/progress.csv`.\n")


# --- Precision: A2C on Breakout -------------------------------------------------------------

BREAKOUT_RUNS = (("float32", "A2C float32"), ("mixed_bfloat16", "A2C mixed_bfloat16"),
                 ("float32-after-thread-plan", "A2C float32 again, 2026-11-28, after the "
                                               "'convnet' thread plan and the fused RMSProp "
                                               "step (one run at a time)"))


def _monitor_games(run_dir: str) -> list[tuple[float, int]]:
    """(score, length) of every full game in the run's monitor file, in order."""
    (path,) = glob.glob(os.path.join(run_dir, "*monitor.csv*"))
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        f.readline()  # the #{json} header
        return [(float(r["r"]), int(r["l"])) for r in csv.DictReader(f)]


def second_half_mean(run_dir: str, timesteps: int) -> float:
    """The mean score of the games whose running sum of lengths ends past half the budget."""
    total, scores = 0, []
    for score, length in _monitor_games(run_dir):
        total += length
        if total > timesteps / 2:
            scores.append(score)
    return sum(scores) / len(scores)


def precision_breakout() -> str:
    lines = ["| run | seed 0: eval mean ± std / last-100 / 5e5-1e6 | seed 1 | seed 2 | wall s "
             "per run |", "|---|---|---|---|---|"]
    for folder, label in BREAKOUT_RUNS:
        cells, walls = [], []
        for seed in range(3):
            run_dir = os.path.join(BREAKOUT, folder, "runs",
                                   f"a2c__BreakoutNoFrameskip-v4__s{seed}")
            if not os.path.isdir(run_dir):
                cells.append("-")
                continue
            with open(os.path.join(run_dir, "result.json"), encoding="utf-8") as f:
                rec = json.load(f)
            cells.append(f"{rec['eval_mean']:.1f} ± {rec['eval_std']:.1f} / "
                         f"{rec['train_return_last100']:.1f} / "
                         f"{second_half_mean(run_dir, rec['timesteps']):.1f}")
            walls.append(f"{rec['wall_s']:.0f}")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {' / '.join(walls)} |")
    return ("\n".join(lines) + "\n\nEval: 3 deterministic full games after training, mean ± "
            "std over the games; last-100: the mean score of the last 100 full games of "
            "training; 5e5-1e6: the mean score of every game whose running sum of lengths ends "
            "past 5e5 steps; wall: the run's `learn()`. From each run's result.json and monitor "
            "file under `examples/bench_results/precision-breakout/`.\n")


GENERATORS: dict[str, Callable[[], str]] = {
    "mujoco-v5": mujoco_v5, "mujoco-v5-improvement": mujoco_v5_improvement,
    "mujoco-v5-aggregate": mujoco_v5_aggregate, "mujoco-v5-anchors": mujoco_v5_anchors,
    "mujoco-v5-random": mujoco_v5_random, "her-fetchpush": her_fetchpush,
    "precision-breakout": precision_breakout,
}


def rewrite(text: str, where: str = "the page") -> tuple[str, list[str]]:
    """``text`` with every block regenerated, and the names of the blocks that changed."""
    changed: list[str] = []
    made: dict[str, str] = {}

    def fill(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in GENERATORS:
            raise RLBaseError(f"{where}: unknown table block {name!r}; known: "
                              f"{', '.join(GENERATORS)}")
        body = made.setdefault(name, GENERATORS[name]())
        if body != match["body"]:
            changed.append(name)
        return match.group(1) + body + match.group(4)

    return BLOCK.sub(fill, text), changed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rlbase.bench tables",
                                     description="Write the docs' results tables from the "
                                                 "committed result files.")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a page's tables differ from the files")
    parser.add_argument("pages", nargs="*", default=list(DOCS),
                        help="Markdown pages (default: the docs pages with tables)")
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    stale = []
    for page in args.pages:
        with open(page, encoding="utf-8") as f:
            text = f.read()
        new, changed = rewrite(text, page)
        if not changed:
            continue
        stale += [f"{os.path.relpath(page, ROOT)}: {name}" for name in changed]
        if not args.check:
            with open(page + ".tmp", "w", encoding="utf-8") as f:
                f.write(new)
            os.replace(page + ".tmp", page)
    if args.check and stale:
        print("tables that differ from the committed files (run `python -m rlbase.bench "
              "tables`):\n  " + "\n  ".join(stale), file=sys.stderr)
        sys.exit(1)
    print(f"{'checked' if args.check else 'wrote'} {len(args.pages)} page(s); "
          f"{len(stale)} table(s) {'differ' if args.check else 'rewritten'}")
