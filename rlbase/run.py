"""The command line: ``python -m rlbase.run --alg=a2c --env=CartPole-v1 --num_timesteps=2e5``.

Flags the parser does not know (``--lr=1e-3``, ``--num_layers=3``) go to the algorithm's
``learn()`` or to the network builder, after a check that one of them takes them. A user's
mistake prints one line and exits with status 2. ``--num_timesteps=0 --load_path=m.zip
--play`` loads a saved model and plays it (Baselines' "play a saved model").
"""

from __future__ import annotations

import copy
import importlib.util
import inspect
import json
import os
import re
import sys
import tempfile
import warnings
from typing import Any, Callable

import numpy as np
from tqdm import tqdm

import rlbase
from rlbase import registry
from rlbase.cli_args import add_config_flags, common_arg_parser, config_flags
from rlbase.common.arg_types import (
    MAX_COUNT,
    OneLineParser,
    check_keyword_types,
    parse_count,
    path_arg,
)
from rlbase.common.envs.make import (
    check_env_id,
    check_env_kwargs,
    env_type_of,
    import_gym_packages,
    make_vec_env,
    parse_env_kwargs,
    parse_unknown_args,
)
from rlbase.common.errors import RLBaseError
from rlbase.common.families.her_baselines import horizon_settings, refuse_baselines_names
from rlbase.common.io.checkpoint import list_checkpoints
from rlbase.common.io.run_lock import lock_folder, release_all
from rlbase.common.io.serialization import load_file
from rlbase.common.logs import logger
from rlbase.common.logs.logger import env_log_format, env_logdir
from rlbase.common.logs.media import save_plots, save_videos
from rlbase.common.loops.evaluation import run_episodes
from rlbase.common.loops.signals import (
    StopExit,
    graceful_interrupt,
    ignore_stop_signals,
    stop_at_once,
    stop_requested,
)
from rlbase.common.misc_util import DETERMINISTIC_OPS_ENV, import_tensorflow_quietly
from rlbase.common.mpi_util import abort_job, abort_on_error, any_rank, barrier, mpi_rank
from rlbase.common.vec_env import VecCheckFinite, VecNormalize, VecVideoRecorder
from rlbase.common.vec_env.worker_limits import ENV_TIMEOUT_VARIABLE
from rlbase.hyperparams import (
    env_type_defaults,
    flat,
    next_run_folder,
    read_file,
    resolve_row,
    row_settings,
    user_over_defaults,
    write_config,
)

# learn() arguments the CLI sets itself (from its own flags), never from --key=value extras.
CLI_OWNED = {"env", "network", "seed", "total_timesteps", "load_path", "checkpoint_interval",
             "checkpoint_path", "resume", "eval_freq", "eval_episodes", "eval_env"}


def parse_num_timesteps(text: str, allow_zero: bool) -> int:
    value = parse_count(text, 0 if allow_zero else 1)
    if value is None:
        what = "a number >= 0 (0 with --load_path: play without training)" if allow_zero \
            else "a positive number such as 2e5 (0 only with --load_path)"
        what += f", at most {MAX_COUNT:.3g} ({MAX_COUNT:,})"
        raise RLBaseError(f"--num_timesteps must be {what}, got '{text}'")
    return value


def check_extra_args(alg: str, entry: Any, network: Any, extra: dict[str, Any]) -> None:
    """Every --key=value must be a learn() parameter, a deprecated spelling of one, or a
    network builder keyword."""
    # Lazy: the networks import TensorFlow, which the CLI's parsing must not pay for.
    from rlbase.common.networks.policies import POLICY_KWARGS
    from rlbase.common.networks.registry import network_kwarg_names

    learn_names = set(entry.learn_parameters()) - {"network_kwargs"}
    aliases = set(entry.config.accepted_names())
    net_names = set(network_kwarg_names(network)) if network is not None else set()
    net_names.update(POLICY_KWARGS)
    owned = sorted(set(extra) & CLI_OWNED)
    if owned:
        raise RLBaseError(f"set {', '.join(owned)} with the CLI's own flag (--env, --network, "
                          "--seed, --num_timesteps, --load_path, --checkpoint_*, --eval_*), not "
                          "as an extra argument")
    unknown = sorted(set(extra) - learn_names - net_names - aliases)
    if unknown:
        valid = sorted((learn_names - CLI_OWNED) | net_names)
        raise RLBaseError(f"unknown argument(s) {', '.join('--' + u for u in unknown)} for "
                          f"{alg} with network '{getattr(network, '__name__', network)}'; "
                          f"valid: {', '.join(valid)}")
    if network is not None:
        check_network_kwarg_types(network, {k: v for k, v in extra.items()
                                            if k not in learn_names and k not in aliases})


