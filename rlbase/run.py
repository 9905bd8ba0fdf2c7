"""The command line: ``python -m rlbase.run --alg=a2c --env=CartPole-v1 --num_timesteps=2e5``.

Flags the parser does not know (``--lr=1e-3``, ``--num_layers=3``) go to the algorithm's
``learn()`` or to the network builder, after a check that one of them takes them. A user's
mistake prints one line and exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import math
import os
import pkgutil
import sys
from typing import Any, Callable

import numpy as np

from rlbase.common.errors import RLBaseError

# learn() arguments the CLI sets itself (from its own flags), never from --key=value extras.
CLI_OWNED = {"env", "network", "seed", "total_timesteps", "load_path"}


def available_algorithms() -> list[str]:
    """Packages ``rlbase.<alg>`` that have a ``<alg>.py`` with ``learn``."""
    import rlbase

    pkg_dir = os.path.dirname(rlbase.__file__)
    return sorted(m.name for m in pkgutil.iter_modules([pkg_dir]) if m.ispkg and
                  os.path.isfile(os.path.join(pkg_dir, m.name, f"{m.name}.py")))


def get_learn_function(alg: str) -> Callable[..., Any]:
    algs = available_algorithms()
    if alg not in algs:
        raise RLBaseError(f"unknown algorithm '{alg}'; available: {', '.join(algs)}")
    return importlib.import_module(f"rlbase.{alg}.{alg}").learn


def get_defaults(alg: str, env_type: str) -> dict[str, Any]:
    """The algorithm's defaults for this env type (``rlbase.<alg>.defaults.<env_type>()``)."""
    try:
        module = importlib.import_module(f"rlbase.{alg}.defaults")
    except ModuleNotFoundError:
        return {}
    fn = getattr(module, env_type, None)
    return dict(fn()) if callable(fn) else {}


def parse_num_timesteps(text: str) -> int:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value < 1:
        raise RLBaseError(f"--num_timesteps must be a positive number such as 2e5, got '{text}'")
    return int(value)


def check_extra_args(alg: str, learn: Callable[..., Any], network: Any,
                     extra: dict[str, Any]) -> None:
    """Every --key=value must be a learn() parameter or a network builder keyword."""
    from rlbase.common.models import network_kwarg_names

    params = inspect.signature(learn).parameters
    learn_names = {n for n, p in params.items() if p.kind not in (p.VAR_KEYWORD,
                                                                  p.VAR_POSITIONAL)}
    takes_network_kwargs = any(p.kind == p.VAR_KEYWORD for p in params.values())
    net_names = set(network_kwarg_names(network)) if takes_network_kwargs else set()
    if takes_network_kwargs:
        net_names.add("value_network")
    owned = sorted(set(extra) & CLI_OWNED)
    if owned:
        raise RLBaseError(f"set {', '.join(owned)} with the CLI's own flag (--env, --network, "
                          "--seed, --num_timesteps, --load_path), not as an extra argument")
    unknown = sorted(set(extra) - learn_names - net_names)
    if unknown:
        valid = sorted((learn_names - CLI_OWNED) | net_names)
        raise RLBaseError(f"unknown argument(s) {', '.join('--' + u for u in unknown)} for "
                          f"{alg} with network '{getattr(network, '__name__', network)}'; "
                          f"valid: {', '.join(valid)}")


def build_env(args: Any, env_type: str, num_env: int, seed: int | None) -> Any:
    from rlbase.common.cmd_util import make_vec_env

    env_kwargs = {"render_mode": "rgb_array"} if args.save_video_interval else None
    monitor_dir = args.log_path if args.log_path else None
    env = make_vec_env(args.env, env_type, num_env, seed, reward_scale=args.reward_scale,
                       env_kwargs=env_kwargs, monitor_dir=monitor_dir, vec_env=args.vec_env)
    if args.check_finite:
        from rlbase.common.nan_guard import VecCheckFinite

        env = VecCheckFinite(env)
    if args.normalize:
        from rlbase.common.vec_env import VecNormalize

        env = VecNormalize(env)
    if args.save_video_interval:
        from rlbase.common.vec_env import VecVideoRecorder

        video_dir = os.path.join(args.log_path or ".", "videos")
        interval = args.save_video_interval
        env = VecVideoRecorder(env, video_dir, lambda step: step % interval == 0,
                               video_length=args.save_video_length)
    return env


