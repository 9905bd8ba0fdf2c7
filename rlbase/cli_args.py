"""The command line's own flags (``python -m rlbase.run``, ``rlbase train``): anything else
is passed on as ``--key=value`` to the algorithm's learn()."""

from __future__ import annotations

import argparse
from typing import Any

import rlbase
from rlbase.common.arg_types import OneLineParser, path_arg, positive_finite_float, seconds_arg
from rlbase.common.config import describe
from rlbase.common.envs.make import ENV_TYPES, VEC_ENV_KINDS
from rlbase.registry import ALIASES, available_algorithms

# Config fields the CLI sets with its own flags (--seed, --eval_freq, ...). DDPG's
# reward_scale (on sampled rewards) meets the CLI's own --reward_scale (on the env's rewards):
# the CLI's flag keeps the name, as before.
OWN_FLAGS = ("seed", "eval_freq", "eval_episodes", "checkpoint_interval", "reward_scale")
CONFIG_DEST = "config:"


def common_arg_parser(prog: str = "python -m rlbase.run") -> argparse.ArgumentParser:
    """The CLI's own flags; anything else is passed on as ``--key=value`` to learn()."""
    algs = ", ".join(available_algorithms())
    aliases = ", ".join(f"{a} ({t[0]})" for a, t in ALIASES.items())
    p = OneLineParser(
        prog=prog, formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description=f"Train (and optionally play) an rlbase algorithm on a gymnasium env. "
                    f"Algorithms: {algs}; also {aliases}. Unknown --key=value flags go to the "
                    "algorithm's learn() or to the network builder; values are Python literals "
                    "(ast.literal_eval). --num_timesteps=0 with --load_path and --play plays a "
                    "saved model.")
    p.add_argument("--version", action="version", version=f"rlbase {rlbase.__version__}")
    p.add_argument("--alg", help=f"algorithm: {algs} (or {aliases})", type=str, default="a2c")
    p.add_argument("--env", help="gymnasium env id (also module:EnvId-v0)", type=str,
                   default="CartPole-v1")
    p.add_argument("--env_type", type=str, default=None,
                   help=f"env type for the defaults ({', '.join(ENV_TYPES)}); detected from "
                        "the registry when not given")
    p.add_argument("--env_kwargs", type=str, default=None,
                   help="keyword arguments of every env made, as a Python dict literal, e.g. "
                        "\"{'continuous': True}\" (saved with the model)")
    p.add_argument("--gym_packages", nargs="*", default=None, metavar="PACKAGE",
                   help="import these packages first (they register custom envs)")
    p.add_argument("--seed", help="random seed", type=int, default=None)
    p.add_argument("--num_timesteps", type=str, default=None,
                   help="env steps to train for (e.g. 2e5; 0 with --load_path: no training); "
                        "default: the zoo row's n_timesteps in zoo mode, else 1e6")
    p.add_argument("--network", type=str, default=None,
                   help="network name (mlp, simba, cnn, cnn_small, minatar_cnn, conv_only, "
                        "lstm, lnlstm, cnn_lstm, cnn_lnlstm, or your own @register'ed one); "
                        "default: the algorithm's for the env type")
    p.add_argument("--num_env", type=int, default=None,
                   help="number of parallel envs (default: the algorithm's default for the env "
                        "type, else the CPU count)")
    p.add_argument("--reward_scale", type=positive_finite_float, default=1.0,
                   help="multiply rewards by this (a finite number > 0)")
    p.add_argument("--save_path", type=path_arg, default=None, help="save the trained model here")
    p.add_argument("--load_path", type=path_arg, default=None,
                   help="start from this saved model (continues training)")
    p.add_argument("--log_path", type=path_arg, default=None,
                   help="folder for progress.csv, log.txt, monitor.csv (default "
                        "$RLBASE_LOGDIR; none: stdout only)")
    p.add_argument("--log_format", type=str, default=None,
                   help="comma-separated outputs among stdout, log, csv, json, tensorboard "
                        "(default $RLBASE_LOG_FORMAT, else stdout,log,csv with --log_path)")
    p.add_argument("--eval_freq", "--eval-freq", type=int, default=None,
                   help="evaluate on a separate env every this many env steps (0: never; default: "
                        "the algorithm's for the env type, else 0); "
                        "logged as eval/mean_reward, best model to <log_path>/best_model.zip")
    p.add_argument("--eval_episodes", "--eval-episodes", type=int, default=None,
                   help="episodes per evaluation (default: the algorithm's for the env type, "
                        "else 5)")
    p.add_argument("--play", action="store_true", help="after training, run the policy and "
                   "print each episode's return")
    p.add_argument("--play_episodes", type=int, default=5,
                   help="episodes to play with --play (>= 1)")
    p.add_argument("--save_video_interval", type=int, default=0,
                   help="record a training video every this many steps (0: never)")
    p.add_argument("--save_video_length", type=int, default=200, help="frames per video")
    p.add_argument("--save_plots", action="store_true",
                   help="after training, plot the learning curves of --log_path to "
                        "<log_path>/learning_curves.png")
    p.add_argument("--save_videos", type=int, default=0, metavar="N",
                   help="after training, record N episodes of the trained policy as H.264 "
                        "mp4 files in <log_path or .>/videos")
    p.add_argument("--normalize", action="store_true",
                   help="normalize observations and rewards with running statistics "
                        "(VecNormalize); they are saved with the model and used by --play")
    p.add_argument("--deterministic_ops", action="store_true",
                   help="make TensorFlow's kernels deterministic (slower, mainly on GPUs; "
                        "the same as RLBASE_DETERMINISTIC_OPS=1)")
    p.add_argument("--no_progress", action="store_true", help="no progress bar")
    p.add_argument("--vec_env", "--vec-env", choices=VEC_ENV_KINDS, default="auto",
                   help="how envs are stepped: dummy (in this process), subproc (a process "
                        "per env), ale (Atari: ale-py's C++ emulator threads); auto picks ale "
                        "for Atari when available, else subproc for all but cheap envs")
    p.add_argument("--env_timeout", type=seconds_arg, default=None,
                   help="seconds a subprocess env worker may take for one step or reset "
                        "before the run fails naming it as hung (default $RLBASE_ENV_TIMEOUT, "
                        "else 600; inf: no limit)")
    p.add_argument("--checkpoint_interval", "--save-freq", type=int, default=0,
                   help="write a resumable checkpoint every this many env steps")
    p.add_argument("--checkpoint_path", type=path_arg, default=None,
                   help="the checkpoints' folder (default: <log_path>/checkpoints)")
    p.add_argument("--resume", nargs="?", const="yes", default=None, choices=("yes", "must"),
                   help="continue from the newest intact checkpoint in the checkpoint folder, "
                        "appending to the run's logs (none there: start from scratch, saying "
                        "so); --resume=must refuses to start when there is no checkpoint")
    p.add_argument("--check_finite", action=argparse.BooleanOptionalAction, default=True,
                   help="stop at the first NaN/inf observation or reward")
    add_zoo_flags(p)
    return p