def check_network_kwarg_types(network: Any, given: dict[str, Any]) -> None:
    """A network argument from the command line of another type than its builder's default
    (``--num_layers=abc`` for mlp's ``num_layers=2``) is a one-line error naming the flag."""
    from rlbase.common.networks.registry import get_network_builder  # lazy: imports TensorFlow

    try:
        params = inspect.signature(get_network_builder(network)).parameters
    except (RLBaseError, TypeError, ValueError):
        return
    check_keyword_types(params, given, f"network {getattr(network, '__name__', network)}",
                        "--{key}")


def check_writable(flag: str, path: str | None, is_file: bool) -> None:
    """A clear error before training when an output path cannot be written: a probe file is
    created (and removed) in the nearest existing folder, since os.access says yes to root
    even where nothing can be written (/proc, a read-only mount)."""
    if not path:
        return
    path = os.path.abspath(os.path.expanduser(path))
    folder = os.path.dirname(path) if is_file else path
    probe = folder
    while not os.path.exists(probe):  # the nearest existing parent must be writable
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if is_file and os.path.isdir(path):
        raise RLBaseError(f"{flag}={path} is a folder; give a file name such as model.zip")
    if not os.path.isdir(probe):
        raise RLBaseError(f"{flag}={path} cannot be written: {probe} is not a folder")

    try:  # a subfolder, since the path may need new ones
        with tempfile.TemporaryDirectory(dir=probe, prefix=".rlbase-probe-"):
            pass
    except OSError as exc:
        raise RLBaseError(f"{flag}={path} cannot be written: {probe} is not writable "
                          f"({exc.strerror or exc})") from None


def build_env(args: Any, env_type: str, num_env: int, seed: int | None,
              env_kwargs: dict[str, Any] | None = None) -> Any:
    kwargs = dict(env_kwargs or {})
    if args.save_video_interval:
        kwargs["render_mode"] = "rgb_array"
    env = make_vec_env(args.env, env_type, num_env, seed, reward_scale=args.reward_scale,
                       env_kwargs=kwargs or None, monitor_dir=args.log_path,
                       vec_env=args.vec_env, monitor_append=bool(args.resume))
    if args.check_finite:
        env = VecCheckFinite(env)
    if args.normalize:
        env = VecNormalize(env, **getattr(args, "normalize_kwargs", {}))
    if args.save_video_interval:
        video_dir = os.path.join(args.log_path or ".", "videos")
        interval = args.save_video_interval
        env = VecVideoRecorder(env, video_dir, lambda step: step % interval == 0,
                               video_length=args.save_video_length)
    return env


class ProgressBar:
    """A tqdm bar on stderr, moved by the training loop's callback."""

    def __init__(self, total: int):
        self.total = total
        self.bar = tqdm(total=total, unit="step", dynamic_ncols=True, file=sys.stderr)

    def __call__(self, model: Any, info: dict[str, Any]) -> None:
        self.bar.n = min(self.total, int(info.get("num_timesteps", 0)))
        self.bar.refresh()
        if self.bar.n >= self.total:
            self.bar.close()

    def __repr__(self) -> str:
        return "progress bar"


def play_returns(model: Any, env_id: str, episodes: int, seed: int | None,
                 env_kwargs: dict[str, Any] | None = None) -> tuple[list[float], list[int]]:
    """The returns and lengths of ``episodes`` deterministic episodes of the trained policy on
    a fresh env (observations normalized as in training): what --play prints and what the
    benchmark reports."""
    env = model.normalized_like_training(evaluation_env(env_id, seed, env_kwargs, 12345))
    try:
        returns, lengths = run_episodes(model, env, episodes, deterministic=True)
    finally:
        env.close()
    return list(returns), list(lengths)


