"""The benchmark suite's report: results.csv, results.md and learning-curve PNGs, with the
interval estimates of ``rlbase.bench.intervals`` (intervals.csv, profile.png).

Reads every ``runs/*/result.json`` under a suite folder (see ``rlbase.bench.suite``), so it
can be rebuilt at any time: ``python -m rlbase.bench report <folder>``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import glob
import json
import math
import os
import platform
import re
import sys
from typing import Any

import numpy as np

from rlbase.bench import intervals
from rlbase.common.errors import RLBaseError

VERSIONS = ("rlbase", "tensorflow", "gymnasium", "numpy", "python")
CSV_COLUMNS = ["name", "alg", "env", "seed", "timesteps", "eval_return", "eval_std",
               "train_return_last100", "wall_s", "sps", "num_env", *VERSIONS, "hardware", "cli"]
README_START = "<!-- bench-suite:start -->"
README_END = "<!-- bench-suite:end -->"

# Published figures to read the rows against (final return at the budget in brackets), from
# /work/shared/anchors/ANCHORS.md: rl-baselines3-zoo's benchmark, the TF1 rl-baselines-zoo,
# OpenAI Baselines' benchmark pages and the PPO, ACER and ES papers. "ARS": the nearest peer
# to ES. Atari figures are at 1e7 steps, ten times the atari-cpu preset's budget.
PUBLISHED: dict[tuple[str, str], str] = {
    ("a2c", "CartPole-v1"): "500 (5e5, rl-zoo3)",
    ("ppo", "CartPole-v1"): "500 (1e5, rl-zoo3)",
    ("dqn", "CartPole-v1"): "500 (5e4, rl-zoo3)",
    ("acer", "CartPole-v1"): "498.6 (5e5, TF1 rl-zoo)",
    ("es", "CartPole-v1"): "ARS 500 (5e4, rl-zoo3)",
    ("ddpg", "Pendulum-v1"): "-152 (2e4, rl-zoo3)",
    ("td3", "Pendulum-v1"): "-152 (2e4, rl-zoo3)",
    ("ppo", "Pendulum-v1"): "-172 (1e5, gSDE, rl-zoo3)",
    ("es", "Pendulum-v1"): "ARS -212 (2e6, rl-zoo3)",
    ("a2c", "PongNoFrameskip-v4"): "17.3 (1e7, rl-zoo3)",
    ("ppo", "PongNoFrameskip-v4"): "21.0 (1e7, rl-zoo3)",
    ("dqn", "PongNoFrameskip-v4"): "20.6 (1e7, rl-zoo3)",
    ("acer", "PongNoFrameskip-v4"): "20.7 (1e7, TF1 rl-zoo)",
    ("a2c", "BreakoutNoFrameskip-v4"): "279.8 (1e7, rl-zoo3); Baselines 59.7",
    ("ppo", "BreakoutNoFrameskip-v4"): "398.0 (1e7, rl-zoo3); Baselines ppo2 114.3",
    ("dqn", "BreakoutNoFrameskip-v4"): "358.3 (1e7, rl-zoo3)",
    ("acer", "BreakoutNoFrameskip-v4"): "456 (1e7, PPO paper); Baselines 82.9",
    # rl-baselines3-zoo's benchmark (MuJoCo v3 ids, deterministic evaluation of one agent,
    # per-env tuned settings: rlbase's rows run its mujoco() defaults), and CleanRL's
    # ppo_continuous_action (v4 ids, mean training episode return, 3 seeds, the PPO paper's
    # settings, close to rlbase's mujoco() defaults: compare its last-100 column).
    ("ppo", "HalfCheetah-v5"): "1,443 (1e6, CleanRL v4, 3 seeds); 5,819 (rl-zoo3 tuned)",
    ("ppo", "Hopper-v5"): "2,383 (1e6, CleanRL v4, 3 seeds)",
    ("ppo", "Humanoid-v5"): "716 (1e6, CleanRL v4, 3 seeds)",
    ("ppo", "Ant-v5"): "1,327 (1e6, rl-zoo3: SB3 defaults, normalized)",
    # rl-zoo3's A2C MuJoCo rows are SB3's A2C defaults with VecNormalize (1 env, 5 steps),
    # not rlbase's mujoco() defaults.
    ("a2c", "HalfCheetah-v5"): "3,041 (1e6, rl-zoo3: SB3 defaults, normalized)",
    ("a2c", "Hopper-v5"): "733 (1e6, rl-zoo3: SB3 defaults, normalized)",
    ("trpo", "HalfCheetah-v5"): "1,785 (1e6, rl-zoo3 tuned)",
    ("trpo", "Hopper-v5"): "3,618 (1e6, rl-zoo3 tuned)",
    ("trpo", "Walker2d-v5"): "4,933 (1e6, rl-zoo3 tuned)",
    ("trpo", "Ant-v5"): "4,982 (1e6, rl-zoo3 tuned)",
    ("td3", "HalfCheetah-v5"): "9,656 (1e6, rl-zoo3)",
    ("sac", "HalfCheetah-v5"): "9,535 (1e6, rl-zoo3)",
    ("td3", "Hopper-v5"): "3,606 (1e6, rl-zoo3)",
    ("sac", "Hopper-v5"): "2,326 (1e6, rl-zoo3)",
    ("ppo", "Walker2d-v5"): "2,288 (1e6, CleanRL v4, 3 seeds); 3,479 (rl-zoo3 tuned)",
    ("td3", "Walker2d-v5"): "4,718 (1e6, rl-zoo3)",
    ("sac", "Walker2d-v5"): "3,863 (1e6, rl-zoo3)",
    ("td3", "Ant-v5"): "5,813 (1e6, rl-zoo3)",
    ("sac", "Ant-v5"): "4,616 (1e6, rl-zoo3)",
    ("td3", "BipedalWalker-v3"): "306 (1e6, rl-zoo3)",
    ("sac", "BipedalWalker-v3"): "298 (5e5, rl-zoo3)",
    ("td3", "LunarLanderContinuous-v3"): "207 (3e5, rl-zoo3)",
    ("sac", "LunarLanderContinuous-v3"): "260 (5e5, rl-zoo3)",
    ("sac", "Pendulum-v1"): "-157 (2e4, rl-zoo3)",
}


def hardware() -> str:
    """The CPU model and core count (and that no GPU was used: TF here is the CPU build)."""
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        model = next((line.split(":", 1)[1].strip() for line in f
                      if line.startswith("model name")), model)
    return f"{model}, {os.cpu_count()} cores, no GPU"


def load_rows(out_dir: str) -> list[dict[str, Any]]:
    """One CSV row per finished run, sorted by name, env and seed."""
    rows = []
    for path in glob.glob(os.path.join(out_dir, "runs", "*", "result.json")):
        with open(path, encoding="utf-8") as f:
            rec = json.load(f)
        versions = rec.get("versions", {})
        row = {"name": rec["name"], "alg": rec["alg"], "env": rec["env"], "seed": rec["seed"],
               "timesteps": rec["timesteps"], "eval_return": rec["eval_mean"],
               "eval_std": rec["eval_std"],
               "train_return_last100": rec.get("train_return_last100", float("nan")),
               "wall_s": rec["wall_s"], "sps": rec["sps"], "num_env": rec.get("num_env", 1),
               "hardware": rec.get("hardware", ""), "cli": rec.get("cli", "")}
        row.update({k: versions.get(k, "") for k in VERSIONS})
        rows.append(row)
    return sorted(rows, key=lambda r: (r["env"], r["name"], r["timesteps"], r["seed"]))


def write_csv(rows: list[dict[str, Any]], path: str) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and population standard deviation over the finite values (NaN if none)."""
    finite = intervals.finite(values)
    if not finite:
        return float("nan"), float("nan")
    return float(np.mean(finite)), float(np.std(finite))


