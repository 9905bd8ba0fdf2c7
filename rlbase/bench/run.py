"""``python -m rlbase.bench run|compare``: one training run's steps/s and the return it
reached, and with ``compare`` the peer's anchor script's right after it (see rlbase.bench)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import time
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np

import rlbase
from rlbase import registry
from rlbase.bench import intervals
from rlbase.bench.settings import PEER_SETTINGS
from rlbase.common import misc_util
from rlbase.common.arg_types import path_arg, timesteps_arg
from rlbase.common.envs.make import get_env_type, make_vec_env, parse_unknown_args
from rlbase.common.vec_env import VecNormalize
from rlbase.hyperparams import env_type_defaults
from rlbase.run import evaluation_env, play_returns


@dataclass(frozen=True)
class RunSettings:
    """One benchmark run's settings, resolved as the CLI resolves them (the env type's
    defaults, the alias's preset, then the overrides), with the CLI flags that give the same
    run: a row's figures are what ``python -m rlbase.run`` with those flags hands back.

    alg: the name given (a CLI --alg such as ``td3``); algorithm: its package.
    overrides: the settings beyond the CLI's defaults for the env type, as CLI flags.
    """

    alg: str
    algorithm: str
    env_id: str
    env_type: str
    network: str
    num_env: int
    normalize: bool
    eval_freq: int
    eval_episodes: int
    learn_kwargs: dict[str, Any]
    overrides: dict[str, Any]

    def cli_command(self, timesteps: int, seed: int | str, play_episodes: int) -> str:
        """The ``python -m rlbase.run`` command that trains and evaluates this run."""
        parts = ["python -m rlbase.run", f"--alg={self.alg}", f"--env={self.env_id}",
                 f"--num_timesteps={timesteps}", f"--seed={seed}", f"--num_env={self.num_env}"]
        parts += [_flag(key, value) for key, value in self.overrides.items()]
        if play_episodes > 0:
            parts += ["--play", f"--play_episodes={play_episodes}"]
        return " ".join(parts)


def _flag(key: str, value: Any) -> str:
    if value is True and key == "normalize":
        return "--normalize"
    text = value if isinstance(value, str) else repr(value)
    return shlex.quote(f"--{key}={text}")


def resolve_settings(alg: str, env_id: str, num_env: int | None,
                     extra: dict[str, Any], normalize: bool = False) -> RunSettings:
    """The CLI's defaults for ``alg`` on ``env_id``, then ``PEER_SETTINGS`` (the anchor runs'
    settings), then ``extra``; ``overrides`` keeps what differs from the CLI's defaults."""
    name, preset = registry.resolve(alg)
    env_type = get_env_type(env_id)
    entry = registry.get_algorithm(name)
    defaults = {**env_type_defaults(entry.name, env_type), **preset}
    wanted = {**defaults, **PEER_SETTINGS.get((alg, env_id), PEER_SETTINGS.get((name, env_id),
                                                                                {})), **extra}
    if num_env is not None:
        wanted["num_env"] = num_env
    if normalize:
        wanted["normalize"] = True
    # What the CLI would use without a flag: the env type's defaults over learn()'s own.
    implied = {**entry.learn_defaults(), **defaults}
    overrides = {k: v for k, v in wanted.items()
                 if k != "num_env" and (k not in implied or implied[k] != v)}
    kwargs = dict(wanted)
    return RunSettings(
        alg=alg, algorithm=name, env_id=env_id, env_type=env_type,
        network=kwargs.pop("network", "mlp"), num_env=int(kwargs.pop("num_env", 1)),
        normalize=bool(kwargs.pop("normalize", False)),
        eval_freq=int(kwargs.pop("eval_freq", 0)),
        eval_episodes=int(kwargs.pop("eval_episodes", 5)),
        learn_kwargs=kwargs, overrides=overrides)


def train_and_evaluate(alg: str, env_id: str, num_timesteps: int, num_env: int | None,
                       seed: int, eval_episodes: int, extra: dict[str, Any],
                       normalize: bool = False,
                       monitor_dir: str | None = None,
                       progress: bool = False) -> dict[str, Any]:
    """Train with ``learn()`` exactly as the CLI would (see :func:`resolve_settings`), time
    it, then evaluate as ``--play`` does: ``eval_episodes`` deterministic episodes on a fresh
    env.

    ``monitor_dir``: where the training envs write monitor.csv (learning curves), or None.
    ``progress``: log at the settings' ``log_interval`` (learn()'s own default where they have
    none) to the current logger (the suite's progress.csv); False logs nothing.
    ``steps_done`` is the model's own count, which passes the budget by the rest of a last
    batch; ``sps`` is it over the wall time of ``learn()``.
    """
    run = resolve_settings(alg, env_id, num_env, extra, normalize)
    env = make_vec_env(env_id, run.env_type, run.num_env, seed, monitor_dir=monitor_dir)
    if run.normalize:
        env = VecNormalize(env)
    kwargs = dict(run.learn_kwargs)
    if run.eval_freq:
        kwargs.update(eval_env=evaluation_env(env_id, seed, None), eval_freq=run.eval_freq,
                      eval_episodes=run.eval_episodes)
    if not progress:
        kwargs.setdefault("log_interval", 10**9)
    t0 = time.perf_counter()
    model = registry.get_algorithm(run.algorithm).learn(
        network=run.network, env=env, seed=seed, total_timesteps=num_timesteps, **kwargs)
    wall = time.perf_counter() - t0
    steps_done = int(model.num_timesteps)
    env.close()
    mean = std = float("nan")
    if eval_episodes > 0:  # 0: a throughput run
        returns, _ = play_returns(model, env_id, eval_episodes, seed)
        mean, std = float(np.mean(returns)), float(np.std(returns))
    return {"library": "rlbase", "alg": alg, "env": env_id, "seed": seed,
            "timesteps": num_timesteps, "steps_done": steps_done, "num_env": run.num_env,
            "wall_s": round(wall, 2), "sps": round(steps_done / wall),
            "eval_mean": round(mean, 2),
            "eval_std": round(std, 2), "settings": {k: repr(v) for k, v in kwargs.items()
                                                    if k != "eval_env"},
            "cli": run.cli_command(num_timesteps, seed, eval_episodes),
            "hardware": f"{platform.machine()} x{os.cpu_count()}",
            "versions": _versions()}


