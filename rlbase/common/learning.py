"""What every learn() does before its loop: seeding, the env, the config (learn()'s keyword
arguments and the other spellings among ``**network_kwargs``), the model (built, or loaded with
the saved architecture) and the loop options.

Each algorithm's ``learn()`` is its signature (the config's fields as keyword arguments) and::

    model, env, options = start_learning(CONFIG, build_model, locals())
    return train(model, env, total_timesteps, options)

``train`` is the algorithm's loop; the model classes in ``rlbase.api`` call the same
``build_model`` and ``train``, so there is one implementation of each algorithm.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import gymnasium as gym

from rlbase.common import logger
from rlbase.common.base_model import BaseModel, check_model_metadata
from rlbase.common.cmd_util import as_vec_env, ensure_monitor
from rlbase.common.config import AlgorithmConfig
from rlbase.common.errors import RLBaseError
from rlbase.common.loop import LoopOptions
from rlbase.common.misc_util import set_global_seeds
from rlbase.common.precision import precision_scope
from rlbase.common.serialization import load_file
from rlbase.common.vec_env.base import VecEnv

# learn()'s arguments besides its config's fields: what it trains on and how it runs (the
# docs' tables list them from here; each learn()'s docstring says the same).
RUN_ARGUMENTS = {
    "network": "a registered network name (mlp, cnn, lstm, ...) or a builder callable",
    "env": "a VecEnv (a gymnasium env or an env id is wrapped into one)",
    "total_timesteps": "env steps to train for, summed over envs (with resume: the whole "
                       "run's)",
    "seed": "seed of python, numpy, TensorFlow and the envs (None: unseeded)",
    "eval_env": "an env (or env id, seeded with seed + 1000) to evaluate the policy on",
    "callback": "called after every iteration as callback(model, info); returning False "
                "stops",
    "load_path": "continue from this saved model (its network and architecture are used)",
    "checkpoint_path": "the checkpoints' folder (None: <log dir>/checkpoints)",
    "resume": "continue from the newest checkpoint in checkpoint_path",
    "model_fn": "build the model with this instead of Model (same arguments)",
    "**network_kwargs": "passed to the network builder (num_layers, num_hidden, nlstm, ...); "
                        "other spellings of the config's fields (SB3's names, deprecated "
                        "ones) are taken out first",
}

ModelT = TypeVar("ModelT", bound=BaseModel, covariant=True)


# build_model(observation_space, action_space, num_envs, network, network_kwargs, config, *,
#             total_timesteps=0) -> the algorithm's Model
BuildModel = Callable[..., ModelT]


def saved_architecture(path: str, config_class: type[AlgorithmConfig]
                       ) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """The network, network kwargs and ``architecture=True`` fields of a saved model (older
    files' spellings converted)."""
    metadata = load_file(path)[0]
    check_model_metadata(metadata, path, config_class.algorithm)
    saved = config_class.from_saved(metadata.get("hyperparameters") or {},
                                    metadata.get("unserializable") or ())
    architecture = config_class.architecture()
    arch = {k: v for k, v in saved.items() if k in architecture}
    return metadata.get("network"), dict(metadata.get("network_kwargs") or {}), arch


def start_learning(config_class: type[AlgorithmConfig], build_model: BuildModel[ModelT],
                   arguments: Mapping[str, Any]) -> tuple[ModelT, VecEnv, LoopOptions]:
    """Everything before the loop, from learn()'s ``locals()``: the env, the config (learn()'s
    keyword arguments, plus other spellings that arrived among ``**network_kwargs``), the model
    (built, or loaded with the saved architecture) and the loop options.

    With ``load_path`` the model is built with the saved network and architecture (so a model
    saved by any path loads here) and continues from the file's weights and timestep count.
    """
    algorithm = config_class.algorithm
    if _is_env(arguments["network"]):
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
        network, network_kwargs, arch = saved_architecture(load_path, config_class)
        config = config.replace(**arch)
    with precision_scope(config.precision):
        model = build_model(env.observation_space, env.action_space, env.num_envs, network,
                            network_kwargs, config,
                            total_timesteps=int(arguments.get("total_timesteps") or 0))
    if load_path is not None:
        model.load(load_path)
    model.attach_env(env)
    return model, env, LoopOptions.from_arguments({**arguments, **config.to_dict()})


def _is_env(value: Any) -> bool:
    return isinstance(value, (VecEnv, gym.Env))


def network_first(learn: Callable[..., Any]) -> Callable[..., Any]:
    """Refuse Baselines' deepq call ``learn(env, network='mlp', ...)`` in one line (Python
    would say only that ``network`` got two values)."""

    @functools.wraps(learn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if args and "network" in kwargs and _is_env(args[0]):
            raise RLBaseError("learn takes the network first: learn(network, env, ...), got an "
                              "env first and network= (Baselines' deepq order); pass both by "
                              "keyword: learn(network=..., env=...)")
        return learn(*args, **kwargs)

    return checked
