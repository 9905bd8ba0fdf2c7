"""Making envs and parsing the CLI's arguments."""

from __future__ import annotations

import ast
import contextlib
import difflib
import importlib
import importlib.util
import inspect
import os
from functools import partial
from typing import Any, Callable

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import load_env_creator, parse_env_id

from rlbase.common.arg_types import check_keyword_types
from rlbase.common.envs.atari_wrappers import make_atari_vec_env
from rlbase.common.envs.monitor import Monitor
from rlbase.common.errors import RLBaseError
from rlbase.common.logs import logger
from rlbase.common.misc_util import env_seed
from rlbase.common.mpi_util import mpi_rank
from rlbase.common.vec_env import (
    DummyVecEnv,
    GymVecEnv,
    SubprocVecEnv,
    VecEnv,
    VecEnvWrapper,
)
from rlbase.common.vec_env.vec_monitor import VecMonitor
from rlbase.common.vec_env.vec_reward_scale import VecRewardScale

# Ids gymnasium retired for a successor that is the same env at default arguments; papers,
# tutorials and Baselines-era scripts still use them. Taxi-v4 (gymnasium 1.3) only fixed the
# optional is_rainy and fickle_passenger variants.
RETIRED_IDS = {"Taxi-v3": "Taxi-v4"}


def import_gym_packages(names: list[str] | None) -> None:
    """Import packages that register gymnasium envs (the CLI's --gym_packages)."""
    for name in names or []:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise RLBaseError(f"--gym_packages: cannot import {name!r} ({exc})") from None


def registered_id(env_id: str) -> str:
    """The registry id of ``env_id``; gymnasium's ``module:EnvId-v0`` form imports the
    module (which registers its envs) and names ``EnvId-v0``."""
    if ":" not in env_id:
        return env_id
    module, _, name = env_id.partition(":")
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise RLBaseError(f"env id '{env_id}': cannot import module {module!r} ({exc})") \
            from None
    return name


