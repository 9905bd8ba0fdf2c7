"""Hyperparameter files in rl-baselines3-zoo's format (``rlbase/hyperparams/<alg>.yml``).

A file maps an env id (``CartPole-v1``) or an env type (``atari``, ``classic_control``,
``box2d``, ``mujoco``, ``toy_text``: the row any env of that type falls back to) to a row:

* the zoo's keys: ``n_timesteps``, ``policy`` (``MlpPolicy``/``CnnPolicy`` or an rlbase
  network name), ``n_envs``, ``normalize`` (true or a dict string such as
  ``"{'norm_obs': False}"``), ``frame_stack``, ``env_wrapper``, ``policy_kwargs`` (a Python
  dict as a string; SB3's ``net_arch``/``activation_fn`` are translated), DDPG/TD3's
  ``noise_type``/``noise_std``;
* every other key is an algorithm parameter under any name the algorithm accepts (rlbase's,
  SB3's or a deprecated spelling), schedules written ``lin_<start>``.

A row keyed by an env id goes over the packaged file's ``_sb3_defaults`` row: SB3's
defaults where rlbase's ``learn()`` has others (a zoo row means SB3's defaults for what it leaves
out). A key rlbase cannot honour is a one-line error naming the file, the row and the key.
"""

from __future__ import annotations

import ast
import contextlib
import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import yaml

from rlbase import registry
from rlbase.common.arg_types import parse_policy_kwargs
from rlbase.common.errors import RLBaseError

HYPERPARAMS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                               "hyperparams")
ENV_TYPE_ROWS = ("atari", "classic_control", "box2d", "mujoco", "toy_text", "minatar", "custom")
# The row of SB3's defaults where rlbase's learn() differs: under every env id's row.
SB3_DEFAULTS = "_sb3_defaults"
# Keys a row may hold that are not algorithm parameters.
ZOO_KEYS = ("n_timesteps", "policy", "n_envs", "normalize", "frame_stack", "env_wrapper",
            "policy_kwargs", "noise_type", "noise_std", "algo", "env")
# SB3's policy classes -> rlbase's networks.
POLICIES = {"MlpPolicy": "mlp", "CnnPolicy": "cnn"}
# What rlbase does itself for every Atari env (rlbase.common.envs.atari_wrappers).
ATARI_WRAPPERS = ("stable_baselines3.common.atari_wrappers.AtariWrapper",)
ATARI_FRAME_STACK = 4
# The zoo's VecNormalize settings -> rlbase's VecNormalize arguments.
NORMALIZE_KEYS = {"norm_obs": "ob", "norm_reward": "ret", "clip_obs": "clipob",
                  "clip_reward": "cliprew", "gamma": "gamma", "epsilon": "epsilon"}
# The zoo's action noise kinds -> rlbase's noise_type prefix (DDPG/TD3).
NOISE_KINDS = {"normal": "normal", "ornstein-uhlenbeck": "ou"}


@dataclass
class Settings:
    """A row turned into what the CLI sets: its own settings and learn()'s arguments."""

    network: str | None = None
    num_env: int | None = None
    normalize: dict[str, Any] | None = None  # VecNormalize's arguments (None: no VecNormalize)
    n_timesteps: int | None = None
    params: dict[str, Any] = field(default_factory=dict)  # learn() and network arguments


def file_for(alg: str) -> str:
    """The packaged file of an algorithm or alias (``td3`` has its own; ``ppo2`` is ppo's)."""
    name = alg if alg == "td3" else registry.resolve(alg)[0]
    return os.path.join(HYPERPARAMS_DIR, f"{name}.yml")


def read_file(path: str) -> dict[str, dict[str, Any]]:
    """A zoo-format file's rows by key (YAML merge keys ``<<: *anchor`` work)."""
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except OSError as exc:
        raise RLBaseError(f"cannot read hyperparameter file {path}: {exc.strerror or exc}") \
            from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise RLBaseError(f"{path} is not valid YAML{line}") from None
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(r, dict) for r in data.values()):
        raise RLBaseError(f"{path} must map env ids (or env types) to rows of key: value")
    return {str(k): dict(v) for k, v in data.items()}


def find_row(rows: dict[str, dict[str, Any]], env_id: str, env_type: str | None,
             path: str) -> tuple[str, dict[str, Any]]:
    """The env id's row, else its env type's; a one-line error when neither is there."""
    for key in (env_id, env_type):
        if key is not None and key in rows:
            return key, dict(rows[key])
    raise RLBaseError(f"{path} has no row for {env_id}" +
                      (f" nor for its env type {env_type}" if env_type else "") +
                      f"; rows: {', '.join(rows) or 'none'}")