def play(model: Any, env_id: str, episodes: int, seed: int | None,
         env_kwargs: dict[str, Any] | None = None) -> list[float]:
    """Run the trained policy and print each episode's return."""
    returns, lengths = play_returns(model, env_id, episodes, seed, env_kwargs)
    for i, (ret, length) in enumerate(zip(returns, lengths)):
        print(f"episode {i + 1}: return {ret:.2f}, length {length}", flush=True)
    print(f"mean return over {len(returns)} episodes: {np.mean(returns):.2f}", flush=True)
    return returns


def checkpoint_args(args: Any) -> dict[str, Any]:
    """The learn() arguments for --checkpoint_interval, --checkpoint_path and --resume."""
    if not (args.checkpoint_interval or args.resume or args.checkpoint_path):
        return {}
    if args.checkpoint_interval < 0:
        raise RLBaseError(f"--checkpoint_interval must be >= 0, got {args.checkpoint_interval}")
    folder = args.checkpoint_path or (os.path.join(args.log_path, "checkpoints")
                                      if args.log_path else None)
    if folder is None:
        raise RLBaseError("--checkpoint_interval and --resume need --checkpoint_path or "
                          "--log_path (checkpoints go to <log_path>/checkpoints)")
    if args.resume == "must" and not list_checkpoints(folder):
        raise RLBaseError(f"--resume=must: no checkpoint in {folder} to resume from (check "
                          "--checkpoint_path/--log_path, or use --resume to start afresh)")
    return {"checkpoint_interval": args.checkpoint_interval, "resume": bool(args.resume),
            "checkpoint_path": folder}


def lock_outputs(args: Any, ckpt: dict[str, Any]) -> None:
    """Refuse a second run into the folders this one writes (rlbase.common.io.run_lock). A model
    file is written atomically, so --save_path needs no lock."""
    for flag, folder in (("--log_path", args.log_path),
                         ("--checkpoint_path", ckpt.get("checkpoint_path"))):
        if folder:
            lock_folder(folder, flag)


def eval_args(args: Any, alg_kwargs: dict[str, Any], env_kwargs: dict[str, Any]
              ) -> dict[str, Any]:
    """Periodic evaluation on a separate env of the same id: --eval_freq / --eval_episodes, or
    the algorithm's defaults for the env type when they ask for it (DQN on classic control
    keeps its best evaluated model). The defaults' values are taken out of ``alg_kwargs``."""
    freq, episodes = alg_kwargs.pop("eval_freq", 0), alg_kwargs.pop("eval_episodes", 5)
    freq = freq if args.eval_freq is None else args.eval_freq
    episodes = episodes if args.eval_episodes is None else args.eval_episodes
    if not freq:
        return {}
    if freq < 0 or episodes < 1:
        raise RLBaseError(f"--eval_freq must be >= 0 and --eval_episodes >= 1, got "
                          f"{freq} and {episodes}")
    return {"eval_env": evaluation_env(args.env, args.seed, env_kwargs),
            "eval_freq": freq, "eval_episodes": episodes}


def evaluation_env(env_id: str, seed: int | None, env_kwargs: dict[str, Any] | None,
                   seed_offset: int = 1000) -> Any:
    """The env that periodic evaluation scores on (the CLI's and the benchmark's), and, with
    another seed offset, the one --play plays on."""
    return make_vec_env(env_id, num_env=1, seed=None if seed is None else seed + seed_offset,
                        env_kwargs=env_kwargs or None, monitor_dir=None)


def fallback_folders(args: Any, ckpt: dict[str, Any]) -> list[str]:
    """Where a model goes when --save_path is not given or cannot be written, in order: the
    checkpoint folder, the log folder, the current folder, the system temporary folder (each
    once, as absolute paths)."""
    folders = (ckpt.get("checkpoint_path"), args.log_path, ".", tempfile.gettempdir())
    return list(dict.fromkeys(os.path.abspath(os.path.expanduser(f)) for f in folders if f))


