"""The benchmark suite: every algorithm on its benchmark envs, seeds and budget, in one command.

    python -m rlbase.bench suite --preset=classic --jobs=2 --out=bench_results/classic
    python -m rlbase.bench suite --preset=atari-cpu --jobs=1
    python -m rlbase.bench suite --preset=throughput
    python -m rlbase.bench suite --preset=mujoco-v5 --algs=ppo --envs=Hopper-v5
    python -m rlbase.bench suite --preset=classic --algs=ppo,dqn --seeds=2 --readme=README.md
    python -m rlbase.bench suite --preset=classic --algs=td3,sac --precision=mixed_bfloat16

Each run trains in its own process (``--jobs`` at a time) through ``rlbase.bench``'s
``train_and_evaluate`` (the env-type row of ``rlbase/hyperparams/<alg>.yml`` merged with
``PEER_SETTINGS``), writes its monitor.csv and, when it finishes, ``result.json`` into
``<out>/runs/<name>__<env>__s<seed>``. A run whose ``result.json`` exists is skipped, so an
interrupted suite resumes where it stopped. Then ``rlbase.bench.report`` writes results.csv,
results.md and learning-curve PNGs into ``<out>``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from tqdm import tqdm

from rlbase.bench import provenance
from rlbase.bench import report as bench_report
from rlbase.bench.report import hardware
from rlbase.bench.run import _versions, train_and_evaluate
from rlbase.common.arg_types import path_arg, timesteps_arg
from rlbase.common.envs.make import check_env_id, make_env
from rlbase.common.errors import RLBaseError
from rlbase.common.logs import logger
from rlbase.common.misc_util import import_tensorflow_quietly
from rlbase.common.precision import FLOAT32, PRECISIONS
from rlbase.registry import available_algorithms, config_class

RAW = "random"  # the name of raw env steps/s rows (random actions, no learning)


@dataclass(frozen=True)
class RunSpec:
    """One benchmark setting; it runs once per seed.

    :param name: the row's name (``td3`` is ``alg="ddpg"`` with TD3's options).
    :param alg: the rlbase algorithm package, or ``random`` for raw env steps/s.
    :param timesteps: the training budget in env steps.
    :param eval_episodes: deterministic evaluation episodes after training (0: none).
    :param extra: ``learn()`` arguments over the defaults and PEER_SETTINGS.
    """

    name: str
    alg: str
    env: str
    timesteps: int
    seeds: tuple[int, ...] = (0, 1, 2)
    eval_episodes: int = 10
    extra: dict[str, Any] = field(default_factory=dict)

    def run_id(self, seed: int) -> str:
        return f"{self.name}__{self.env.replace('/', '-')}__s{seed}"


# TD3 = DDPG with twin critics, delayed actor updates and target policy smoothing.
TD3 = dict(twin_q=True, policy_delay=2, target_noise=0.2)
# ES on Pendulum: the linear classic_control policy is tuned for CartPole; this small ReLU
# network is the setting measured to reach -250 by 2e6 steps (rlbase/hyperparams/es.yml).
ES_PENDULUM = dict(network="mlp", num_layers=1, num_hidden=16, activation="relu", popsize=16,
                   noise_stdev=0.1, lr=0.05, paired_starts=True)
_ATARI = ("PongNoFrameskip-v4", "BreakoutNoFrameskip-v4")
_MUJOCO = ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5")
_MUJOCO_V5 = (*_MUJOCO, "Humanoid-v5")
_MINATAR = tuple(f"MinAtar/{game}-v1" for game in
                 ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders"))
# The budgets of the settings' sources: gymnax-blines' PPO 1e7 steps; the MinAtar paper's DQN
# and actor-critic 5e6 frames (one MinAtar frame is one env step: no frame skip).
MINATAR_BUDGETS = {"ppo": 10_000_000, "a2c": 5_000_000, "dqn": 5_000_000, "pqn": 10_000_000}
# rl-baselines3-zoo sac.yml LunarLanderContinuous: its row differs from BipedalWalker's, which
# SAC's box2d() defaults carry.
SAC_LUNAR = dict(lr=7.3e-4, buffer_size=1_000_000, gamma=0.99, tau=0.01, train_freq=1,
                 gradient_steps=1, layer_sizes=(400, 300))

PRESETS: dict[str, list[RunSpec]] = {
    "classic": [
        RunSpec("a2c", "a2c", "CartPole-v1", 200_000),
        RunSpec("ppo", "ppo", "CartPole-v1", 100_000),
        RunSpec("dqn", "dqn", "CartPole-v1", 50_000),
        RunSpec("acer", "acer", "CartPole-v1", 100_000),
        RunSpec("es", "es", "CartPole-v1", 50_000),
        RunSpec("ddpg", "ddpg", "Pendulum-v1", 20_000),
        RunSpec("td3", "ddpg", "Pendulum-v1", 20_000, extra=TD3),
        RunSpec("sac", "sac", "Pendulum-v1", 20_000),
        RunSpec("ppo", "ppo", "Pendulum-v1", 300_000),
        RunSpec("es", "es", "Pendulum-v1", 2_000_000, extra=ES_PENDULUM),
        # gymnasium 1.x has no Taxi-v3: Taxi-v4 is the same task.
        RunSpec("qlearning", "qlearning", "Taxi-v4", 100_000, eval_episodes=100),
        RunSpec("qlearning", "qlearning", "FrozenLake-v1", 100_000, eval_episodes=100),
    ],
    "atari-cpu": [RunSpec(alg, alg, env, 1_000_000, seeds=(0,), eval_episodes=3)
                  for env in _ATARI for alg in ("a2c", "ppo", "acer", "dqn")],
    # The references' MuJoCo budgets (1e6 steps each, seed 0) at each algorithm's mujoco()
    # defaults: over an hour per off-policy run on 2 cores; select rows with --algs/--envs.
    "mujoco": [RunSpec(name, "ddpg" if name == "td3" else name, env, 1_000_000, seeds=(0,),
                       extra=TD3 if name == "td3" else {})
               for env in _MUJOCO for name in ("ppo", "td3", "ddpg", "sac", "a2c")],
    # The first MuJoCo-v5 table (issue 32): the on-policy algorithms at the CLI's mujoco()
    # defaults, 1e6 steps, 5 seeds, so every row has an IQM and a confidence interval.
    # 75 runs of 10-40 min each on 2 shared cores: run it in parts (--algs/--envs/--seeds),
    # rerunning the same command resumes.
    "mujoco-v5": [RunSpec(name, name, env, 1_000_000, seeds=(0, 1, 2, 3, 4))
                  for name in ("ppo", "a2c", "trpo") for env in _MUJOCO_V5],
    # MinAtar (issue 48): PPO, A2C, DQN and PQN at their env-type rows' settings (the minatar
    # rows of rlbase/hyperparams/<alg>.yml, each citing its source) and those sources'
    # budgets, 5 seeds, 10 evaluation episodes. 100 runs; run a row at a time, as mujoco-v5.
    "minatar": [RunSpec(name, name, env, MINATAR_BUDGETS[name], seeds=(0, 1, 2, 3, 4))
                for name in ("ppo", "a2c", "dqn", "pqn") for env in _MINATAR],
    # Box2D continuous control at the rl-zoo budgets (seed 0).
    "box2d": [
        RunSpec("sac", "sac", "BipedalWalker-v3", 500_000, seeds=(0,)),
        RunSpec("td3", "ddpg", "BipedalWalker-v3", 1_000_000, seeds=(0,), extra=TD3),
        RunSpec("sac", "sac", "LunarLanderContinuous-v3", 500_000, seeds=(0,),
                extra=SAC_LUNAR),
        RunSpec("td3", "ddpg", "LunarLanderContinuous-v3", 300_000, seeds=(0,), extra=TD3),
    ],
    # Steps/s at fixed, short settings (no evaluation), with raw env steps/s beside them.
    "throughput": [
        *(RunSpec(alg, alg, "CartPole-v1", 50_000, seeds=(0,), eval_episodes=0)
          for alg in ("a2c", "ppo", "dqn", "acer", "es")),
        RunSpec("ddpg", "ddpg", "Pendulum-v1", 5_000, seeds=(0,), eval_episodes=0,
                extra=dict(learning_starts=1000)),
        RunSpec("td3", "ddpg", "Pendulum-v1", 5_000, seeds=(0,), eval_episodes=0,
                extra=dict(TD3, learning_starts=1000)),
        RunSpec("ppo", "ppo", "Pendulum-v1", 50_000, seeds=(0,), eval_episodes=0),
        RunSpec("qlearning", "qlearning", "Taxi-v4", 100_000, seeds=(0,), eval_episodes=0),
        *(RunSpec(RAW, RAW, env, 100_000, seeds=(0,), eval_episodes=0)
          for env in ("CartPole-v1", "Pendulum-v1", "Taxi-v4")),
    ],
    # For tests: seconds, one seed.
    "tiny": [
        RunSpec("a2c", "a2c", "CartPole-v1", 200, seeds=(0,), eval_episodes=2,
                extra=dict(num_env=2)),
        RunSpec("qlearning", "qlearning", "FrozenLake-v1", 500, seeds=(0,), eval_episodes=5),
        RunSpec(RAW, RAW, "CartPole-v1", 500, seeds=(0,), eval_episodes=0),
    ],
}


def select(preset: str, algs: list[str] | None = None, envs: list[str] | None = None,
           seeds: int | None = None) -> list[RunSpec]:
    """The preset's settings, filtered by row name and env, with ``seeds`` seeds if given."""
    if preset not in PRESETS:
        raise RLBaseError(f"unknown preset '{preset}'; available: {', '.join(PRESETS)}")
    specs = PRESETS[preset]
    for label, wanted, have in (("--algs", algs, {s.name for s in specs}),
                                ("--envs", envs, {s.env for s in specs})):
        bad = sorted(set(wanted or []) - have)
        if bad:
            raise RLBaseError(f"{label} value(s) {', '.join(bad)} not in preset '{preset}'; "
                              f"valid: {', '.join(sorted(have))}")
    specs = [s for s in specs if (not algs or s.name in algs) and (not envs or s.env in envs)]
    if seeds is not None:
        if seeds < 1:
            raise RLBaseError(f"--seeds must be at least 1, got {seeds}")
        specs = [RunSpec(**{**asdict(s), "seeds": tuple(range(seeds))}) for s in specs]
    return specs