def parse_value(text: str, key: str = "") -> Any:
    """A value as the zoo writes one on the command line: a Python literal, else the text (a
    name such as ``MlpPolicy`` or ``nn.ReLU``, or ``dict(...)`` of such values, read later).
    Any other expression (a call, an operator) is a one-line error: nothing in it is run."""
    where = f"--hyperparams {key}:" if key else "--hyperparams"
    try:
        with contextlib.suppress(ValueError, SyntaxError):
            return ast.literal_eval(text)
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError:
            return text  # plain text (a path, words)
    except (RecursionError, MemoryError):
        raise RLBaseError(f"{where} the value ({len(text):,} characters) is nested too deeply "
                          "to read; give a Python literal") from None
    if not _names_and_literals(tree.body):
        raise RLBaseError(f"{where} {text!r} is not a Python literal (allowed: numbers, "
                          "strings, lists, dicts, dict(...), names such as nn.ReLU); "
                          "nothing in it is run")
    return text


def _names_and_literals(node: ast.AST) -> bool:
    """Whether ``node`` holds only literals, (dotted) names, containers and ``dict(k=v)``."""
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args \
            and all(kw.arg is not None and _names_and_literals(kw.value)
                    for kw in node.keywords)
    if isinstance(node, ast.Attribute):
        return _names_and_literals(node.value)
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _names_and_literals(node.operand)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_names_and_literals(v) for v in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _names_and_literals(k) and _names_and_literals(v)
                   for k, v in zip(node.keys, node.values))
    return False


def apply_overrides(row: dict[str, Any], pairs: list[str]) -> dict[str, Any]:
    """``--hyperparams key:value ...`` over a row."""
    out = dict(row)
    for pair in pairs:
        key, sep, value = pair.partition(":")
        if not sep or not key:
            raise RLBaseError(f"--hyperparams takes key:value pairs, got {pair!r}")
        out[key.strip()] = parse_value(value.strip(), key.strip())
    return out


def _normalize(value: Any, where: str) -> dict[str, Any] | None:
    if isinstance(value, bool):
        return {} if value else None
    settings = parse_policy_kwargs(value, where) if isinstance(value, str) else value
    if not isinstance(settings, dict):
        raise RLBaseError(f"{where}: normalize must be true/false or a dict, got {value!r}")
    unknown = sorted(set(settings) - set(NORMALIZE_KEYS))
    if unknown:
        raise RLBaseError(f"{where}: normalize key {unknown[0]!r} is not one rlbase has "
                          f"(valid: {', '.join(NORMALIZE_KEYS)})")
    return {NORMALIZE_KEYS[k]: v for k, v in settings.items()}


def _count(value: Any, key: str, where: str) -> int:
    if not registry.whole_number(value, 1):
        raise RLBaseError(f"{where}: {key} must be a whole number >= 1, got {value!r}")
    return int(value)