def save_model(model: Any, path: str, args: Any, ckpt: dict[str, Any]) -> str:
    """Save; if that fails (disk full, folder gone), keep the model in ``<alg>_unsaved.zip``
    in the first folder of :func:`fallback_folders` where it can be written (the folder of
    ``path`` is not tried again), say where in one ``rlbase: error:`` line and exit with
    status 1: a finished run is lost only when every folder fails, and a model not written
    where asked is never reported as success."""
    try:
        model.save(path)
        return path
    except OSError as exc:
        failed = [f"{path} ({exc})"]
        folders = fallback_folders(args, ckpt)  # (each once: the path's own is not tried again)
        for folder in [f for f in folders if f != os.path.dirname(os.path.abspath(path))]:
            fallback = os.path.join(folder, f"{args.alg}_unsaved.zip")
            try:
                model.save(fallback)
                where = f"the model is in {fallback}"
                break
            except OSError as other:
                failed.append(f"{fallback} ({other})")
        else:
            where = f"nor could {', '.join(failed[1:]) or 'any other folder'}: the model is lost"
        print(f"rlbase: error: could not write {failed[0]}; {where}", file=sys.stderr,
              flush=True)
        raise SystemExit(1) from None


def check_media_packages(args: Any) -> None:
    """--save_plots / --save_videos need optional packages: check before training."""
    needs = []
    if args.save_plots:
        needs += [("matplotlib", "plot"), ("pandas", "plot")]
    if args.save_videos or args.save_video_interval:
        needs += [("imageio_ffmpeg", "video")]
    for module, extra in needs:
        if importlib.util.find_spec(module) is None:
            raise RLBaseError(f"{module} is not installed: --save_plots/--save_videos need it "
                              f"(pip install 'rlbase[{extra}]')")


def main(argv: list[str] | None = None) -> Any:
    """Train (and save) as the flags ask, then play and write media."""
    try:
        # From the start: a SIGINT/SIGTERM during startup or a save stops cleanly too. Playing
        # and media come after, with the default handlers (a Ctrl-C there ends them at once).
        with graceful_interrupt():
            model, args, env_kwargs, rank = train(argv)
        if args.play and rank == 0:
            play(model, args.env, args.play_episodes, args.seed, env_kwargs)
        if rank == 0:
            save_media(model, args, env_kwargs)
        return model
    finally:
        release_all()  # a caller's next run in this process may use the same folders