def _versions() -> dict[str, str]:
    import tensorflow  # lazy: TensorFlow is heavy

    return {"rlbase": rlbase.__version__, "tensorflow": tensorflow.__version__,
            "gymnasium": gymnasium.__version__, "numpy": np.__version__,
            "python": platform.python_version()}


def run_peer(peer_python: str, anchors: str, alg: str, env_id: str, num_timesteps: int,
             num_env: int, seed: int) -> dict[str, Any]:
    """Run the peer's anchor script and parse its one-line result."""
    anchors = os.path.abspath(anchors)
    script = os.path.join(anchors, "sb3_bench.py")
    cmd = [peer_python, script, alg, env_id, str(num_timesteps), str(num_env), str(seed)]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=anchors, check=True).stdout
    line = out.strip().splitlines()[-1]
    fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
    return {"library": "peer", "line": line, "sps": float(fields["sps"]),
            "eval_mean": float(fields["eval"].split("+-")[0])}


def main(argv: list[str] | None = None) -> None:
    """``run`` and ``compare`` (see rlbase.bench)."""
    parser = argparse.ArgumentParser(prog="python -m rlbase.bench")
    parser.add_argument("command", choices=["run", "compare"])
    parser.add_argument("--alg", default="a2c")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--num_timesteps", type=timesteps_arg, default=50_000)
    parser.add_argument("--num_env", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=1, help="run seeds seed..seed+N-1")
    parser.add_argument("--eval_episodes", type=int, default=10)
    parser.add_argument("--peer_python", default="/tmp/sb3env/bin/python")
    parser.add_argument("--anchors", default=os.path.join("..", "shared", "anchors"))
    parser.add_argument("--normalize", action="store_true",
                        help="train on VecNormalize'd observations and rewards")
    parser.add_argument("--out", default=None, type=path_arg, help="append JSON lines here")
    parser.add_argument("--monitor_dir", default=None, type=path_arg,
                        help="write the training envs' monitor.csv here (learning curves)")
    args, unknown = parser.parse_known_args(argv)
    misc_util.import_tensorflow_quietly()  # through the module: a test stubs it
    extra = parse_unknown_args(unknown)
    steps = args.num_timesteps
    ours_evals: list[float] = []
    peer_evals: list[float] = []
    for seed in range(args.seed, args.seed + args.seeds):
        ours = train_and_evaluate(args.alg, args.env, steps, args.num_env, seed,
                                  args.eval_episodes, extra, args.normalize,
                                  monitor_dir=args.monitor_dir and os.path.join(
                                      args.monitor_dir, f"seed{seed}"))
        print(f"rlbase {args.alg} {args.env} steps={steps} n_envs={ours['num_env']} "
              f"seed={seed} time={ours['wall_s']}s sps={ours['sps']} "
              f"eval={ours['eval_mean']}+-{ours['eval_std']}", flush=True)
        records = [ours]
        ours_evals.append(ours["eval_mean"])
        if args.command == "compare":
            peer = run_peer(args.peer_python, args.anchors, args.alg, args.env, steps,
                            ours["num_env"], seed)
            print(peer["line"], flush=True)
            ratio = ours["sps"] / peer["sps"]
            print(f"ratio rlbase/peer steps/s = {ratio:.2f}; eval {ours['eval_mean']} vs "
                  f"{peer['eval_mean']}", flush=True)
            records.append(peer)
            peer_evals.append(peer["eval_mean"])
        if args.out:
            with open(args.out, "a", encoding="utf-8") as f:
                f.writelines(json.dumps(record) + "\n" for record in records)
    if args.eval_episodes > 0:
        for line in seed_summary(ours_evals, peer_evals if args.command == "compare" else None):
            print(line, flush=True)


def seed_summary(ours: list[float], peer: list[float] | None) -> list[str]:
    """The evaluations over seeds as the suite reports them: IQM and mean with 95% stratified
    bootstrap intervals for each library, and P(rlbase > peer) when the peer ran."""
    lines = []
    for label, values in (("rlbase", ours), ("peer", peer)):
        if values is not None:
            est = intervals.interval(values)
            lines.append(f"{label} eval over {est['n']} seed(s): IQM {est['iqm_text']}, "
                         f"mean {est['mean_text']}")
    if peer:
        entry = intervals.improvement_entry(
            "rlbase", "peer", np.array(ours, dtype=float)[:, None],
            np.array(peer, dtype=float)[:, None], [], 0)
        lines.append(f"P(rlbase > peer) = {entry['text']}")
    return lines