def add_zoo_flags(p: argparse.ArgumentParser) -> None:
    """rl-baselines3-zoo's train.py flags (--eval-freq, --save-freq and --vec-env are
    spellings of the flags above)."""
    g = p.add_argument_group(
        "rl-baselines3-zoo flags (zoo mode: --algo, --conf-file or --hyperparams; the row of "
        "rlbase/hyperparams/<algo>.yml or --conf-file for the env is used)")
    g.add_argument("--algo", default=None, help="the algorithm (= --alg), in zoo mode")
    g.add_argument("-n", "--n-timesteps", dest="n_timesteps", type=str, default=None,
                   help="env steps to train for (= --num_timesteps; default: the row's)")
    g.add_argument("-f", "--log-folder", dest="log_folder", type=path_arg, default=None,
                   help="logs, config.yml and the trained model (<env>.zip, unless "
                        "--save_path) go to <folder>/<algo>/<env>_<n>, n the next free index")
    g.add_argument("--n-eval-envs", dest="n_eval_envs", type=int, default=1,
                   help="envs of the evaluation (rlbase evaluates on 1)")
    g.add_argument("--device", default="auto",
                   help="accepted: TensorFlow uses a visible GPU by itself")
    g.add_argument("--conf-file", dest="conf_file", type=path_arg, default=None,
                   help="a hyperparameter file in the zoo's format: its row for the env")
    g.add_argument("--hyperparams", nargs="+", default=None, metavar="KEY:VALUE",
                   help="override the row's keys (values are Python literals)")
    g.add_argument("-P", "--progress", action="store_true",
                   help="show the progress bar even when stderr is not a terminal")


def add_config_flags(parser: argparse.ArgumentParser, config: Any) -> None:
    """One flag per field of an algorithm's config (and one per Stable-Baselines3 name), with
    the field's type, unit, range and doc as help; values are Python literals."""
    group = parser.add_argument_group(
        f"{config.algorithm} parameters ({config.__name__}; values are Python literals, "
        "schedules lin_<start>)")
    added: set[str] = set()
    for row in describe(config):
        name = row["name"]
        if name in OWN_FLAGS:
            continue
        unit = f", in {row['unit']}" if row["unit"] else ""
        allowed = f", {row['range']}" if row["range"] else ""
        metavar = row["type"].upper().split()[0]
        # (argparse formats help with %: a doc's own % is escaped)
        own = f"{row['doc']} (default {row['default']}{unit}{allowed})".replace("%", "%%")
        for other, text in ((name, own), (row["sb3"], f"Stable-Baselines3's name for --{name}"),
                            *((d, argparse.SUPPRESS) for d in row["deprecated"].split(", "))):
            if other and other not in added:
                group.add_argument(f"--{other}", dest=CONFIG_DEST + other, nargs="?",
                                   const="True", default=argparse.SUPPRESS, metavar=metavar,
                                   help=text)
                added.add(other)
    if "replay_buffer_class" in config.field_names():  # off-policy algorithms
        group.add_argument("--her", dest=CONFIG_DEST + "replay_buffer_class",
                           action="store_const", const="her", default=argparse.SUPPRESS,
                           help="Hindsight Experience Replay: --replay_buffer_class=her (its "
                                "arguments: --replay_buffer_kwargs=\"dict(n_sampled_goal=4)\")")


def config_flags(args: argparse.Namespace) -> dict[str, str]:
    """The config flags given, by name, as text (taken out of ``args``)."""
    given = [d for d in vars(args) if d.startswith(CONFIG_DEST)]
    return {d.removeprefix(CONFIG_DEST): vars(args).pop(d) for d in given}