def with_precision(spec: RunSpec, precision: str) -> RunSpec:
    """``spec`` trained at ``precision`` (its ``extra``'s ``precision``; float32 and the raw
    env-steps rows unchanged)."""
    if precision == FLOAT32 or spec.alg == RAW:
        return spec
    return replace(spec, extra={**spec.extra, "precision": precision})


def with_timesteps(spec: RunSpec, timesteps: int | None) -> RunSpec:
    """``spec`` with the budget ``timesteps`` (None: the preset row's own)."""
    return spec if timesteps is None else replace(spec, timesteps=int(timesteps))


def available(spec: RunSpec) -> str | None:
    """Why this setting cannot run here (its algorithm or env is missing, or it refuses the
    precision asked for), or None."""
    if spec.alg != RAW:
        if spec.alg not in available_algorithms():
            return f"algorithm '{spec.alg}' is not in this rlbase (not landed yet)"
        refused = config_class(spec.alg).mixed_precision_refused
        precision = spec.extra.get("precision", FLOAT32)
        if precision != FLOAT32 and refused:
            return f"{spec.alg} refuses precision={precision!r} ({refused})"
    try:
        check_env_id(spec.env)
    except RLBaseError as exc:
        return str(exc)
    return None


def raw_env_steps(env_id: str, steps: int, seed: int) -> dict[str, Any]:
    """The limit: one env stepped with random actions, no learning."""
    env = make_env(env_id, seed=seed)
    env.reset(seed=seed)
    sample = env.action_space.sample
    t0 = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(sample())
        if terminated or truncated:
            env.reset()
    wall = time.perf_counter() - t0
    env.close()
    return {"wall_s": round(wall, 2), "sps": round(steps / wall), "num_env": 1,
            "steps_done": steps,
            "eval_mean": float("nan"), "eval_std": float("nan")}