def progress_callback(total: int) -> Callable[[Any, dict[str, Any]], None]:
    from tqdm import tqdm

    bar = tqdm(total=total, unit="step", dynamic_ncols=True, file=sys.stderr)

    def update(model: Any, info: dict[str, Any]) -> None:
        bar.n = min(total, int(info.get("num_timesteps", 0)))
        bar.refresh()
        if bar.n >= total:
            bar.close()

    return update


def play(model: Any, env_id: str, episodes: int, seed: int | None) -> list[float]:
    """Run the trained policy and print each episode's return."""
    from rlbase.common.cmd_util import make_vec_env
    from rlbase.common.evaluation import run_episodes

    env = make_vec_env(env_id, num_env=1, seed=None if seed is None else seed + 12345)
    if hasattr(model, "normalized_like_training"):
        env = model.normalized_like_training(env)
    returns, lengths = run_episodes(model, env, episodes, deterministic=True)
    for i, (ret, length) in enumerate(zip(returns, lengths)):
        print(f"episode {i + 1}: return {ret:.2f}, length {length}", flush=True)
    print(f"mean return over {len(returns)} episodes: {np.mean(returns):.2f}", flush=True)
    env.close()
    return returns


def add_reliability_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--checkpoint_interval", type=int, default=0,
                        help="write a resumable checkpoint every this many env steps")
    parser.add_argument("--checkpoint_path", type=str, default=None,
                        help="the checkpoints' folder (default: <log_path>/checkpoints)")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the newest checkpoint in the checkpoint folder")
    parser.add_argument("--check_finite", action=argparse.BooleanOptionalAction, default=True,
                        help="stop at the first NaN/inf observation or reward (default: on)")
    return parser


def checkpoint_args(args: Any, learn: Callable[..., Any]) -> dict[str, Any]:
    """The learn() arguments for --checkpoint_interval, --checkpoint_path and --resume."""
    if not (args.checkpoint_interval or args.resume or args.checkpoint_path):
        return {}
    if args.checkpoint_interval < 0:
        raise RLBaseError(f"--checkpoint_interval must be >= 0, got {args.checkpoint_interval}")
    params = inspect.signature(learn).parameters
    if not {"checkpoint_interval", "resume"} <= set(params):
        raise RLBaseError(f"algorithm '{args.alg}' does not support --checkpoint_interval/"
                          "--resume yet; algorithms with checkpoints: " + ", ".join(
                              a for a in available_algorithms() if "resume" in
                              inspect.signature(get_learn_function(a)).parameters))
    folder = args.checkpoint_path or (os.path.join(args.log_path, "checkpoints")
                                      if args.log_path else None)
    if folder is None:
        raise RLBaseError("--checkpoint_interval and --resume need --checkpoint_path or "
                          "--log_path (checkpoints go to <log_path>/checkpoints)")
    return {"checkpoint_interval": args.checkpoint_interval, "resume": args.resume,
            "checkpoint_path": os.path.expanduser(folder)}


def interrupted_save_path(args: Any, ckpt: dict[str, Any]) -> str:
    """Where a model stopped by Ctrl-C goes: --save_path, else beside the checkpoints, else
    the log folder, else the current folder."""
    if args.save_path:
        return os.path.expanduser(args.save_path)
    folder = ckpt.get("checkpoint_path") or args.log_path or "."
    return os.path.join(os.path.expanduser(folder), f"{args.alg}_interrupted.zip")