def row_settings(alg: str, row: dict[str, Any], where: str, env_type: str | None = None,
                 env_id: str | None = None) -> Settings:
    """A row as the CLI's settings; ``where`` (``file, row 'CartPole-v1'``) names it in
    errors. Parameters are checked by the algorithm's config (when it has one)."""
    algorithm, _ = registry.resolve(alg)
    row = dict(row)
    out = Settings()
    if "algo" in row and row.pop("algo") not in (alg, algorithm):
        raise RLBaseError(f"{where}: the row is for another algorithm than {alg}")
    if "env" in row and env_id is not None and row["env"] != env_id:
        raise RLBaseError(f"{where}: the row is for env {row['env']!r}, not {env_id!r}")
    row.pop("env", None)
    if "n_timesteps" in row:
        out.n_timesteps = _count(row.pop("n_timesteps"), "n_timesteps", where)
    if "n_envs" in row:
        out.num_env = _count(row.pop("n_envs"), "n_envs", where)
    if "policy" in row:
        policy = str(row.pop("policy"))
        out.network = POLICIES.get(policy, policy)
    if "normalize" in row:
        out.normalize = _normalize(row.pop("normalize"), where)
    wrappers = row.pop("env_wrapper", None)
    for wrapper in [] if wrappers is None else \
            wrappers if isinstance(wrappers, list) else [wrappers]:
        name = wrapper if isinstance(wrapper, str) else next(iter(wrapper), "")
        if name not in ATARI_WRAPPERS or env_type not in (None, "atari"):
            raise RLBaseError(f"{where}: env_wrapper {name!r} is not one rlbase has (it wraps "
                              f"Atari envs as {ATARI_WRAPPERS[0]} does, by itself)")
    if "frame_stack" in row:
        stack = row.pop("frame_stack")
        if stack != ATARI_FRAME_STACK or env_type not in (None, "atari"):
            raise RLBaseError(f"{where}: frame_stack={stack!r}: rlbase stacks "
                              f"{ATARI_FRAME_STACK} frames of Atari envs, and no others")
    if "noise_std" in row or row.get("noise_type") in NOISE_KINDS:
        kind, std = row.pop("noise_type", "normal"), row.pop("noise_std", 0.1)
        if kind not in NOISE_KINDS or algorithm != "ddpg":
            raise RLBaseError(f"{where}: noise_type={kind!r} is not an action noise rlbase's "
                              f"{algorithm} has")
        row["noise_type"] = f"{NOISE_KINDS[kind]}_{std:g}"
    from rlbase.compat.sb3.policy_kwargs import translate_policy_kwargs  # lazy: imports TensorFlow

    # SB3's policy keywords under rlbase's network names (net_arch, activation_fn), with the
    # config fields they set (DQN's hiddens).
    fields, network = translate_policy_kwargs(
        algorithm, parse_policy_kwargs(row.pop("policy_kwargs", {}), where))
    kwargs = {**network, **fields}
    if "hiddens" in kwargs:  # DQN's head layers: a learn() argument
        row.setdefault("hiddens", kwargs.pop("hiddens"))
    check_parameters(algorithm, row, out.num_env or 1, where)
    out.params = {**row, **kwargs}
    return out


def check_parameters(algorithm: str, params: dict[str, Any], num_envs: int, where: str) -> None:
    """Every key is a parameter of the algorithm's config with a valid value."""
    config = registry.config_class(algorithm)
    for key in params:
        if not config.accepts(key):
            raise RLBaseError(f"{where}: unknown key {key!r} for {algorithm} (zoo keys: "
                              f"{', '.join(ZOO_KEYS[:8])}; parameters: "
                              f"{', '.join(config.accepted_names())})")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            config.build(params, num_envs)
    except RLBaseError as exc:
        raise RLBaseError(f"{where}: {exc}") from None


def flat(alg: str, settings: Settings) -> dict[str, Any]:
    """The settings as the CLI's defaults dict (network, num_env, normalize, learn() and
    network arguments)."""
    normalize = None if settings.normalize is None else settings.normalize or True
    own = {"network": settings.network, "num_env": settings.num_env, "normalize": normalize}
    return {**{k: v for k, v in own.items() if v is not None}, **settings.params}


def env_type_defaults(alg: str, env_type: str) -> dict[str, Any]:
    """The packaged file's row for an env type, as the CLI's defaults dict ({} if none)."""
    path = file_for(alg)
    rows = read_file(path) if os.path.isfile(path) else {}
    if env_type not in rows:
        return {}
    where = f"{path}, row {env_type!r}"
    return flat(alg, row_settings(alg, rows[env_type], where, env_type=env_type))


def write_config(path: str, alg: str, env_id: str, seed: int | None, n_timesteps: int,
                 row: dict[str, Any]) -> None:
    """The resolved row in the zoo's format, keyed by the env id, with algo, env, seed and
    n_timesteps: ``--conf-file`` of this file repeats the run."""
    resolved = {**plain(row), "algo": alg, "env": env_id, "n_timesteps": n_timesteps}
    if seed is not None:
        resolved["seed"] = seed
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump({env_id: resolved}, f, sort_keys=False)


def next_run_folder(log_folder: str, alg: str, env_id: str) -> str:
    """``<folder>/<alg>/<env>_<n>``, n the next free index from 1 (as the zoo numbers runs),
    created here: the folder is claimed with ``os.mkdir``, which only one of two concurrent
    runs can do, and the other takes the next number."""
    base = os.path.join(os.path.expanduser(log_folder), alg)
    os.makedirs(base, exist_ok=True)
    names = (name.rpartition("_") for name in os.listdir(base))
    n = max((int(index) for stem, _, index in names if stem == env_id and index.isdigit()),
            default=0) + 1
    while True:
        folder = os.path.join(base, f"{env_id}_{n}")
        try:
            os.mkdir(folder)
            return folder
        except FileExistsError:
            n += 1


