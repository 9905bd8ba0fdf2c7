"""The suite report's interval estimates (``rlbase.bench.stats`` over the finished runs):

- per setting: every seed's final return, the IQM and the mean with 95% stratified bootstrap
  confidence intervals, for the deterministic evaluation and the last-100 training episodes;
- per algorithm across envs: IQM and mean of normalized scores with their intervals, and a
  performance profile (PNG);
- per pair of algorithms on their common envs: the probability of improvement.

Every interval is seeded (``SEED``): rebuilding a report gives the same numbers.
"""

from __future__ import annotations

import csv
import math
import os
from collections import defaultdict
from typing import Any, Callable, Sequence

import numpy as np

from rlbase.bench import stats
from rlbase.common.logs import curves

SEED = 0
REPS = 50_000  # rliable's default for interval estimates
PROFILE_REPS = 2_000  # rliable's default for performance profiles
IMPROVEMENT_REPS = 2_000  # each resample loops in Python: 2,000 as rliable's examples use
FIGURES = (("eval_return", "evaluation"), ("train_return_last100", "last-100 training"))

# (random score, reference score, source) per env: normalized = (R - low) / (high - low).
# D4RL's REF_MIN_SCORE / REF_MAX_SCORE (a random policy and an expert SAC, measured on the v2
# envs; v5 changes the models slightly, so read these as a common scale, not as "% of expert").
# Envs without a pair here are left out of the across-env aggregates (not of the rest).
NORMALIZATION: dict[str, tuple[float, float, str]] = {
    "HalfCheetah-v5": (-280.178953, 12135.0, "D4RL"),
    "Hopper-v5": (-20.272305, 3234.3, "D4RL"),
    "Walker2d-v5": (1.629008, 4592.3, "D4RL"),
    "Ant-v5": (-325.6, 3879.7, "D4RL"),
    # D4RL has no Humanoid: the same kind of pair, a random policy's mean return (uniform
    # actions, 1,000 episodes, seed 0, measured on v5: examples/bench_results/mujoco-v5/
    # random_Humanoid-v5.json) and a SAC agent's (rl-zoo3's benchmark, Humanoid-v3, 2e6 steps);
    # `python -m rlbase.bench tables` checks both against the committed files.
    "Humanoid-v5": (115.5, 6232.3, "random policy, 1,000 episodes; rl-zoo3 SAC"),
}


