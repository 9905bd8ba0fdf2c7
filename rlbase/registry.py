"""Algorithm discovery, shared by the CLI, the benchmarks and the model classes.

An algorithm is a package ``rlbase/<alg>/`` with ``<alg>.py`` (``learn``, ``train``),
``config.py`` (``CONFIG``, its typed parameters) and ``model.py`` (``Model`` and
``build_model``); its defaults per env type are the env-type rows of
``rlbase/hyperparams/<alg>.yml`` (rlbase.hyperparams).
Nothing here imports TensorFlow until an algorithm is asked for.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

from rlbase.common.errors import RLBaseError
from rlbase.common.families.her_baselines import BASELINES_HER
from rlbase.common.io.memory import check_rollout, rollout_step_bytes
from rlbase.common.io.serialization import load_file, space_from_json
from rlbase.common.precision import precision_scope

# Names other libraries use for rlbase's algorithms: (rlbase algorithm, learn() arguments).
ALIASES: dict[str, tuple[str, dict[str, Any]]] = {
    "ppo2": ("ppo", {}),        # OpenAI Baselines
    "deepq": ("dqn", {}),       # OpenAI Baselines
    "trpo_mpi": ("trpo", {}),   # OpenAI Baselines
    "td3": ("ddpg", {"twin_q": True, "policy_delay": 2, "target_noise": 0.2}),
    # OpenAI Baselines' HER: DDPG with its HER settings (rlbase.common.families.her_baselines; the
    # CLI adds what they derive from the env's episode length)
    "her": ("ddpg", BASELINES_HER),
}
ENV_TYPES = ("atari", "classic_control", "box2d", "mujoco", "toy_text", "minatar", "custom")


def available_algorithms() -> list[str]:
    """Packages ``rlbase.<alg>`` that have a ``<alg>.py``."""
    pkg_dir = os.path.dirname(os.path.abspath(__file__))
    return sorted(m.name for m in pkgutil.iter_modules([pkg_dir]) if m.ispkg and
                  os.path.isfile(os.path.join(pkg_dir, m.name, f"{m.name}.py")))


def resolve(name: str) -> tuple[str, dict[str, Any]]:
    """``(algorithm, preset learn() arguments)`` for a name or an alias such as 'ppo2'."""
    if name in ALIASES:
        return ALIASES[name]
    algs = available_algorithms()
    if name not in algs:
        raise RLBaseError(f"unknown algorithm '{name}'; available: {', '.join(algs)} (aliases: "
                          f"{', '.join(f'{a}={t[0]}' for a, t in ALIASES.items())})")
    return name, {}


def config_class(algorithm: str) -> Any:
    """An algorithm's config class, without importing the algorithm (nor TensorFlow); None
    before it has one."""
    try:
        module = importlib.import_module(f"rlbase.{algorithm}.config")
    except ModuleNotFoundError:
        return None
    return module.CONFIG


@dataclass(frozen=True)
class Algorithm:
    """One algorithm's entry points."""

    name: str
    module: ModuleType          # rlbase.<alg>.<alg>
    model_module: ModuleType    # rlbase.<alg>.model

    @property
    def learn(self) -> Callable[..., Any]:
        return self.module.learn

    @property
    def train(self) -> Callable[..., Any]:
        return self.module.train

    @property
    def config(self) -> Any:
        return config_class(self.name)

    @property
    def build_model(self) -> Callable[..., Any]:
        return self.model_module.build_model

    @property
    def model_class(self) -> type:
        return self.model_module.Model

    def learn_defaults(self) -> dict[str, Any]:
        """The config's defaults (what a model built without learn() starts from)."""
        return {k: v for k, v in self.config.defaults().items() if k != "seed"}

    def learn_parameters(self) -> list[str]:
        params = inspect.signature(self.learn).parameters.values()
        return [p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]


def get_algorithm(name: str) -> Algorithm:
    """The entry points of an algorithm (its name, not an alias)."""
    algorithm, _ = resolve(name)
    return Algorithm(algorithm, importlib.import_module(f"rlbase.{algorithm}.{algorithm}"),
                     importlib.import_module(f"rlbase.{algorithm}.model"))