def check_env_id(env_id: str) -> None:
    """A clear error, with close ids suggested, for an id gymnasium does not know, and for an
    env whose physics engine or ROMs are not installed."""
    name = registered_id(env_id)
    if name not in gym.registry and ("NoFrameskip" in name or name.startswith("ALE/")):
        if not _register("ale_py"):
            raise RLBaseError(f"'{env_id}' is an Atari game and ale-py is not installed: "
                              "pip install 'rlbase[atari]'")
    if name not in gym.registry and "/" not in name:
        # ale-py also registers the plain ids Baselines-era scripts use (Pong-v0, Pong-v4):
        # loaded for an id gymnasium alone does not know.
        _register("ale_py")
    if name not in gym.registry and name.startswith(ROBOTICS_PREFIXES):
        if not _register_robotics():
            raise RLBaseError(f"'{env_id}' is a gymnasium-robotics env and gymnasium-robotics "
                              "is not installed: pip install 'rlbase[robotics]'")
    if name not in gym.registry and name.startswith("MinAtar/") and not _register_minatar():
        raise RLBaseError(f"'{env_id}' is a MinAtar game and minatar is not installed: "
                          "pip install 'rlbase[minatar]'")
    successor = RETIRED_IDS.get(name)
    if name not in gym.registry and successor in gym.registry:
        spec = gym.spec(successor)
        gym.register(name, entry_point=spec.entry_point, kwargs=dict(spec.kwargs),
                     max_episode_steps=spec.max_episode_steps,
                     reward_threshold=spec.reward_threshold)
    version_problem = _version_problem(env_id, name)
    if version_problem:
        raise RLBaseError(version_problem)
    # (after the version: an old id's successor is the first fix)
    if name.startswith(ROBOTICS_PREFIXES[:3]) and _mujoco_breaks_robotics():
        raise RLBaseError(f"'{env_id}' cannot be built by gymnasium-robotics on the installed "
                          "mujoco (>= 3.12: its joint-type check fails): pip install "
                          "'rlbase[robotics]' (it brings mujoco<3.12)")
    if name not in gym.registry:
        close = difflib.get_close_matches(name, list(gym.registry), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else \
            "; see gymnasium.pprint_registry() for the ids installed"
        raise RLBaseError(f"unknown env id '{env_id}'{hint}")
    kind = get_env_type(env_id)
    engine = ENGINES.get(kind)
    if engine is not None and importlib.util.find_spec(engine[0]) is None:
        raise RLBaseError(f"'{env_id}' needs {engine[1]}, which is not installed: "
                          f"pip install 'rlbase[{engine[2]}]'")


def _version_problem(env_id: str, name: str) -> str | None:
    """The one-line error for an id whose version gymnasium cannot make: one it does not
    register while it registers others of the same name, or one it keeps only to say it was
    removed (the mujoco-py v2/v3 MuJoCo envs Baselines used: HalfCheetah-v2, Hopper-v3), or
    one gymnasium-robotics registers on mujoco-py (FetchReach-v1, Baselines' HER id)."""
    def removed(env_name: str) -> bool:  # gymnasium keeps them with an entry point that raises
        entry = gym.registry[env_name].entry_point
        return getattr(entry, "__name__", "") == "_raise_mujoco_py_error" or \
            _needs_mujoco_py(entry)

    was_removed = name in gym.registry and removed(name)
    if name in gym.registry and not was_removed:
        return None
    try:
        namespace, base, version = parse_env_id(name)
    except gym.error.Error:
        return None
    prefix = f"{namespace}/" if namespace else ""
    usable = sorted(v for ns, b, v in (parse_env_id(k) for k in gym.registry)
                    if ns == namespace and b == base and v is not None
                    and not removed(f"{prefix}{base}-v{v}"))
    gone = "needs mujoco-py, which no longer installs" \
        if was_removed and _needs_mujoco_py(gym.registry[name].entry_point) else \
        "was removed from gymnasium (it needed mujoco-py)"
    if was_removed and not usable:
        return f"env id '{env_id}' {gone}"
    if not usable or version is None:
        return None
    newest = f"{prefix}{base}-v{usable[-1]}"
    listed = ", ".join(f"{prefix}{base}-v{v}" for v in usable)
    if was_removed:
        return (f"env id '{env_id}' {gone}; use '{newest}' (registered versions: "
                f"{listed})")
    return (f"unknown env id '{env_id}': version v{version} is not registered; use "
            f"'{newest}' (registered versions: {listed})")


def _needs_mujoco_py(entry: Any) -> bool:
    """Whether an entry point is one of gymnasium-robotics' mujoco-py classes
    (``gymnasium_robotics.envs:MujocoPyFetchReachEnv`` behind FetchReach-v1/v2, HandReach-v0):
    registered still, but mujoco-py no longer installs on today's Pythons."""
    return isinstance(entry, str) and entry.partition(":")[2].startswith("MujocoPy") \
        and importlib.util.find_spec("mujoco_py") is None


# Env types whose physics engine is an optional package: (module, what, rlbase extra).
ENGINES = {"mujoco": ("mujoco", "MuJoCo", "mujoco"), "box2d": ("Box2D", "Box2D", "box2d"),
           "atari": ("ale_py", "ale-py (Atari ROMs)", "atari"),
           "minatar": ("minatar", "MinAtar", "minatar")}
ENV_TYPES = ("atari", "classic_control", "box2d", "mujoco", "toy_text", "minatar", "custom")


# Ids gymnasium-robotics registers (Fetch, Shadow hand, Adroit, mazes, Franka kitchen).
ROBOTICS_PREFIXES = ("Fetch", "HandManipulate", "HandReach", "AdroitHand", "PointMaze",
                     "AntMaze", "FrankaKitchen")


def _register(package: str) -> bool:
    """Import an optional package that registers envs; False when it is not installed."""
    try:
        module = importlib.import_module(package)
    except ImportError:
        return False
    gym.register_envs(module)
    return True


_register_robotics = partial(_register, "gymnasium_robotics")


def _register_minatar() -> bool:
    """Register MinAtar's ``MinAtar/<Game>-v0/v1`` ids; False when minatar is not installed.
    Its wheel registers them through a ``gymnasium.envs`` entry point, which gymnasium 1.x no
    longer reads, so its ``register_envs()`` is called here."""
    try:
        from minatar import gym as minatar_gym  # optional: the minatar extra
    except ImportError:
        return False
    if not any(name.startswith("MinAtar/") for name in gym.registry):  # once: no overriding
        minatar_gym.register_envs()
    return True


def _mujoco_breaks_robotics() -> bool:
    """Whether the installed mujoco makes gymnasium-robotics' Fetch and hand envs fail: from
    3.12 its enums no longer equal numpy integers (``enum == np.int32(2)`` is False), which
    gymnasium-robotics' ``set_joint_qpos`` asserts on."""
    try:
        import mujoco  # optional: the mujoco extra
    except ImportError:
        return False
    slide = mujoco.mjtJoint.mjJNT_SLIDE
    return not slide == np.int32(int(slide))


def get_env_type(env_id: str) -> str:
    """'atari', 'classic_control', 'box2d', 'mujoco', 'toy_text', 'minatar' or 'custom', from
    the id's entry point in gymnasium's registry."""
    name = registered_id(env_id)
    if name not in gym.registry:
        check_env_id(env_id)
    creator = gym.registry[name].entry_point
    entry = creator if isinstance(creator, str) else \
        f"{getattr(creator, '__module__', '')}:{getattr(creator, '__name__', '')}"
    if entry.startswith("ale_py"):
        return "atari"
    if entry.startswith("minatar"):
        return "minatar"
    for kind in ("classic_control", "box2d", "mujoco", "toy_text"):
        if f"envs.{kind}" in entry:
            return kind
    return "custom"


def env_type_of(env_id: str, given: str | None) -> str:
    """The env type for the defaults: ``given`` (checked) or detected from the registry."""
    if given is None:
        return get_env_type(env_id)
    if given not in ENV_TYPES:
        close = difflib.get_close_matches(given, ENV_TYPES, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise RLBaseError(f"unknown env type '{given}'{hint} (allowed: {', '.join(ENV_TYPES)})")
    return given


def parse_env_kwargs(text: str | None) -> dict[str, Any]:
    """``--env_kwargs="{'key': value}"``: a Python dict literal (ast.literal_eval)."""
    if not text:
        return {}
    must = "--env_kwargs must be a Python dict literal such as \"{'continuous': True}\""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError) as exc:
        raise RLBaseError(f"{must}, got {text!r} ({exc})") from None
    except (RecursionError, MemoryError):
        raise RLBaseError(f"{must}; the {len(text):,} characters given are nested too deeply "
                          "to read") from None
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise RLBaseError(f"--env_kwargs must be a dict with string keys, got {text!r}")
    return value


# gymnasium.make's own keywords (besides the env's): not passed to the env's constructor.
MAKE_KWARGS = ("render_mode", "max_episode_steps", "disable_env_checker", "autoreset",
               "apply_api_compatibility")


def check_env_kwargs(env_id: str, kwargs: dict[str, Any] | None) -> None:
    """A one-line RLBaseError, naming the env and the keyword, for ``--env_kwargs`` the env
    does not take: a name its constructor has no parameter for, a ``render_mode`` it does not
    render, or a value its constructor refuses (one env is made, and closed, to find out)."""
    if not kwargs:
        return

    name = registered_id(env_id)
    spec = gym.spec(name)
    try:
        creator = load_env_creator(spec.entry_point) if isinstance(spec.entry_point, str) \
            else spec.entry_point
    except Exception:  # an entry point that cannot be imported: gym.make below says why
        creator = None
    if creator is not None:
        try:
            params = inspect.signature(creator).parameters
        except (TypeError, ValueError):
            params = None
        if params is not None and not any(p.kind == p.VAR_KEYWORD for p in params.values()):
            takes = [p for p in params if p not in ("self", "render_mode")]
            unknown = sorted(set(kwargs) - set(params) - set(MAKE_KWARGS))
            if unknown:
                raise RLBaseError(f"--env_kwargs: {env_id} does not take {', '.join(unknown)}; "
                                  f"it takes: {', '.join(takes + list(MAKE_KWARGS)) or 'none'}")
        if params is not None:
            # A value of another type than the parameter's default would be taken by the
            # constructor and fail only at the first step (Pendulum's g='ten').
            check_keyword_types(params, kwargs, env_id, "--env_kwargs: {key}")
        modes = list((getattr(creator, "metadata", None) or {}).get("render_modes") or [])
        mode = kwargs.get("render_mode")
        if mode is not None and (not isinstance(mode, str) or modes and mode not in modes):
            raise RLBaseError(f"--env_kwargs: {env_id} does not render render_mode={mode!r}; "
                              f"it renders: None, {', '.join(repr(m) for m in modes)}")
    try:
        env = gym.make(name, **kwargs)
    except (TypeError, ValueError, AttributeError, KeyError, AssertionError,
            gym.error.Error) as exc:
        what = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RLBaseError(f"--env_kwargs {kwargs!r}: {env_id} refused them ({what})") from None
    env.close()


def make_env(env_id: str, seed: int | None = None, reward_scale: float = 1.0,
             env_kwargs: dict[str, Any] | None = None,
             wrapper: Callable[[gym.Env], gym.Env] | None = None) -> gym.Env:
    """One gymnasium env, seeded through its spaces, optionally reward-scaled and wrapped
    (make_vec_env scales above its monitor instead, so its logged returns are unscaled)."""
    env = gym.make(env_id, **(env_kwargs or {}))
    if seed is not None:
        env.action_space.seed(seed)
    if reward_scale != 1.0:
        env = gym.wrappers.TransformReward(env, lambda r: float(r) * reward_scale)
    if wrapper is not None:
        env = wrapper(env)
    return env


VEC_ENV_KINDS = ("auto", "dummy", "subproc", "ale")


VecEnvClass = type[DummyVecEnv] | type[SubprocVecEnv]


class _LoggerDir:
    """make_vec_env's default monitor folder: the logger's (``logger.configure(dir)``), or
    no file when no folder was configured."""

    def __repr__(self) -> str:
        return "logger.get_dir()"


LOGGER_DIR = _LoggerDir()


def make_vec_env(env_id: str, env_type: str | None = None, num_env: int = 1,
                 seed: int | None = None, reward_scale: float = 1.0,
                 env_kwargs: dict[str, Any] | None = None, wrapper_kwargs: dict | None = None,
                 monitor_dir: str | os.PathLike[str] | None | _LoggerDir = LOGGER_DIR,
                 force_dummy: bool = False,
                 wrapper: Callable[[gym.Env], gym.Env] | None = None,
                 vec_env: str = "auto", monitor_append: bool = False) -> VecEnv:
    """``num_env`` copies of ``env_id`` as a VecEnv with episode monitoring (Baselines'
    signature; :func:`rlbase.common.envs.env_util.make_vec_env` is Stable-Baselines3's).

    env_type: 'atari' applies the DeepMind preprocessing (see rlbase.common.envs.atari_wrappers);
        None detects it from the registry.
    seed: env i on MPI rank r is seeded with seed + 10000 * r + i.
    monitor_dir: where VecMonitor writes ``<rank>.monitor.csv``; by default the folder given
        to ``logger.configure`` (none configured: no file); None: no file, statistics only.
    force_dummy: step all envs in this process even when num_env > 1 (same as 'dummy').
    vec_env: how the envs are stepped: 'dummy' (in this process), 'subproc' (a process per
        env), 'ale' (Atari only: ale-py's emulators in C++ threads, the fastest), or 'auto'
        ('ale' for Atari when ale-py has it and no frames are rendered, else as before).
    monitor_append: add to an existing monitor.csv (a resumed run) instead of replacing it.
    """
    check_env_id(env_id)
    env_type = env_type or get_env_type(env_id)
    if num_env < 1:
        raise RLBaseError(f"num_env must be at least 1, got {num_env}")
    if vec_env not in VEC_ENV_KINDS:
        raise RLBaseError(f"unknown vec_env '{vec_env}'; choose one of "
                          f"{', '.join(VEC_ENV_KINDS)}")
    if vec_env == "ale" and env_type != "atari":
        raise RLBaseError(f"vec_env 'ale' is for Atari envs only; '{env_id}' is {env_type}")
    if isinstance(monitor_dir, _LoggerDir):
        monitor_dir = logger.get_dir()
    vec_env = "dummy" if force_dummy else vec_env
    rank = mpi_rank()
    venv: VecEnv
    if env_type == "atari":
        venv = make_atari_vec_env(env_id, num_env, seed, wrapper_kwargs or {},
                                  env_kwargs or {}, vec_env=vec_env)
        venv.seed(env_seed(seed, 0, rank))
    else:
        # Cheap envs step faster in-process than across pipes.
        subproc = num_env > 1 and (vec_env == "subproc" or vec_env == "auto" and env_type
                                   not in ("classic_control", "toy_text", "minatar"))
        venv = vectorize(lambda i: make_env(env_id, env_seed(seed, i, rank), env_kwargs=env_kwargs,
                                            wrapper=wrapper),
                         num_env, SubprocVecEnv if subproc else DummyVecEnv,
                         first_seed=env_seed(seed, 0, rank))
    # Atari episodes end at every lost life; only whole games (reported by the env) count.
    monitor = VecMonitor(venv, filename=_monitor_file(monitor_dir),
                         games_only=env_type == "atari", append=monitor_append)
    # Scaled above the monitor: logged returns are the env's own reward sums.
    return monitor if reward_scale == 1.0 else VecRewardScale(monitor, reward_scale)


def vectorize(make_one: Callable[[int], gym.Env], n_envs: int,
              vec_env_cls: VecEnvClass = DummyVecEnv,
              vec_env_kwargs: dict[str, Any] | None = None,
              first_seed: int | None = None) -> GymVecEnv:
    """``vec_env_cls`` over ``make_one(0) ... make_one(n_envs - 1)`` (each called where the
    env runs), seeded at its first reset with ``first_seed + i`` for env ``i``: what both
    make_vec_env front doors build on."""
    if isinstance(n_envs, bool) or not isinstance(n_envs, int) or n_envs < 1:
        raise RLBaseError(f"n_envs must be a positive integer, got {n_envs!r}")
    venv = vec_env_cls([partial(make_one, i) for i in range(n_envs)],
                       **(vec_env_kwargs or {}))
    venv.seed(first_seed)
    return venv


def _monitor_file(monitor_dir: str | os.PathLike[str] | None) -> str | None:
    """``<monitor_dir>/<rank>.monitor.csv`` (None: no file)."""
    if monitor_dir is None:
        return None
    os.makedirs(monitor_dir, exist_ok=True)
    return os.path.join(monitor_dir, f"{mpi_rank()}.monitor.csv")


def _vec_monitor(venv: VecEnv, monitor_dir: str | os.PathLike[str] | None) -> VecMonitor:
    """A VecMonitor over ``venv``; it writes ``monitor_dir``'s file unless every env already
    writes its own through a :class:`~rlbase.common.envs.monitor.Monitor` (make_vec_env of
    rlbase.common.envs.env_util): one file per episode stream, never two writers of one file."""
    own_files = isinstance(venv, GymVecEnv) and all(venv.env_is_wrapped(Monitor)) and \
        all(name is not None for name in venv.get_attr("monitor_filename"))
    return VecMonitor(venv, filename=None if own_files else _monitor_file(monitor_dir))


def ensure_monitor(venv: VecEnv, monitor_dir: str | None = None) -> VecEnv:
    """``venv`` with a VecMonitor below every reward-changing wrapper (every algorithm counts
    the episodes a monitor reports, and their returns must be the env's own reward sums).

    With no monitor in the chain one is put right above the base VecEnv (the chain's wrappers
    are kept, so ``venv`` itself is returned); a monitor above a wrapper that declares
    ``changes_rewards`` (VecNormalize, VecRewardScale, or a user's own) is refused.
    """
    chain = [venv]  # venv, venv.venv, ... down to the base VecEnv
    while isinstance(chain[-1], VecEnvWrapper):
        chain.append(chain[-1].venv)
    monitors = [i for i, w in enumerate(chain) if isinstance(w, VecMonitor)]
    if monitors:
        below = [w for w in chain[monitors[0] + 1:]
                 if isinstance(w, VecEnvWrapper) and w.changes_rewards]
        if below:
            name = type(below[0]).__name__
            raise RLBaseError(f"the env's VecMonitor sits above its {name}, so it would log "
                              f"{name}'s rewards, not the env's: wrap the monitor inside, "
                              f"{name}(VecMonitor(venv)), or pass the env without a monitor")
        return venv
    monitor = _vec_monitor(chain[-1], monitor_dir)
    if len(chain) == 1:
        return monitor
    lowest = chain[-2]
    assert isinstance(lowest, VecEnvWrapper)
    lowest.venv = monitor
    return venv


def as_vec_env(env: VecEnv | gym.Env | str, seed: int | None = None,
               monitor_dir: str | os.PathLike[str] | None = None) -> VecEnv:
    """learn() takes a VecEnv, a gymnasium env or an env id: make it a VecEnv, seeded (at its
    next reset) when ``seed`` is given. A VecEnv keeps its wrappers; an env id or env is
    monitored (to ``monitor_dir`` when given)."""
    if isinstance(env, VecEnv):
        if seed is not None:
            env.seed(env_seed(seed, 0, mpi_rank()))
        return env
    if isinstance(env, str):
        return make_vec_env(env, num_env=1, seed=seed, monitor_dir=monitor_dir)
    if isinstance(env, gym.Env):
        venv = DummyVecEnv([lambda: env])
        venv.seed(env_seed(seed, 0, mpi_rank()))
        return _vec_monitor(venv, monitor_dir)
    raise RLBaseError(f"env must be a VecEnv, a gymnasium.Env or an env id, got "
                      f"{type(env).__name__}")


def parse_unknown_args(args: list[str]) -> dict[str, Any]:
    """``['--lr=1e-3', '--nsteps', '5', '--dueling']`` -> {'lr': 0.001, 'nsteps': 5,
    'dueling': True}. Values are Python literals; anything else stays a string."""
    out: dict[str, Any] = {}
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if not arg.startswith("--"):
            raise RLBaseError(f"unexpected argument '{arg}'; extra arguments must look like "
                              "--key=value")
        key, eq, value = arg[2:].partition("=")
        if not eq:
            value = rest.pop(0) if rest and not rest[0].startswith("--") else "True"
        key = key.replace("-", "_")
        out[key] = value
        with contextlib.suppress(ValueError, SyntaxError, MemoryError, RecursionError):
            out[key] = ast.literal_eval(value)
    return out