def train(argv: list[str] | None) -> tuple[Any, Any, dict[str, Any], int]:
    """Everything up to the saved model: (model, args, env kwargs, MPI rank)."""
    parser = common_arg_parser()
    pre = OneLineParser(add_help=False, prog=parser.prog)  # the algorithm first: its flags follow
    for flag in ("--alg", "--algo", "--env"):
        pre.add_argument(flag)
    for flag in ("--load_path", "--conf-file"):
        pre.add_argument(flag, type=path_arg)
    known = pre.parse_known_args(argv)[0]
    # A saved model's file names its algorithm: --alg may be left out when loading one; so
    # does a --conf-file that rlbase wrote (its row records algo).
    saved = load_file(known.load_path)[0] if known.load_path else {}
    alg_name = model_file_algorithm(known.algo or known.alg, known.load_path, saved) \
        or conf_file_algorithm(known.conf_file, known.env) or parser.get_default("alg")
    parser.set_defaults(alg=alg_name)
    if alg_name in registry.available_algorithms() or alg_name in registry.ALIASES:
        add_config_flags(parser, registry.config_class(registry.resolve(alg_name)[0]))
    args, unknown = parser.parse_known_args(argv)
    flags = config_flags(args)
    extra = parse_unknown_args([f"--{k}={v}" for k, v in flags.items()] + unknown)
    zoo = bool(args.algo or args.conf_file or args.hyperparams)
    zoo_flags(args)
    alg, preset = registry.resolve(args.alg)
    env_kwargs = parse_env_kwargs(args.env_kwargs)
    if args.save_plots and not args.log_path:
        raise RLBaseError("--save_plots plots the monitor and progress files of --log_path: "
                          "give --log_path too")
    if args.save_videos < 0:
        raise RLBaseError(f"--save_videos must be a number of episodes >= 0, got "
                          f"{args.save_videos}")
    if args.num_env is not None and args.num_env < 1:
        raise RLBaseError(f"--num_env must be at least 1, got {args.num_env}")
    if args.play_episodes < 1:
        raise RLBaseError(f"--play_episodes must be a number of episodes >= 1, got "
                          f"{args.play_episodes}")
    for flag in ("save_path", "log_path", "checkpoint_path", "load_path", "conf_file"):
        if getattr(args, flag, None) == "":
            raise RLBaseError(f"--{flag} is empty: give a path, or leave the flag out")
    check_media_packages(args)
    for flag in ("save_path", "log_path", "checkpoint_path"):
        check_writable(f"--{flag}", getattr(args, flag), is_file=flag == "save_path")
    if args.deterministic_ops:  # read by every seeded run's set_global_seeds

        os.environ[DETERMINISTIC_OPS_ENV] = "1"
    import_tensorflow_quietly()
    entry = registry.get_algorithm(alg)

    import_gym_packages(args.gym_packages)
    check_env_id(args.env)
    env_type = env_type_of(args.env, args.env_type)
    zoo_row: dict[str, Any] = {}
    if zoo:
        alg_kwargs, zoo_row, n_timesteps = zoo_settings(args, entry, env_type)
        if args.num_timesteps is None:
            args.num_timesteps = n_timesteps
    else:  # (Baselines' her settings are complete: no env-type row under them)
        alg_kwargs = env_type_defaults(entry.name, env_type) if args.alg != "her" else {}
    total = parse_num_timesteps("1e6" if args.num_timesteps is None else args.num_timesteps,
                                allow_zero=bool(args.load_path))
    alg_kwargs.update(copy.deepcopy(preset))
    num_env, network = alg_kwargs.pop("num_env", None), alg_kwargs.pop("network", None)
    num_env = args.num_env or num_env or os.cpu_count() or 1
    alg_kwargs = without_other_networks_arguments(entry, alg_kwargs, network, args.network)
    network = args.network or network or "mlp"
    # Popped whatever the flag says: a default left in alg_kwargs would reach learn().
    normalize = alg_kwargs.pop("normalize", False)
    args.normalize_kwargs = normalize if isinstance(normalize, dict) else {}
    args.normalize = bool(normalize) or args.normalize
    if args.alg == "her":
        refuse_baselines_names(extra)
    check_extra_args(alg, entry, network, extra)
    # The user's flags, in any accepted spelling, replace the defaults' values of the same
    # parameters (a row's target_update_interval under --target_network_update_freq).
    alg_kwargs = user_over_defaults(alg, alg_kwargs, extra)
    ckpt = checkpoint_args(args)
    alg_kwargs.update(ckpt)
    if args.load_path:
        registry.check_model_metadata(args.load_path, saved, num_env)
        # A model saved with env kwargs keeps them.
        if saved.get("vec_normalize") and not args.normalize:
            raise RLBaseError(f"{args.load_path} was trained behind VecNormalize: pass "
                              "--normalize (the file's statistics are loaded into it)")
        if args.env_kwargs is None:
            # (files before the typed configs kept them among the hyperparameters)
            env_kwargs = dict(saved.get("env_kwargs") or
                              (saved.get("hyperparameters") or {}).get("env_kwargs") or {})

    with stop_at_once():  # it makes one env, whose constructor may hang
        check_env_kwargs(args.env, env_kwargs)
    abort_on_error()  # under mpiexec a rank's crash ends every rank (no job hangs)
    rank = mpi_rank()
    formats = log_formats(args) if rank == 0 else []
    if rank == 0:
        lock_outputs(args, ckpt)
    # A resumed run appends to its logs (the loop drops the rows past its checkpoint).
    logger.configure(args.log_path, formats, append=bool(args.resume))
    if args.log_path and rank == 0:
        write_run_metadata(args.log_path, args.alg, args.env, args.seed, num_env)
        if zoo:
            write_config(os.path.join(args.log_path, "config.yml"), args.alg, args.env,
                         args.seed, total, zoo_row)
    if args.env_timeout is not None:  # read where rlbase makes subprocess workers

        os.environ[ENV_TIMEOUT_VARIABLE] = str(args.env_timeout)
    with stop_at_once():  # an env constructor that hangs must not outlast a SIGTERM
        env = build_env(args, env_type, num_env, args.seed, env_kwargs)
    if args.alg == "her":  # Baselines' settings derived from the episode length

        spec = env.get_attr("spec", indices=[0])[0]
        alg_kwargs.update(horizon_settings(getattr(spec, "max_episode_steps", None),
                                           env.num_envs, extra))
    alg_kwargs.update(eval_args(args, alg_kwargs, env_kwargs))
    show_progress = rank == 0 and not args.no_progress and (sys.stderr.isatty() or
                                                            args.progress)
    if show_progress and "callback" not in alg_kwargs and total > 0:
        alg_kwargs["callback"] = ProgressBar(total)
    if rank == 0:  # under mpiexec, one banner for the job
        print(start_banner(args.alg, entry, {**alg_kwargs, "seed": args.seed}, total,
                           num_env, network, args.env, env_type), flush=True)
    # Ctrl-C or SIGTERM stops at the learn loop's next safe point (rlbase.common.loops.signals); the
    # model (and, with checkpoints, a checkpoint) is saved and the exit status is 130.
    if any_rank(stop_requested()):
        env.close()
        if rank == 0:
            print("Stopped before training: nothing to save", flush=True)
        raise StopExit
    try:
        model = entry.learn(env=env, network=network, seed=args.seed, total_timesteps=total,
                            load_path=args.load_path, **alg_kwargs)
    finally:
        env.close()
    if env_kwargs:  # saved with the model: playing it later makes the same envs
        model.env_kwargs = env_kwargs
    # Every rank takes the same branch, even when the signal reached only some of them.
    if any_rank(stop_requested()):
        save_interrupted(model, args, ckpt, rank)
    if args.save_path and rank == 0:
        kept = save_model(model, args.save_path, args, ckpt)
        print(f"Saved model to {kept}", flush=True)
        if stop_requested():  # a SIGINT/SIGTERM during the save: it was finished first
            print(f"Interrupted during the final save at {model.num_timesteps} timesteps: "
                  f"saved model to {kept}", flush=True)
            raise StopExit
    return model, args, env_kwargs, rank