def run_one(run_dir: str) -> dict[str, Any]:
    """Run the setting in ``run_dir/spec.json``; write ``result.json`` last, atomically."""
    with open(os.path.join(run_dir, "spec.json"), encoding="utf-8") as f:
        job = json.load(f)
    spec = RunSpec(**{**job["spec"], "seeds": tuple(job["spec"]["seeds"])})
    seed = job["seed"]
    started = provenance.start()
    if spec.alg == RAW:
        out = raw_env_steps(spec.env, spec.timesteps, seed)
        out["versions"] = _versions()
    else:
        with logger.scoped_configure(run_dir, ["csv"]):  # progress.csv beside the monitor
            out = train_and_evaluate(spec.alg, spec.env, spec.timesteps, None, seed,
                                     spec.eval_episodes, dict(spec.extra), monitor_dir=run_dir,
                                     progress=True)
        out.pop("settings", None)
    out.update(hardware=hardware(), name=spec.name, alg=spec.alg, env=spec.env, seed=seed,
               timesteps=spec.timesteps, train_return_last100=_last_episodes_mean(run_dir),
               precision=spec.extra.get("precision", FLOAT32))
    # The command that launched the suite (spec.json has it), else this process's.
    out["provenance"] = provenance.finish(started, out.get("steps_done"), spec.env,
                                          provenance.monitor_steps(run_dir),
                                          argv=job.get("command"))
    provenance.compress_logs(run_dir)
    tmp = os.path.join(run_dir, "result.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(out, f)
    os.replace(tmp, os.path.join(run_dir, "result.json"))
    return out


def _last_episodes_mean(run_dir: str, n: int = 100) -> float:
    """The mean return of the last ``n`` training episodes (the Atari tables' figure)."""
    from rlbase.common.logs.plot_util import load_monitor  # optional: needs pandas (the plot extra)

    loaded = load_monitor(run_dir) if any(
        name.endswith("monitor.csv") for name in os.listdir(run_dir)) else None
    if loaded is None or len(loaded[1]) == 0:
        return float("nan")
    return round(float(loaded[1]["r"].to_numpy()[-n:].mean()), 2)


def _prepare(out_dir: str, spec: RunSpec, seed: int) -> str | None:
    """The run's folder, fresh, or None when it already finished (resume)."""
    run_dir = os.path.join(out_dir, "runs", spec.run_id(seed))
    if os.path.exists(os.path.join(run_dir, "result.json")):
        return None
    shutil.rmtree(run_dir, ignore_errors=True)  # a run killed midway starts over
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, "spec.json"), "w", encoding="utf-8") as f:
        json.dump({"spec": asdict(spec), "seed": seed, "command": list(sys.orig_argv)}, f)
    return run_dir