def main(argv: list[str] | None = None) -> Any:
    from rlbase.common.cmd_util import common_arg_parser, parse_unknown_args
    from rlbase.common.misc_util import import_tensorflow_quietly

    parser = add_reliability_flags(common_arg_parser())
    args, unknown = parser.parse_known_args(argv)
    extra = parse_unknown_args(unknown)
    total = parse_num_timesteps(args.num_timesteps)
    import_tensorflow_quietly()
    learn = get_learn_function(args.alg)

    from rlbase.common import logger
    from rlbase.common.cmd_util import check_env_id, get_env_type
    from rlbase.common.mpi_util import abort_on_error, mpi_rank
    from rlbase.common.serialization import load_file
    from rlbase.common.signals import INTERRUPTED_EXIT_CODE, graceful_interrupt, stop_requested

    check_env_id(args.env)
    env_type = args.env_type or get_env_type(args.env)
    alg_kwargs = get_defaults(args.alg, env_type)
    num_env = args.num_env or alg_kwargs.pop("num_env", None) or os.cpu_count() or 1
    alg_kwargs.pop("num_env", None)
    network = args.network or alg_kwargs.pop("network", None) or "mlp"
    alg_kwargs.pop("network", None)
    args.normalize = args.normalize or bool(alg_kwargs.pop("normalize", False))
    check_extra_args(args.alg, learn, network, extra)
    alg_kwargs.update(extra)
    ckpt = checkpoint_args(args, learn)
    alg_kwargs.update(ckpt)
    if args.load_path:
        load_file(os.path.expanduser(args.load_path))  # a bad file fails before any training
    if args.save_plots and not args.log_path:
        raise RLBaseError("--save_plots plots the monitor and progress files of --log_path: "
                          "give --log_path too")
    if args.save_videos < 0:
        raise RLBaseError(f"--save_videos must be a number of episodes >= 0, got "
                          f"{args.save_videos}")
    if args.num_env is not None and args.num_env < 1:
        raise RLBaseError(f"--num_env must be at least 1, got {args.num_env}")

    abort_on_error()  # under mpiexec a rank's crash ends every rank (no job hangs)
    rank = mpi_rank()
    if rank == 0:
        formats = ["stdout", "log", "csv"] if args.log_path else ["stdout"]
        logger.configure(args.log_path, formats)
    else:
        logger.configure(args.log_path, [])
    env = build_env(args, env_type, num_env, args.seed)
    show_progress = rank == 0 and not args.no_progress and sys.stderr.isatty()
    if show_progress and "callback" in inspect.signature(learn).parameters \
            and "callback" not in alg_kwargs:
        alg_kwargs["callback"] = progress_callback(total)
    print(f"Training {args.alg} on {args.env} ({env_type}) for {total} steps with "
          f"{num_env} env(s), network {network}, arguments {alg_kwargs}", flush=True)
    # Ctrl-C stops at the learn loop's next safe point (rlbase.common.signals); the model
    # (and, with checkpoints, a checkpoint) is saved and the exit status is 130.
    with graceful_interrupt():
        try:
            model = learn(env=env, network=network, seed=args.seed, total_timesteps=total,
                          load_path=os.path.expanduser(args.load_path) if args.load_path
                          else None, **alg_kwargs)
        finally:
            env.close()
        interrupted = stop_requested()
    if interrupted:
        if rank == 0:
            save_path = interrupted_save_path(args, ckpt)
            model.save(save_path)
            print(f"Interrupted at {model.num_timesteps} timesteps: saved model to {save_path}",
                  flush=True)
        raise SystemExit(INTERRUPTED_EXIT_CODE)
    if args.save_path and rank == 0:
        save_path = os.path.expanduser(args.save_path)
        model.save(save_path)
        print(f"Saved model to {save_path}", flush=True)
    if args.play and rank == 0:
        play(model, args.env, args.play_episodes, args.seed)
    if rank == 0:
        save_media(model, args)
    return model


def save_media(model: Any, args: Any) -> None:
    """--save_plots and --save_videos, after training."""
    from rlbase.api.media import save_plots, save_videos

    if args.save_plots:
        print(f"Saved learning curves to {save_plots(args.log_path)}", flush=True)
    if args.save_videos:
        folder = os.path.join(args.log_path or ".", "videos")
        for path in save_videos(model, args.env, args.save_videos, folder, seed=args.seed,
                                normalize_like=model):
            print(f"Saved video {path}", flush=True)


def cli() -> None:
    """Entry point: one clear line and exit status 2 for a user's mistake."""
    from rlbase.common.mpi_util import abort_job

    try:
        main()
    except RLBaseError as exc:
        print(f"rlbase: error: {exc}", file=sys.stderr, flush=True)
        abort_job(2)  # under mpiexec, the other ranks must not wait for this one forever
        sys.exit(2)
    except SystemExit as exc:
        if exc.code:
            abort_job(exc.code if isinstance(exc.code, int) else 1)
        raise


if __name__ == "__main__":
    cli()