def finite(values: Sequence[Any]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def group_by(rows: list[dict[str, Any]], key: Callable[[dict[str, Any]], Any]
             ) -> dict[Any, list[dict[str, Any]]]:
    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    return groups


def setting_key(row: dict[str, Any]) -> tuple[str, str, int]:
    return row["name"], row["env"], int(row["timesteps"])


def _iqm_mean_ci(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 95% intervals of the IQM (index 0) and of the mean (index 1)."""
    return stats.stratified_bootstrap_ci(
        scores, lambda s: np.stack([stats.iqm(s), stats.mean(s)], axis=-1), REPS, seed=SEED)


def interval(values: Sequence[float], digits: int = 1) -> dict[str, Any]:
    """IQM and mean of one setting's seeds with their 95% intervals, and the text of both."""
    finite_values = finite(values)
    if not finite_values:
        return {"n": 0, "iqm": float("nan"), "mean": float("nan"), "iqm_ci": None,
                "mean_ci": None, "iqm_text": "-", "mean_text": "-"}
    n = len(finite_values)
    scores = stats.as_scores(finite_values)
    out: dict[str, Any] = {"n": n, "iqm": float(stats.iqm(scores)),
                           "mean": float(stats.mean(scores)), "iqm_ci": None, "mean_ci": None}
    if n > 1:  # one seed has no interval (CSV: empty bounds)
        low, high = _iqm_mean_ci(scores)
        out.update(iqm_ci=(float(low[0]), float(high[0])),
                   mean_ci=(float(low[1]), float(high[1])))
    for key in ("iqm", "mean"):
        out[f"{key}_text"] = fmt_ci(out[key], out[f"{key}_ci"], n, digits)
    return out


def fmt_ci(point: float, ci: tuple[float, float] | None, n: int, digits: int = 1) -> str:
    """``12.3 [10.1, 14.0]``; with one seed there is no interval: ``12.3 (1 seed)``."""
    if not math.isfinite(point):
        return "-"
    if n < 2 or ci is None:
        return f"{point:.{digits}f} (1 seed)"
    return f"{point:.{digits}f} [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def per_setting(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (name, env, timesteps): each figure's per-seed values and intervals."""
    out = []
    groups = group_by(rows, setting_key).items()
    for (name, env, steps), group in sorted(groups, key=lambda kv: (kv[0][1], kv[0][0])):
        group = sorted(group, key=lambda r: int(r["seed"]))
        entry: dict[str, Any] = {"name": name, "env": env, "timesteps": steps,
                                 "seeds": [int(r["seed"]) for r in group]}
        for key, _ in FIGURES:
            entry[key] = {"values": [float(r[key]) for r in group],
                          **interval([r[key] for r in group])}
        out.append(entry)
    return out


def setting_table(entries: list[dict[str, Any]]) -> str:
    lines = ["| algorithm | env | timesteps | seeds | evaluation per seed | evaluation IQM "
             "[95% CI] | evaluation mean [95% CI] | last-100 training per seed | last-100 IQM "
             "[95% CI] | last-100 mean [95% CI] |", "|---|---|---|---|---|---|---|---|---|---|"]
    for e in entries:
        cells = [e["name"], e["env"], f"{e['timesteps']:,}", ",".join(map(str, e["seeds"]))]
        for key, _ in FIGURES:
            fig = e[key]
            per_seed = ", ".join("-" if not math.isfinite(v) else f"{v:.1f}"
                                 for v in fig["values"])
            cells += [per_seed, fig["iqm_text"], fig["mean_text"]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def score_matrix(rows: list[dict[str, Any]], name: str, envs: Sequence[str], key: str,
                 normalize: bool) -> tuple[np.ndarray, list[int]] | None:
    """``(runs, tasks)`` scores of row ``name`` on ``envs`` at the seeds every env has
    (finite ``key`` values only); normalized per NORMALIZATION when asked. None if no seed."""
    by_env: dict[str, dict[int, float]] = defaultdict(dict)
    for row in rows:
        value = float(row[key])
        if row["name"] == name and row["env"] in envs and math.isfinite(value):
            by_env[row["env"]][int(row["seed"])] = value
    seed_sets = [set(by_env[env]) for env in envs]
    seeds = sorted(set.intersection(*seed_sets)) if seed_sets else []
    if not seeds:
        return None
    matrix = np.array([[by_env[env][s] for env in envs] for s in seeds])
    if normalize:
        low = np.array([NORMALIZATION[env][0] for env in envs])
        high = np.array([NORMALIZATION[env][1] for env in envs])
        matrix = (matrix - low) / (high - low)
    return matrix, seeds


def _budget_rows(rows: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Rows by budget: aggregates and comparisons only mix runs of the same length."""
    return group_by(rows, lambda row: int(row["timesteps"]))


def aggregates(rows: list[dict[str, Any]], key: str = "eval_return") -> list[dict[str, Any]]:
    """Per (algorithm, budget) over its normalized envs: IQM and mean with 95% intervals."""
    out = []
    for steps, group in sorted(_budget_rows(rows).items()):
        for name in sorted({r["name"] for r in group}):
            envs = sorted({r["env"] for r in group if r["name"] == name} & set(NORMALIZATION))
            found = score_matrix(group, name, envs, key, normalize=True)
            if found is None:
                continue
            matrix, seeds = found
            low, high = _iqm_mean_ci(matrix)
            n, iqm, mean = len(seeds), float(stats.iqm(matrix)), float(stats.mean(matrix))
            out.append({"name": name, "timesteps": steps, "envs": envs, "seeds": seeds,
                        "matrix": matrix, "iqm_text": fmt_ci(iqm, (low[0], high[0]), n, 3),
                        "mean_text": fmt_ci(mean, (low[1], high[1]), n, 3)})
    return out


def aggregate_table(entries: list[dict[str, Any]]) -> str:
    lines = ["| algorithm | timesteps | envs | seeds | normalized IQM [95% CI] | "
             "normalized mean [95% CI] |", "|---|---|---|---|---|---|"]
    for e in entries:
        lines.append(f"| {e['name']} | {e['timesteps']:,} | {', '.join(e['envs'])} | "
                     f"{','.join(map(str, e['seeds']))} | {e['iqm_text']} | "
                     f"{e['mean_text']} |")
    return "\n".join(lines)


def improvements(rows: list[dict[str, Any]], key: str = "eval_return") -> list[dict[str, Any]]:
    """P(X > Y) with its 95% interval for every ordered pair of algorithms that share envs
    (raw returns: the comparison is within each env, so no normalization is needed)."""
    out = []
    for steps, group in sorted(_budget_rows(rows).items()):
        names = sorted({r["name"] for r in group})
        for i, x in enumerate(names):
            for y in names[i + 1:]:
                envs = sorted({r["env"] for r in group if r["name"] == x}
                              & {r["env"] for r in group if r["name"] == y})
                fx = score_matrix(group, x, envs, key, False)
                fy = score_matrix(group, y, envs, key, False)
                if fx is None or fy is None:
                    continue
                out.append(improvement_entry(x, y, fx[0], fy[0], envs, steps))
    return out


def improvement_entry(x: str, y: str, sx: np.ndarray, sy: np.ndarray, envs: list[str],
                      steps: int) -> dict[str, Any]:
    p = float(stats.probability_of_improvement(sx, sy))
    ci = stats.improvement_ci(sx, sy, IMPROVEMENT_REPS, seed=SEED)
    n = min(len(sx), len(sy)) if max(len(sx), len(sy)) > 1 else 1
    return {"x": x, "y": y, "timesteps": steps, "envs": envs, "runs": (len(sx), len(sy)),
            "p": p, "ci": ci, "text": fmt_ci(p, ci, n, 2)}


def improvement_table(entries: list[dict[str, Any]]) -> str:
    lines = ["| X | Y | timesteps | envs | runs X, Y | P(X > Y) [95% CI] |",
             "|---|---|---|---|---|---|"]
    for e in entries:
        lines.append(f"| {e['x']} | {e['y']} | {e['timesteps']:,} | {', '.join(e['envs'])} | "
                     f"{e['runs'][0]}, {e['runs'][1]} | {e['text']} |")
    return "\n".join(lines)


def write_profile_plot(entries: list[dict[str, Any]], path: str) -> str | None:
    """The performance profile of every aggregate row: the fraction of runs (all envs) whose
    normalized score is above tau, with its 95% band."""
    if not entries:
        return None
    top = max(1.0, max(float(e["matrix"].max()) for e in entries))
    taus = np.linspace(min(0.0, min(float(e["matrix"].min()) for e in entries)), top, 101)
    fig, axarr = curves.new_figure(figsize=(6, 4))
    ax = axarr[0, 0]
    for e in entries:
        profile = stats.performance_profile(e["matrix"], taus)
        low, high = stats.stratified_bootstrap_ci(
            e["matrix"], lambda s: stats.performance_profile(s, taus), PROFILE_REPS,
            seed=SEED)
        label = f"{e['name']} ({e['timesteps']:,} steps, {len(e['envs'])} envs, " \
                f"{len(e['seeds'])} seeds)"
        (line,) = ax.plot(taus, profile, label=label)
        ax.fill_between(taus, low, high, color=line.get_color(), alpha=0.2,
                        label=f"{e['name']} (95% stratified bootstrap interval)")
    ax.set_ylim(-0.02, 1.02)
    envs = sorted({env for e in entries for env in e["envs"]})
    curves.label_axes(ax, "normalized score tau (0: random, 1: the reference SAC agent)",
                      "fraction of runs (env x seed) with score > tau",
                      "performance profile: " + curves.run_title([e["name"] for e in entries],
                                                                 envs))
    return curves.save_figure(fig, path)


def write_intervals_csv(entries: list[dict[str, Any]], path: str) -> None:
    """One row per setting and figure: n, IQM, its interval, mean, its interval."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["name", "env", "timesteps", "figure", "seeds", "values", "iqm",
                         "iqm_low", "iqm_high", "mean", "mean_low", "mean_high"])
        for e in entries:
            for key, _ in FIGURES:
                fig = e[key]
                bounds = [f"{b:.6g}" if fig[ci] else "" for ci in ("iqm_ci", "mean_ci")
                          for b in (fig[ci] or (0.0, 0.0))]
                writer.writerow([e["name"], e["env"], e["timesteps"], key,
                                 " ".join(map(str, e["seeds"])),
                                 " ".join(f"{v:g}" for v in fig["values"]),
                                 f"{fig['iqm']:.6g}", *bounds[:2], f"{fig['mean']:.6g}",
                                 *bounds[2:]])


def markdown(rows: list[dict[str, Any]], out_dir: str | None = None,
             plots: bool = True) -> tuple[str, list[str]]:
    """The report's interval sections (and, with ``out_dir``, intervals.csv and
    profile.png): the text and the files written."""
    settings = per_setting(rows)
    written: list[str] = []
    if out_dir is not None:
        write_intervals_csv(settings, os.path.join(out_dir, "intervals.csv"))
        written.append(os.path.join(out_dir, "intervals.csv"))
    text = ("## Every seed, with interquartile means and 95% confidence intervals\n\n"
            "Each setting's final returns per seed; IQM (the mean of the middle half of the "
            "seeds, cutting whole seeds as scipy's trim_mean: 5 seeds keep the middle 3) and "
            f"mean, each with its 95% stratified bootstrap interval ({REPS:,} resamples of the "
            f"seeds, percentile method, seed {SEED}; `rlbase.bench.stats`, rliable's "
            "definitions).\n\n" + setting_table(settings) + "\n")
    agg = aggregates(rows)
    left_out = sorted({r["env"] for r in rows} - set(NORMALIZATION))
    if agg:
        text += ("\n## Across envs (evaluation return, normalized)\n\n"
                 "Normalized score = (return - random) / (reference - random), with "
                 + ", ".join(f"{env} ({lo}, {hi}, {src})"
                             for env, (lo, hi, src) in NORMALIZATION.items())
                 + "; the IQM is over all runs of all envs together, the mean is the mean of "
                 "the envs' means; intervals resample seeds within each env."
                 + (f" Left out (no reference pair): {', '.join(left_out)}." if left_out else "")
                 + "\n\n"
                 + aggregate_table(agg) + "\n")
        if plots and out_dir is not None:
            png = write_profile_plot(agg, os.path.join(out_dir, "profile.png"))
            if png:
                written.append(png)
                text += "\n![performance profile](profile.png)\n"
    imp = improvements(rows)
    if imp:
        text += ("\n## Probability of improvement (evaluation return)\n\n"
                 "P(X > Y): the chance that a run of X scores above a run of Y on the same env "
                 "(ties count one half), averaged over the envs both ran; 95% interval from "
                 f"{IMPROVEMENT_REPS:,} resamples of each one's seeds.\n\n"
                 + improvement_table(imp) + "\n")
    return text, written
