"""``rlbase tune``: an Optuna study over an algorithm's search space, the best trial written
as a zoo-format hyperparameter file (``rlbase train --conf-file best.yml``)."""

from __future__ import annotations

import argparse
from typing import NoReturn

from rlbase.common.arg_types import path_arg
from rlbase.common.errors import RLBaseError
from rlbase.tuning.study import TuneSettings, optimize, write_best


class _Parser(argparse.ArgumentParser):
    """A bad flag is one line and exit status 2 (through run_cli), as in every subcommand."""

    def error(self, message: str) -> NoReturn:
        raise RLBaseError(f"rlbase tune: {message}")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="rlbase tune", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                description="Search an algorithm's hyperparameters with Optuna; write the best "
                            "trial as a hyperparameter file.")
    p.add_argument("--algo", "--alg", dest="algo", required=True,
                   help="algorithm (a2c, acer, ddpg, td3, dqn, es, ppo, qlearning, sac)")
    p.add_argument("--env", required=True, help="gymnasium env id")
    p.add_argument("--n-trials", type=int, default=10, help="trials to add to the study")
    p.add_argument("--n-jobs", type=int, default=1,
                   help="trials run at once, each in its own process")
    p.add_argument("--sampler", default="tpe", help="tpe or random")
    p.add_argument("--pruner", default="median", help="median or none")
    p.add_argument("--storage", default=None,
                   help="Optuna database URL (sqlite:///study.db) or journal file path; a "
                        "study found there is resumed (default: in memory)")
    p.add_argument("--study-name", default=None, help="default: <algo>-<env>")
    p.add_argument("-n", "--n-timesteps", type=float, default=1e5,
                   help="env steps per trial")
    p.add_argument("--eval-freq", type=float, default=None,
                   help="evaluate and report to the pruner every this many env steps "
                        "(default: n-timesteps / 5; 0: only at the end)")
    p.add_argument("--eval-episodes", type=int, default=5, help="episodes per evaluation")
    p.add_argument("--seed", type=int, default=None,
                   help="seeds the sampler, and trial i with seed + i")
    p.add_argument("--out", default=None, type=path_arg,
                   help="the best trial's hyperparameter file (default: <study name>.yml)")
    return p


def main(argv: list[str]) -> None:
    args = parser().parse_args(argv)
    n_timesteps = int(args.n_timesteps)
    eval_freq = n_timesteps // 5 if args.eval_freq is None else int(args.eval_freq)
    settings = TuneSettings(
        algo=args.algo, env_id=args.env, n_trials=args.n_trials, n_jobs=args.n_jobs,
        sampler=args.sampler, pruner=args.pruner, storage=args.storage,
        study_name=args.study_name, n_timesteps=n_timesteps, eval_freq=eval_freq,
        eval_episodes=args.eval_episodes, seed=args.seed, out=args.out)
    settings.check()  # before Optuna is imported: a typo is one line, with or without it
    try:  # optional: the tune extra
        import optuna  # noqa: F401
    except ImportError:
        raise RLBaseError("rlbase tune needs Optuna: pip install 'rlbase[tune]'") from None

    study = optimize(settings)
    path = write_best(study, settings, settings.out or f"{settings.name}.yml")
    best = study.best_trial
    print(f"best: trial {best.number}, mean return {best.value:g}; hyperparameters in {path}")
