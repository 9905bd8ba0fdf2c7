"""What every learn() does before its loop: deprecated spellings, seeding, the env, the model
(built, or loaded with the saved architecture) and the loop options.

Each algorithm's ``learn()`` is its documented signature, its own checks, and::

    model, env, options = start_learning(ALGORITHM, build_model, locals(), ALIASES)
    return train(model, env, total_timesteps, options)

``train`` is the algorithm's loop; the model classes in ``rlbase.api`` call the same
``build_model`` and ``train``, so there is one implementation of each algorithm.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

import gymnasium as gym

from rlbase.common import logger
from rlbase.common.base_model import BaseModel, check_model_metadata
from rlbase.common.checks import check_learning_rates
from rlbase.common.cmd_util import as_vec_env, ensure_monitor
from rlbase.common.errors import RLBaseError
from rlbase.common.loop import LOOP_ARGUMENTS, LoopOptions
from rlbase.common.misc_util import set_global_seeds
from rlbase.common.serialization import load_file
from rlbase.common.vec_env.base import VecEnv

# learn() arguments that are not the model's hyperparameters.
NOT_HYPERPARAMETERS = ("network", "env", "network_kwargs", "load_path", "callback", "resume",
                       "eval_env", "checkpoint_path")


ModelT = TypeVar("ModelT", bound=BaseModel, covariant=True)


class BuildModel(Protocol[ModelT]):
    def __call__(self, observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                 network: Any, network_kwargs: dict[str, Any],
                 hyperparameters: dict[str, Any]) -> ModelT: ...


class Alias:
    """A deprecated learn() argument: its value goes to ``new``, through
    ``convert(value, arguments, num_envs)`` when the meaning changed (e.g. updates -> env
    steps)."""

    def __init__(self, new: str, convert: Callable[[Any, dict[str, Any], int], Any] | None = None,
                 note: str = ""):
        self.new, self.convert, self.note = new, convert, note


def warn_deprecated(algorithm: str, old: str, new: str, note: str = "") -> None:
    """The one-line warning a deprecated spelling gets."""
    extra = f" ({note})" if note else ""
    warnings.warn(f"{algorithm}: '{old}' is deprecated, use '{new}'{extra}", DeprecationWarning,
                  stacklevel=4)


def apply_aliases(algorithm: str, arguments: dict[str, Any], network_kwargs: dict[str, Any],
                  aliases: Mapping[str, Alias], num_envs: int = 1) -> None:
    """Move deprecated spellings (which arrive among ``**network_kwargs``) to their new names
    in ``arguments``, with a one-line warning each."""
    for old, alias in aliases.items():
        if old not in network_kwargs:
            continue
        value = network_kwargs.pop(old)
        warn_deprecated(algorithm, old, alias.new, alias.note)
        arguments[alias.new] = alias.convert(value, arguments, num_envs) if alias.convert \
            else value


def saved_architecture(path: str, algorithm: str, architecture: tuple[str, ...]
                       ) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """The network, network kwargs and architecture hyperparameters of a saved model."""
    metadata = load_file(path)[0]
    check_model_metadata(metadata, path, algorithm)
    saved = dict(metadata.get("hyperparameters") or {})
    unusable = set(metadata.get("unserializable") or ())
    arch = {k: saved[k] for k in architecture if k in saved and k not in unusable}
    return metadata.get("network"), dict(metadata.get("network_kwargs") or {}), arch


def start_learning(algorithm: str, build_model: BuildModel[ModelT], arguments: dict[str, Any],
                   aliases: Mapping[str, Alias] | None = None, architecture: tuple[str, ...] = ()
                   ) -> tuple[ModelT, VecEnv, LoopOptions]:
    """Everything before the loop, from learn()'s ``locals()``.

    With ``load_path`` the model is built with the saved network and architecture (so a model
    saved by any path loads here) and continues from the file's weights and timestep count.
    """
    arguments = dict(arguments)
    if isinstance(arguments["network"], (VecEnv, gym.Env)):
        # Baselines' deepq.learn (and rlbase 0.1's dqn and qlearning) took the env first.
        raise RLBaseError(f"{algorithm}.learn takes the network first: learn(network, env, ...)"
                          f", got an env as network (Baselines' deepq order); pass both by "
                          f"keyword: learn(network=..., env=...)")
    network_kwargs = dict(arguments.pop("network_kwargs", {}) or {})
    seed = arguments.get("seed")
    set_global_seeds(seed)
    env = ensure_monitor(as_vec_env(arguments["env"], seed, logger.get_dir()), logger.get_dir())
    apply_aliases(algorithm, arguments, network_kwargs, aliases or {}, env.num_envs)
    hyperparameters = {k: v for k, v in arguments.items()
                       if k not in NOT_HYPERPARAMETERS}
    check_learning_rates(algorithm, hyperparameters)
    network = arguments["network"]
    load_path = arguments.get("load_path")
    if load_path is not None:
        network, network_kwargs, arch = saved_architecture(load_path, algorithm, architecture)
        hyperparameters.update(arch)
    model = build_model(env.observation_space, env.action_space, env.num_envs, network,
                        network_kwargs, hyperparameters)
    if load_path is not None:
        model.load(load_path)
    model.attach_env(env)
    return model, env, LoopOptions.from_arguments(arguments)


def loop_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The shared loop's arguments among learn()'s."""
    return {k: arguments[k] for k in LOOP_ARGUMENTS if k in arguments}


def require_positive(**values: Any) -> None:
    """Each value must be a positive integer (a clear error naming the first that is not)."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise RLBaseError(f"{name} must be a positive integer, got {value!r}")