def _run_subprocess(run_dir: str) -> str | None:
    """Run one setting in a fresh process (TF state never leaks between runs)."""
    with open(os.path.join(run_dir, "log.txt"), "w", encoding="utf-8") as log:
        proc = subprocess.run([sys.executable, "-m", "rlbase.bench", "suite", "--one", run_dir],
                              stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    if proc.returncode != 0:
        return f"exit status {proc.returncode}; see {os.path.join(run_dir, 'log.txt')}"
    return None


def _run_in_process(run_dir: str) -> str | None:
    try:
        run_one(run_dir)
    except Exception as exc:  # noqa: BLE001 - one failed run must not stop the suite
        return f"{type(exc).__name__}: {exc}"
    return None


def run_suite(preset: str, out_dir: str, jobs: int = 1, algs: list[str] | None = None,
              envs: list[str] | None = None, seeds: int | None = None,
              in_process: bool = False, progress: bool = True, plots: bool = True,
              readme: str | None = None, precision: str = FLOAT32,
              timesteps: int | None = None) -> dict[str, Any]:
    """Run every pending run of the preset, then write the report into ``out_dir``.
    ``precision``: every run's (rlbase.common.precision); ``timesteps``: every run's budget
    in env steps instead of its preset row's (recorded in each result as ``timesteps``).

    :return: counts ``ran``, ``skipped`` (finished earlier), ``failed`` (messages by run id)
        and ``unavailable`` (settings whose algorithm or env is missing, with the reason).
    """
    if jobs < 1:
        raise RLBaseError(f"--jobs must be at least 1, got {jobs}")
    specs = [with_timesteps(with_precision(s, precision), timesteps)
             for s in select(preset, algs, envs, seeds)]
    unavailable = {f"{s.name} {s.env}": why for s in specs if (why := available(s))}
    for key, why in unavailable.items():
        print(f"rlbase.bench suite: skipping {key}: {why}", file=sys.stderr, flush=True)
    specs = [s for s in specs if f"{s.name} {s.env}" not in unavailable]
    os.makedirs(out_dir, exist_ok=True)
    prepared = [_prepare(out_dir, spec, seed) for spec in specs for seed in spec.seeds]
    pending = [run_dir for run_dir in prepared if run_dir is not None]
    skipped = len(prepared) - len(pending)
    bar = tqdm(total=len(prepared), initial=skipped, unit="run", disable=not progress,
               file=sys.stderr, desc=f"suite {preset}")
    worker = _run_in_process if in_process else _run_subprocess
    failed: dict[str, str] = {}
    if in_process or jobs == 1:
        outcomes = ((d, worker(d)) for d in pending)
    else:
        pool = ThreadPoolExecutor(max_workers=jobs)  # threads only wait on subprocesses
        futures = {pool.submit(worker, d): d for d in pending}
        outcomes = ((futures[f], f.result()) for f in as_completed(futures))
    for run_dir, error in outcomes:
        if error:
            failed[os.path.basename(run_dir)] = error
            bar.write(f"run {os.path.basename(run_dir)} failed: {error}")
        bar.update(1)
    bar.close()
    bench_report.write_report(out_dir, preset, plots=plots, readme=readme,
                              command=suite_command(preset, algs, envs, seeds, precision,
                                                    timesteps))
    return {"ran": len(pending) - len(failed), "skipped": skipped, "failed": failed,
            "unavailable": unavailable}


def suite_command(preset: str, algs: list[str] | None, envs: list[str] | None,
                  seeds: int | None, precision: str = FLOAT32,
                  timesteps: int | None = None) -> str:
    """The command that reproduces a suite (shown beside its results)."""
    flags = {"preset": preset, "algs": ",".join(algs) if algs else None,
             "envs": ",".join(envs) if envs else None, "seeds": seeds,
             "precision": None if precision == FLOAT32 else precision,
             "num_timesteps": timesteps}
    return " ".join(["python -m rlbase.bench suite",
                     *(f"--{key}={value}" for key, value in flags.items() if value is not None)])


def _csv_list(text: str | None) -> list[str] | None:
    return [t for t in text.split(",") if t] if text else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rlbase.bench suite")
    parser.add_argument("--preset", default="classic", help=f"one of {', '.join(PRESETS)}")
    parser.add_argument("--out", default=None, type=path_arg,
                        help="results folder (default bench_results/<preset>); rerun with it "
                             "to resume")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time")
    parser.add_argument("--algs", type=_csv_list, help="only these rows, e.g. ppo,td3")
    parser.add_argument("--envs", type=_csv_list, help="only these envs, e.g. CartPole-v1")
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 per setting "
                                                                "(default: the preset's)")
    parser.add_argument("--num_timesteps", type=timesteps_arg, default=None, metavar="N",
                        help="every run's budget in env steps, instead of each preset row's "
                             "(e.g. 1e4 for a quick try; recorded in the results; the default "
                             "folder becomes bench_results/<preset>-<N>)")
    parser.add_argument("--in_process", action="store_true",
                        help="run in this process, one at a time (no isolation)")
    parser.add_argument("--no_plots", action="store_true", help="skip the PNG curves")
    parser.add_argument("--no_progress", action="store_true")
    parser.add_argument("--readme", default=None,
                        help="also replace this README's '## Results' section with the table")
    parser.add_argument("--precision", choices=PRECISIONS, default=FLOAT32,
                        help="every run's precision (mixed_bfloat16: bfloat16 matmuls, see "
                             "rlbase/docs/precision.md); algorithms that refuse it are skipped")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a worker process
    args = parser.parse_args(argv)

    if args.one:
        import_tensorflow_quietly()
        run_one(args.one)
        return
    suffix = "" if args.precision == FLOAT32 else f"-{args.precision}"
    if args.num_timesteps is not None:  # not the preset's results: a folder of their own
        suffix += f"-{args.num_timesteps}"
    out = args.out or os.path.join("bench_results", args.preset + suffix)
    summary = run_suite(args.preset, out, args.jobs, args.algs, args.envs, args.seeds,
                        args.in_process, progress=not args.no_progress, plots=not args.no_plots,
                        readme=args.readme, precision=args.precision,
                        timesteps=args.num_timesteps)
    print(f"suite {args.preset}: {summary['ran']} ran, {summary['skipped']} already done, "
          f"{len(summary['failed'])} failed, {len(summary['unavailable'])} unavailable; "
          f"results in {out}/results.md and results.csv", flush=True)
    if summary["failed"]:
        sys.exit(1)