def resolve_row(alg: str, env_id: str, env_type: str | None, conf_file: str | None,
                overrides: list[str] | None) -> tuple[dict[str, Any], str]:
    """The row for ``env_id`` (its own, else its env type's) of ``conf_file`` or the packaged
    file, with ``--hyperparams`` overrides, and where it came from (for errors). An env id's
    row goes over the packaged ``_sb3_defaults`` row (SB3's defaults where rlbase's learn()
    differs), as SB3's defaults lie under the zoo's rows; an env-type row is complete."""
    path = conf_file or file_for(alg)
    rows = read_file(path)
    packaged = read_file(file_for(alg))
    if conf_file is None and env_id not in rows and env_type not in rows:
        path = file_for(registry.resolve(alg)[0])  # td3: ddpg's env-type rows
        rows = read_file(path)
    key, row = find_row(rows, env_id, env_type, path)
    row = apply_overrides(row, overrides or [])
    if key not in ENV_TYPE_ROWS:
        row = under(alg, row, packaged.get(SB3_DEFAULTS, {}))
    return row, f"{path}, row {key!r}"


def _fields(alg: str, params: dict[str, Any]) -> set[str]:
    """The rlbase parameters that ``params`` (under any names) set."""
    config = registry.config_class(registry.resolve(alg)[0])
    out = {name for key in params for name in config.fields_of(key) or [key]}
    if "noise_std" in params:
        out.add("noise_type")
    return out


def user_over_defaults(alg: str, defaults: dict[str, Any], user: dict[str, Any]
                       ) -> dict[str, Any]:
    """The user's arguments over the CLI's defaults (the env-type row, an alias's preset): a
    default is dropped when the user sets its parameter under any accepted spelling (the row's
    ``target_update_interval`` under ``--target_network_update_freq``), so a value the user
    gave once is not "given twice". A parameter the user gave twice, under two spellings, is a
    one-line error."""
    config = registry.config_class(registry.resolve(alg)[0])
    set_by: dict[str, str] = {}
    for key in user:
        for name in config.fields_of(key) or [key]:
            if name in set_by:
                raise RLBaseError(f"{config.algorithm}: {name} is given twice (as "
                                  f"{set_by[name]} and {key})")
            set_by[name] = key
    out = {k: v for k, v in defaults.items()
           if k not in user and not _fields(alg, {k: v}) & set(set_by)}
    out.update(user)
    return out


def under(alg: str, row: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """``row`` over ``base``: a base key is kept when the row sets its parameter under no
    name; policy_kwargs are merged key by key (the row's win)."""
    set_by_row = _fields(alg, {k: v for k, v in row.items() if k != "policy_kwargs"})
    out = {k: v for k, v in base.items() if k != "policy_kwargs" and k not in row
           and not _fields(alg, {k: v}) & set_by_row}
    out.update(row)
    if "policy_kwargs" in base:
        out["policy_kwargs"] = _merge_kwargs(str(base["policy_kwargs"]),
                                             row.get("policy_kwargs"))
    return out


def _merge_kwargs(base: str, row: Any) -> str:
    """Two policy_kwargs strings as one (``dict(...)``, the row's keywords win)."""
    if row is None:
        return base
    if isinstance(row, dict):
        row = f"dict({', '.join(f'{k}={v!r}' for k, v in row.items())})"
    calls = [ast.parse(str(text).strip(), mode="eval").body for text in (base, row)]
    keywords: dict[str, ast.keyword] = {}
    for call in calls:
        if not isinstance(call, ast.Call):
            return str(row)  # not dict(...): the row's, checked when it is read
        keywords.update({kw.arg: kw for kw in call.keywords if kw.arg})
    return ast.unparse(ast.Call(ast.Name("dict"), [], list(keywords.values())))


def plain(row: dict[str, Any]) -> dict[str, Any]:
    """A row YAML can write (tuples as lists)."""
    def value(v: Any) -> Any:
        if isinstance(v, (tuple, list)):
            return [value(x) for x in v]
        if isinstance(v, dict):
            return {k: value(x) for k, x in v.items()}
        return v if v is None or isinstance(v, (bool, int, float, str)) else repr(v)
    return {k: value(v) for k, v in row.items()}