def start_banner(name: str, entry: Any, alg_kwargs: dict[str, Any], total: int, num_env: int,
                 network: Any, env_id: str, env_type: str) -> str:
    """The run's first line: the algorithm as the user named it (and what it runs on, for an
    alias such as td3) and the settings learn() will resolve, under their own names and
    units, every one of them (a deprecated spelling shows as its field)."""
    alg = name if registry.resolve(name)[0] == name else f"{name} ({entry.name})"
    given, rest = entry.config.split({k: v for k, v in alg_kwargs.items()
                                      if k not in ("eval_env", "callback")})
    # warn=False: learn() warns about deprecated spellings, once.
    config = entry.config.build(given, num_env, warn=False).to_dict()
    network_kwargs = {k: v for k, v in rest.items()
                      if k not in CLI_OWNED and k not in entry.learn_parameters()}
    extra = f", network arguments {network_kwargs}" if network_kwargs else ""
    verb = "Playing" if total == 0 else "Training"
    return (f"{verb} {alg} on {env_id} ({env_type}) for {total} steps with {num_env} env(s), "
            f"network {getattr(network, '__name__', network)}{extra}, config {config}")


def model_file_algorithm(given: str | None, path: str | None, saved: dict[str, Any]
                         ) -> str | None:
    """The algorithm to load ``path`` with: ``given`` (--alg/--algo, which must agree with the
    file, an alias such as td3 included) or, when not given, the one the file records."""
    if not path:
        return given
    recorded = saved.get("algorithm")
    if not isinstance(recorded, str):
        raise RLBaseError(f"model file {path} records no algorithm")
    if given is None:
        return recorded
    if given in registry.ALIASES or given in registry.available_algorithms():
        if registry.resolve(given)[0] != recorded:
            raise RLBaseError(f"--alg={given} but {path} holds a '{recorded}' model: use "
                              f"--alg={recorded} or leave --alg out")
    return given


