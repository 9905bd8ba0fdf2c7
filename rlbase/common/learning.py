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
from typing import Any, TypeVar

import gymnasium as gym

from rlbase.common import logger
from rlbase.common.base_model import BaseModel, check_model_metadata
from rlbase.common.checks import check_learning_rates
from rlbase.common.cmd_util import as_vec_env, ensure_monitor
from rlbase.common.config import AlgorithmConfig
from rlbase.common.errors import RLBaseError
from rlbase.common.loop import LOOP_ARGUMENTS, LoopOptions
from rlbase.common.misc_util import set_global_seeds
from rlbase.common.serialization import load_file
from rlbase.common.vec_env.base import VecEnv

# learn() arguments that are not the model's hyperparameters.
NOT_HYPERPARAMETERS = ("network", "env", "network_kwargs", "load_path", "callback", "resume",
                       "eval_env", "checkpoint_path")


ModelT = TypeVar("ModelT", bound=BaseModel, covariant=True)


# build_model(observation_space, action_space, num_envs, network, network_kwargs, config, *,
#             total_timesteps=0) -> the algorithm's Model
BuildModel = Callable[..., ModelT]


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


def saved_architecture(path: str, algorithm: str, architecture: tuple[str, ...] | None
                       ) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """The network, network kwargs and architecture hyperparameters of a saved model (None:
    every hyperparameter that could be saved)."""
    metadata = load_file(path)[0]
    check_model_metadata(metadata, path, algorithm)
    saved = dict(metadata.get("hyperparameters") or {})
    unusable = set(metadata.get("unserializable") or ())
    arch = {k: v for k, v in saved.items() if k not in unusable
            and (architecture is None or k in architecture)}
    return metadata.get("network"), dict(metadata.get("network_kwargs") or {}), arch


def start_learning(algorithm: str | type[AlgorithmConfig], build_model: BuildModel[ModelT],
                   arguments: dict[str, Any], aliases: Mapping[str, Alias] | None = None,
                   architecture: tuple[str, ...] = ()) -> tuple[ModelT, VecEnv, LoopOptions]:
    """Everything before the loop, from learn()'s ``locals()``.

    With ``load_path`` the model is built with the saved network and architecture (so a model
    saved by any path loads here) and continues from the file's weights and timestep count.
    """
    if not isinstance(algorithm, str):
        return start_with_config(algorithm, build_model, arguments)
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


def start_with_config(config_class: type[AlgorithmConfig], build_model: BuildModel[ModelT],
                      arguments: Mapping[str, Any]) -> tuple[ModelT, VecEnv, LoopOptions]:
    """Everything before the loop, from learn()'s ``locals()``: the env, the config (learn()'s
    keyword arguments, plus other spellings that arrived among ``**network_kwargs``), the model
    (built, or loaded with the saved architecture) and the loop options.

    With ``load_path`` the model is built with the saved network and architecture (so a model
    saved by any path loads here) and continues from the file's weights and timestep count.
    """
    algorithm = config_class.algorithm
    if isinstance(arguments["network"], (VecEnv, gym.Env)):
        # Baselines' deepq.learn (and rlbase 0.1's dqn and qlearning) took the env first.
        raise RLBaseError(f"{algorithm}.learn takes the network first: learn(network, env, ...)"
                          f", got an env as network (Baselines' deepq order); pass both by "
                          f"keyword: learn(network=..., env=...)")
    given, network_kwargs = config_class.split(arguments.get("network_kwargs") or {})
    seed = arguments.get("seed")
    set_global_seeds(seed)
    env = ensure_monitor(as_vec_env(arguments["env"], seed, logger.get_dir()), logger.get_dir())
    base = {k: arguments[k] for k in config_class.field_names() if k in arguments}
    defaults = config_class.defaults()
    for spelling in given:  # a keyword changed from its default and another spelling of it
        for name in config_class.fields_of(spelling):
            if name in base and base[name] is not defaults[name] and \
                    base[name] != defaults[name]:
                raise RLBaseError(f"{algorithm}: {name} is given twice (as {name} and "
                                  f"{spelling})")
    config = config_class.build(given, env.num_envs, base=base)
    network = arguments["network"]
    load_path = arguments.get("load_path")
    if load_path is not None:
        network, network_kwargs, saved = saved_architecture(load_path, algorithm, None)
        architecture = config_class.architecture()
        config = config.replace(**{k: v for k, v in config_class.from_saved(saved).items()
                                   if k in architecture})
    model = build_model(env.observation_space, env.action_space, env.num_envs, network,
                        network_kwargs, config,
                        total_timesteps=int(arguments.get("total_timesteps") or 0))
    if load_path is not None:
        model.load(load_path)
    model.attach_env(env)
    return model, env, LoopOptions.from_arguments({**arguments, **config.to_dict()})


def loop_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The shared loop's arguments among learn()'s."""
    return {k: arguments[k] for k in LOOP_ARGUMENTS if k in arguments}


def require_positive(**values: Any) -> None:
    """Each value must be a positive integer (a clear error naming the first that is not)."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise RLBaseError(f"{name} must be a positive integer, got {value!r}")