def fmt(mean: float, std: float | None = None, digits: int = 1) -> str:
    if not math.isfinite(mean):
        return "-"
    text = f"{mean:.{digits}f}"
    return text if std is None else f"{text} ± {std:.{digits}f}"


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (name, env, timesteps): the seeds' mean and std of each figure."""
    out = []
    for (name, env, steps), group in intervals.group_by(rows, intervals.setting_key).items():
        entry = {"name": name, "env": env, "timesteps": steps,
                 "seeds": sorted(int(r["seed"]) for r in group), "cli": group[0].get("cli")}
        for key in ("eval_return", "train_return_last100", "sps", "wall_s"):
            entry[key] = mean_std([r[key] for r in group])
        out.append(entry)
    return out


def markdown_table(summary: list[dict[str, Any]], command: str, digits: int = 1) -> str:
    """The results table; each row names the command that reproduces it."""
    lines = ["| algorithm | env | timesteps | seeds | eval return (mean ± std over seeds) | "
             "last-100 training return | steps/s | wall s | published | reproduce |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    # Each row's command names its own row: drop the suite's row filters, if any.
    base = " ".join(p for p in command.split() if not p.startswith(("--algs=", "--envs=")))
    for e in summary:
        seeds = ",".join(map(str, e["seeds"]))
        published = PUBLISHED.get((e["name"], e["env"]), "-")
        repro = f"`{cli_for_seeds(e['cli'], e['seeds'])}`" if e.get("cli") else \
            f"`{base} --algs={e['name']} --envs={e['env']}`"
        lines.append(f"| {e['name']} | {e['env']} | {e['timesteps']:,} | {seeds} | "
                     f"{fmt(e['eval_return'][0], e['eval_return'][1], digits)} | "
                     f"{fmt(e['train_return_last100'][0], e['train_return_last100'][1], digits)}"
                     f" | {fmt(e['sps'][0], e['sps'][1], 0)} | {fmt(e['wall_s'][0], None, 0)} | "
                     f"{published} | {repro} |")
    return "\n".join(lines)


def cli_for_seeds(cli: str, seeds: list[int]) -> str:
    """A run's CLI command for a row of several seeds: ``--seed=S`` stands for each."""
    return cli if len(seeds) == 1 else re.sub(r"--seed=\S+", "--seed=S", cli)


def header(rows: list[dict[str, Any]], preset: str, command: str) -> str:
    first = rows[0] if rows else {}
    versions = ", ".join(f"{k} {first.get(k, '?')}" for k in VERSIONS)
    return (f"Preset `{preset}`, generated by `{command}` on {first.get('hardware', '?')} "
            f"({versions}). Each row is what its `python -m rlbase.run` command hands back "
            "(the CLI's defaults for the env type plus the flags shown); its evaluation is what "
            "that command's `--play` prints (deterministic episodes on a fresh env); "
            "± is the standard deviation over seeds. Steps/s are only comparable between "
            "rows measured on the same machine.")


def write_plots(out_dir: str, rows: list[dict[str, Any]]) -> list[str]:
    """One PNG per env: each row's training episodes (faint) and the mean of its seeds'
    smoothed learning curves, shaded by their spread (plot_util.plot_results)."""
    # Optional: needs pandas (the plot extra).
    from rlbase.common.logs import curves
    from rlbase.common.logs.plot_util import algorithm_group_fn, load_results, save_plot

    written = []
    for env in sorted({r["env"] for r in rows}):
        results = [res for res in load_results(os.path.join(out_dir, "runs"),
                                               enable_progress=False)
                   if res.monitor is not None and len(res.monitor) > 1
                   and os.path.basename(res.dirname).split("__")[1] == env.replace("/", "-")]
        if not results:
            continue
        path = os.path.join(out_dir, f"curves_{env.replace('/', '-')}.png")
        save_plot(results, path, split_fn=None, group_fn=algorithm_group_fn,
                  average_group=True, resample=256, xlabel=curves.X_STEPS,
                  ylabel=f"training {curves.Y_RETURN}")
        written.append(path)
    return written


def write_report(out_dir: str, preset: str, plots: bool = True, readme: str | None = None,
                 command: str | None = None) -> dict[str, Any]:
    """Write results.csv, results.md (and PNGs); optionally put the table into a README."""
    command = command or f"python -m rlbase.bench suite --preset={preset}"
    rows = load_rows(out_dir)
    write_csv(rows, os.path.join(out_dir, "results.csv"))
    summary = summarize(rows)
    table = markdown_table(summary, command)
    pngs = write_plots(out_dir, rows) if plots and rows else []
    text = f"# Benchmark suite results\n\n{header(rows, preset, command)}\n\n{table}\n"
    if pngs:
        text += "\n" + "\n".join(f"![{os.path.basename(p)}]({os.path.basename(p)})"
                                 for p in pngs) + "\n"
    if rows:
        extra, written = intervals.markdown(rows, out_dir, plots=plots)
        text += "\n" + extra
        pngs += [p for p in written if p.endswith(".png")]
    with open(os.path.join(out_dir, "results.md"), "w", encoding="utf-8") as f:
        f.write(text)
    if readme:
        update_readme(readme, f"{header(rows, preset, command)}\n\n{table}")
    return {"rows": rows, "summary": summary, "pngs": pngs}


def update_readme(path: str, body: str) -> None:
    """Replace the text between the suite's markers in the README (nothing else changes)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if README_START not in text or README_END not in text:
        raise RLBaseError(f"{path} has no '{README_START}' ... '{README_END}' markers to "
                          "put the results between")
    pattern = re.escape(README_START) + r".*?" + re.escape(README_END)
    text = re.sub(pattern, lambda _: f"{README_START}\n{body}\n{README_END}", text,
                  flags=re.DOTALL)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> None:
    """``report [FOLDER]``: rebuild a suite folder's results.md, results.csv and plots."""
    parser = argparse.ArgumentParser(prog="python -m rlbase.bench report",
                                     description="Rebuild a suite folder's results.csv, "
                                                 "results.md and learning-curve PNGs.")
    parser.add_argument("folder", nargs="?", default="bench_results/classic",
                        help="the suite's --out folder (default: %(default)s)")
    parser.add_argument("--readme", default=None,
                        help="also put the table between this README's bench-suite markers")
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    if not os.path.isdir(os.path.join(args.folder, "runs")):
        raise RLBaseError(f"{args.folder!r} is not a benchmark suite folder (it has no runs/ "
                          "folder); pass the --out folder of `python -m rlbase.bench suite`")
    write_report(args.folder, os.path.basename(os.path.normpath(args.folder)),
                 readme=args.readme)
    print(f"wrote {args.folder}/results.md and results.csv")