def conf_file_algorithm(path: str | None, env_id: str | None) -> str | None:
    """The algorithm a hyperparameter file records (the ``algo`` of the env's row, else the
    one algo all its rows agree on), for --conf-file without --alg/--algo; None when it
    records none (the zoo's own files), and the CLI's default then applies."""
    if not path:
        return None
    rows = read_file(path)
    row = rows.get(env_id or "")
    chosen = [row] if row is not None and "algo" in row else list(rows.values())
    algos = {str(r["algo"]) for r in chosen if "algo" in r}
    return algos.pop() if len(algos) == 1 else None


def zoo_flags(args: Any) -> None:
    """rl-baselines3-zoo's flags onto the CLI's own (--algo, -n, -f, --n-eval-envs,
    --device)."""
    if args.algo:
        args.alg = args.algo
    if args.n_timesteps is not None:
        args.num_timesteps = args.n_timesteps
    if args.n_eval_envs != 1:
        raise RLBaseError(f"--n-eval-envs={args.n_eval_envs}: rlbase evaluates on one env "
                          "(use --eval-episodes for more episodes)")
    if args.device not in ("auto", "cpu", "cuda", "gpu"):
        raise RLBaseError(f"--device must be auto, cpu or cuda, got {args.device!r}")
    if args.device in ("cuda", "gpu"):
        import tensorflow as tf  # lazy: only --device=cuda needs it before training

        if not tf.config.list_physical_devices("GPU"):
            print(f"rlbase: note: --device {args.device} ignored: no GPU visible, training on "
                  "the CPU", file=sys.stderr, flush=True)
    if args.log_folder and not args.log_path:
        args.log_path = next_run_folder(args.log_folder, args.alg, args.env)
    if args.log_folder and not args.save_path:  # the zoo keeps the trained model beside its logs
        args.save_path = os.path.join(args.log_path, f"{args.env}.zip")


def without_other_networks_arguments(entry: Any, defaults: dict[str, Any], row_network: Any,
                                     chosen: Any) -> dict[str, Any]:
    """A defaults row's network arguments belong to the row's network: under --network naming
    another one they are dropped (that network starts from its own defaults), the row's
    algorithm settings kept."""
    if not chosen or not row_network or chosen == row_network:
        return defaults
    keep = set(entry.learn_parameters()) | {"network", "num_env", "normalize", "eval_freq",
                                             "eval_episodes"}
    return {k: v for k, v in defaults.items() if k in keep}


def zoo_settings(args: Any, entry: Any, env_type: str) -> tuple[dict[str, Any], dict[str, Any],
                                                                str | None]:
    """Zoo mode: the CLI's defaults dict from the row of --conf-file or
    rlbase/hyperparams/<algo>.yml for the env (with --hyperparams), the resolved row (for
    config.yml) and the row's n_timesteps. Every key is checked here, naming the row."""
    row, where = resolve_row(args.alg, args.env, env_type, args.conf_file, args.hyperparams)
    if args.seed is None and row.get("seed") is not None:
        args.seed = int(row["seed"])
    row.pop("seed", None)
    settings = row_settings(args.alg, row, where, env_type=env_type, env_id=args.env)
    alg_kwargs = {"num_env": 1, **flat(args.alg, settings)}  # the zoo's n_envs default
    alg_kwargs = without_other_networks_arguments(entry, alg_kwargs, alg_kwargs.get("network"),
                                                  args.network)
    network = args.network or alg_kwargs.get("network") or "mlp"
    params = {k: v for k, v in alg_kwargs.items()
              if k not in ("network", "num_env", "normalize", "eval_freq", "eval_episodes")}
    try:
        check_extra_args(entry.name, entry, network, params)
    except RLBaseError as exc:
        raise RLBaseError(f"{where}: {exc}") from None
    for key in ("algo", "env", "n_timesteps"):
        row.pop(key, None)
    steps = None if settings.n_timesteps is None else str(settings.n_timesteps)
    return alg_kwargs, row, steps


