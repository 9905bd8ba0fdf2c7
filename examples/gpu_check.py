"""The GPU machine check, ready for when one is at hand: A2C and PPO on Pong at the Atari
defaults with 16 envs, TD3 and SAC on a MuJoCo-v5 env, each for a fixed wall-clock budget;
records env steps/s, the GPU's use while each ran, and what a 1e7-step Atari run would take,
beside CleanRL's published wall times.

    pip install -e ".[atari,mujoco]" "tensorflow[and-cuda]"
    python examples/gpu_check.py --seconds=180 --out=gpu_check        # about 13 minutes

Each run is the CLI's (``python -m rlbase.run``) with a huge step budget, stopped by SIGTERM
after ``--seconds`` (rlbase saves and exits with status 130); its steps/s is the last
``time/fps`` of its progress.csv (env steps over the run's wall time, start-up excluded), or
for TD3 and SAC the rate between the first and last logged rows with updates (their random
warm-up steps make no network call; a row marked "warm-up only" never got that far).
``nvidia-smi`` is sampled once a second while it runs (utilization and memory); without it
the GPU columns say so. Writes ``<out>/gpu_check.json`` and ``<out>/gpu_check.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

RUNS = [
    ("a2c", "PongNoFrameskip-v4", ["--num_env=16"]),
    ("ppo", "PongNoFrameskip-v4", ["--num_env=16"]),
    ("td3", "HalfCheetah-v5", []),
    ("sac", "HalfCheetah-v5", []),
]
# CleanRL's published wall time of a 1e7-step PPO Atari run (its benchmark docs).
CLEANRL_PPO_ATARI_1E7 = "264-285 min (ppo_atari, PyTorch); 34-53 min (ppo_atari_envpool_xla_jax)"


def sample_gpu(stop: threading.Event, samples: list[tuple[float, float]]) -> None:
    """(utilization %, memory MiB) of GPU 0 once a second until ``stop``."""
    while not stop.wait(1.0):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu,memory.used",
                                  "--format=csv,noheader,nounits", "--id=0"],
                                 capture_output=True, text=True, timeout=10).stdout
            util, mem = (float(v) for v in out.strip().split(","))
            samples.append((util, mem))
        except (OSError, ValueError, subprocess.SubprocessError):
            return


def training_speed(progress: str) -> tuple[int, float, bool]:
    """(env steps done, env steps/s while training, whether training had started): the
    steps/s between the first and last logged rows with updates (TD3's and SAC's random
    warm-up steps cost no network call), else the last row's ``time/fps``."""
    with open(progress, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return 0, 0.0, False
    steps = int(float(rows[-1]["time/total_timesteps"]))
    trained = [r for r in rows if float(r.get("train/n_updates") or 0) > 0]
    if len(trained) >= 2:
        first, last = trained[0], trained[-1]
        seconds = float(last["time/time_elapsed"]) - float(first["time/time_elapsed"])
        done = float(last["time/total_timesteps"]) - float(first["time/total_timesteps"])
        if seconds > 0:
            return steps, done / seconds, True
    return steps, float(rows[-1].get("time/fps") or 0), bool(trained)


def run_one(alg: str, env: str, extra: list[str], seconds: float, out: str) -> dict:
    log = os.path.join(out, f"{alg}_{env}")
    cmd = [sys.executable, "-m", "rlbase.run", f"--alg={alg}", f"--env={env}", "--seed=0",
           "--num_timesteps=1e12", f"--log_path={log}", "--no_progress", *extra]
    samples: list[tuple[float, float]] = []
    stop = threading.Event()
    sampler = threading.Thread(target=sample_gpu, args=(stop, samples), daemon=True)
    if shutil.which("nvidia-smi"):
        sampler.start()
    with open(os.path.join(out, f"{alg}_{env}.log"), "w") as stdout:
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.STDOUT)
        try:
            proc.wait(seconds)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            proc.wait(120)
    stop.set()
    progress = os.path.join(log, "progress.csv")
    steps, fps, trained = training_speed(progress) if os.path.exists(progress) else (0, 0.0,
                                                                                    False)
    result = {"alg": alg, "env": env, "args": extra, "returncode": proc.returncode,
              "steps": steps, "steps_per_s": fps, "training_started": trained,
              "gpu_samples": len(samples),
              "gpu_util_mean": sum(u for u, _ in samples) / len(samples) if samples else None,
              "gpu_util_max": max((u for u, _ in samples), default=None),
              "gpu_mem_max_mib": max((m for _, m in samples), default=None)}
    if "NoFrameskip" in env and fps > 0:
        result["minutes_for_1e7_steps"] = 1e7 / fps / 60
    return result


def markdown(results: list[dict], machine: str) -> str:
    lines = [f"# GPU check ({machine})", "",
             "| alg | env | steps | steps/s | GPU util mean / max (%) | GPU memory max (MiB) "
             "| 1e7 Atari steps (min) |", "|---|---|---|---|---|---|---|"]
    for r in results:
        util = ("no nvidia-smi" if r["gpu_util_mean"] is None
                else f"{r['gpu_util_mean']:.0f} / {r['gpu_util_max']:.0f}")
        mem = "-" if r["gpu_mem_max_mib"] is None else f"{r['gpu_mem_max_mib']:.0f}"
        minutes = r.get("minutes_for_1e7_steps")
        speed = f"{r['steps_per_s']:.0f}" + ("" if r["training_started"] else " (warm-up only)")
        lines.append(f"| {r['alg']} | {r['env']} {' '.join(r['args'])} | {r['steps']} | "
                     f"{speed} | {util} | {mem} | "
                     f"{'-' if minutes is None else f'{minutes:.0f}'} |")
    lines += ["", f"CleanRL, PPO on Atari for 1e7 steps: {CLEANRL_PPO_ATARI_1E7}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=180.0,
                        help="wall-clock budget of each run (default 180)")
    parser.add_argument("--out", default="gpu_check", help="folder for the logs and results")
    parser.add_argument("--only", nargs="*", help="run only these algorithms (a2c ppo td3 sac)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    smi = shutil.which("nvidia-smi")
    machine = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip() if smi else "no GPU"
    results = []
    for alg, env, extra in RUNS:
        if args.only and alg not in args.only:
            continue
        start = time.monotonic()
        results.append(run_one(alg, env, extra, args.seconds, args.out))
        print(f"{alg} {env}: {results[-1]['steps_per_s']:.0f} steps/s "
              f"({time.monotonic() - start:.0f} s)", flush=True)
    with open(os.path.join(args.out, "gpu_check.json"), "w") as f:
        json.dump({"machine": machine, "seconds": args.seconds, "results": results}, f,
                  indent=1)
    text = markdown(results, machine)
    with open(os.path.join(args.out, "gpu_check.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