def build_model(algorithm: str, observation_space: Any, action_space: Any, num_envs: int,
                network: Any, network_kwargs: dict[str, Any] | None,
                hyperparameters: dict[str, Any] | None, warn: bool = True) -> Any:
    """An algorithm's model built as learn() builds it: the config's defaults under
    ``hyperparameters`` (any accepted spelling; ``warn=False`` when they were checked, with
    their warnings, before)."""
    entry = get_algorithm(algorithm)
    config = entry.config.build(hyperparameters or {}, num_envs, warn=warn)

    with precision_scope(config.precision):
        return entry.build_model(observation_space, action_space, num_envs, network,
                                 dict(network_kwargs or {}), config)


def load(path: str, num_envs: int | None = None, allow_pickle: bool = False,
         overrides: dict[str, Any] | None = None) -> Any:
    """Any saved rlbase model (or checkpoint), rebuilt from its own metadata: algorithm,
    spaces, network and hyperparameters. ``num_envs``: the batch it will train on (None: the
    one it was saved with); ``overrides``: hyperparameters that win over the file's (a new
    ``seed``)."""
    path = os.path.expanduser(os.fspath(path))
    metadata = load_file(path, allow_pickle=allow_pickle)[0]
    algorithm = metadata.get("algorithm")
    if algorithm not in available_algorithms():
        raise RLBaseError(f"model file {path} holds algorithm {algorithm!r}, which this rlbase "
                          f"does not have (available: {', '.join(available_algorithms())})")
    try:
        ob_space = space_from_json(metadata["observation_space"])
        ac_space = space_from_json(metadata["action_space"])
    except KeyError as exc:
        raise RLBaseError(f"model file {path} records no {exc.args[0]}") from None
    check_model_metadata(path, metadata, num_envs)
    unusable = set(metadata.get("unserializable") or ())
    saved = metadata.get("hyperparameters") or {}
    hyperparameters = config_class(algorithm).from_saved(saved, unusable)
    hyperparameters.update(overrides or {})
    envs = num_envs or int(metadata.get("num_envs") or 1)
    model = build_model(algorithm, ob_space, ac_space, envs, metadata.get("network"),
                        metadata.get("network_kwargs"), hyperparameters)
    model.load(path, allow_pickle=allow_pickle)
    # (files before the typed configs kept them among the hyperparameters)
    model.env_kwargs = dict(metadata.get("env_kwargs") or saved.get("env_kwargs") or {})
    return model


def check_model_metadata(path: str, metadata: dict[str, Any], num_envs: int | None = None
                         ) -> None:
    """A one-line RLBaseError for a model file's metadata that is of the wrong type (edited
    by hand, or written by something else): the mappings must be dicts, the counts whole
    numbers, and an on-policy rollout of the file's ``nsteps`` on ``num_envs`` envs (None: the
    file's own) must fit in memory."""
    for key in ("hyperparameters", "network_kwargs", "env_kwargs"):
        value = metadata.get(key)
        if value is not None and not isinstance(value, dict):
            raise RLBaseError(f"model file {path}: {key} must be a mapping of names to values, "
                              f"got {value!r}")
    for key, low in (("num_envs", 1), ("num_timesteps", 0)):
        value = metadata.get(key)
        if value is not None and not whole_number(value, low):
            raise RLBaseError(f"model file {path}: {key} must be a whole number >= {low}, "
                              f"got {value!r}")
    hyperparameters = metadata.get("hyperparameters") or {}
    for key in ("nsteps", "n_steps"):
        value = hyperparameters.get(key)
        if value is None:
            continue
        if not whole_number(value, 1):
            raise RLBaseError(f"model file {path}: hyperparameter {key} must be a whole number "
                              f">= 1, got {value!r}")
        envs = num_envs or int(metadata.get("num_envs") or 1)
        check_rollout(int(value), envs, _step_bytes(metadata), f"model file {path}")


def whole_number(value: Any, low: int) -> bool:
    """Whether ``value`` is a whole number (an int, or a float such as 2.0) >= ``low``."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) \
        and float(value).is_integer() and value >= low


def _step_bytes(metadata: dict[str, Any]) -> int:
    """The bytes one rollout step holds at least, from the file's spaces (one it cannot read
    counts as nothing)."""
    spaces: list[Any] = []  # gymnasium spaces, None where unreadable
    for key in ("observation_space", "action_space"):
        try:
            spaces.append(space_from_json(metadata[key]))
        except (KeyError, RLBaseError, TypeError, ValueError):
            spaces.append(None)
    return rollout_step_bytes(*spaces)