def save_interrupted(model: Any, args: Any, ckpt: dict[str, Any], rank: int) -> None:
    """After a stop request: rank 0 saves the model, every rank waits for that save, and all
    exit with status 130 together (no MPI_Abort, which would kill rank 0 mid-write)."""
    if rank == 0:
        target = args.save_path if args.save_path else \
            os.path.join(fallback_folders(args, ckpt)[0], f"{args.alg}_interrupted.zip")
        kept = save_model(model, target, args, ckpt)
        print(f"Interrupted at {model.num_timesteps} timesteps: saved model to {kept}",
              flush=True)
    barrier()
    raise StopExit


def write_run_metadata(log_path: str, alg: str, env_id: str, seed: int | None,
                       num_env: int) -> None:
    """metadata.json in the log folder: what plots name their panels and curves by (``alg``
    as the user named it: td3, not the ddpg it runs on)."""
    os.makedirs(log_path, exist_ok=True)
    with open(os.path.join(log_path, "metadata.json"), "w", encoding="utf-8") as f:
        json.dump({"algorithm": alg, "env_id": env_id, "seed": seed, "num_env": num_env,
                   "rlbase": rlbase.__version__}, f)


def log_formats(args: Any) -> list[str]:
    """--log_format, else $RLBASE_LOG_FORMAT (or its aliases $SB3_LOG_FORMAT,
    $OPENAI_LOG_FORMAT), else stdout (+ log and csv with --log_path); --log_path defaults to
    $RLBASE_LOGDIR (or $SB3_LOGDIR, $OPENAI_LOGDIR)."""
    text = args.log_format or env_log_format()
    if text:
        formats = [f.strip() for f in text.split(",") if f.strip()]
    else:
        formats = ["stdout", "log", "csv"] if args.log_path else ["stdout"]
    if args.log_path is None:
        args.log_path = env_logdir()
    if set(formats) - {"stdout"} and not args.log_path:
        raise RLBaseError(f"log formats {', '.join(formats)} write files: give --log_path (or "
                          "set RLBASE_LOGDIR)")
    return formats


def save_media(model: Any, args: Any, env_kwargs: dict[str, Any]) -> None:
    """--save_plots and --save_videos, after training."""
    if args.save_plots:
        seed = "" if args.seed is None else f", seed {args.seed}"
        title = f"{args.alg} on {args.env}{seed}"
        print(f"Saved learning curves to {save_plots(args.log_path, title=title)}", flush=True)
    if args.save_videos:
        folder = os.path.join(args.log_path or ".", "videos")
        for path in save_videos(model, args.env, args.save_videos, folder, seed=args.seed,
                                env_kwargs=env_kwargs):
            print(f"Saved video {path}", flush=True)


_DEPRECATED = re.compile(r"'(\w+)' is deprecated, use '(\w+)'")


def run_cli(main_fn: Callable[[], Any]) -> None:
    """One clear line and exit status 2 for a user's mistake."""
    # A deprecated flag's warning is the user's to see (Python shows DeprecationWarnings only
    # for code in __main__; here the user's "line" is the command line).
    warnings.filterwarnings("default", message=r".*' is deprecated, use '",
                            category=DeprecationWarning)
    shown = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        """A deprecated spelling's warning as one line in the CLI's words (its flags), since no
        line of the user's code is involved; any other warning as Python shows it."""
        text = str(message)
        if issubclass(category, DeprecationWarning) and _DEPRECATED.search(text):
            text = _DEPRECATED.sub(r"--\1 is deprecated, use --\2", text)
            print(f"rlbase: warning: {text}", file=sys.stderr, flush=True)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        main_fn()
        # Done and saved: a signal while the interpreter shuts down must not turn rc 0 into a
        # death by signal.
        ignore_stop_signals()
    except RLBaseError as exc:
        print(f"rlbase: error: {exc}", file=sys.stderr, flush=True)
        abort_job(2)  # under mpiexec, the other ranks must not wait for this one forever
        sys.exit(2)
    except StopExit:
        raise  # every rank stops together after the save: nothing to abort
    except SystemExit as exc:
        if exc.code:
            abort_job(exc.code if isinstance(exc.code, int) else 1)
        raise
    finally:
        warnings.showwarning = shown


def cli() -> None:
    """Entry point of ``python -m rlbase.run``."""
    run_cli(main)


if __name__ == "__main__":
    cli()
