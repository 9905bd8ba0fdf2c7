"""What every learn() does before its loop: seeding, the env, the config (learn()'s keyword
arguments under any accepted spelling), the model (built, or loaded with the saved
architecture) and the loop options; and learn()'s signature and parameter docs, read from the
config, so that no learn() restates a field::

    @config_signature(CONFIG)
    def learn(network, env, total_timesteps=int(1e6), seed=None, **kwargs):
        '''One paragraph (the parameters' lines are added from the config).'''
        model, env, options = start_learning(CONFIG, build_model, network, env,
                                             total_timesteps, seed, kwargs)
        return train(model, env, total_timesteps, options)

``train`` is the algorithm's loop; the model classes in ``rlbase.compat.sb3`` call the same
``build_model`` and ``train``, so there is one implementation of each algorithm.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import textwrap
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import gymnasium as gym

from rlbase.common.base_model import BaseModel, check_model_metadata
from rlbase.common.config import AlgorithmConfig, describe
from rlbase.common.envs.make import as_vec_env, ensure_monitor
from rlbase.common.errors import RLBaseError
from rlbase.common.io.serialization import load_file
from rlbase.common.logs import logger
from rlbase.common.loops.training_loop import LoopOptions
from rlbase.common.misc_util import set_global_seeds
from rlbase.common.precision import precision_scope
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

#: what **network_kwargs takes in A2C and PPO (a shared torso unless copied)
ACTOR_CRITIC_NETWORK_KWARGS = (
    "passed to the network builder (num_layers, num_hidden, nlstm, ...); value_network='copy' "
    "gives the value head its own torso, log_std_init sets a Gaussian policy's initial log "
    "standard deviation")

KEYWORD = inspect.Parameter.KEYWORD_ONLY
#: learn()'s keyword arguments after the config's fields (what it trains on and how it runs)
RUN_PARAMETERS = (
    inspect.Parameter("eval_env", KEYWORD, default=None, annotation="VecEnv | Any | None"),
    inspect.Parameter("callback", KEYWORD, default=None,
                      annotation="Callable[[Model, dict[str, Any]], bool | None] | None"),
    inspect.Parameter("load_path", KEYWORD, default=None, annotation="str | None"),
    inspect.Parameter("checkpoint_path", KEYWORD, default=None, annotation="str | None"),
    inspect.Parameter("resume", KEYWORD, default=False, annotation="bool"),
)
RUN_DEFAULTS = {p.name: p.default for p in RUN_PARAMETERS}
_LOCALS = object()  # start_learning's env when its third argument is a learn()'s locals()

ModelT = TypeVar("ModelT", bound=BaseModel, covariant=True)
LearnT = TypeVar("LearnT", bound=Callable[..., Any])


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
    arch = {k: v for k, v in saved.items() if k in config_class.architecture()}
    return metadata.get("network"), dict(metadata.get("network_kwargs") or {}), arch


def start_learning(config_class: type[AlgorithmConfig], build_model: BuildModel[ModelT],
                   network: Any, env: Any = _LOCALS, total_timesteps: int | None = 0,
                   seed: int | None = None, kwargs: Mapping[str, Any] | None = None
                   ) -> tuple[ModelT, VecEnv, LoopOptions]:
    """Everything before the loop, from learn()'s arguments as passed (``kwargs``: its
    keyword arguments: config fields under any accepted spelling, run arguments and the
    network's): the env, the config, the model (built, or loaded with the saved architecture)
    and the loop options.

    With ``load_path`` the model is built with the saved network and architecture (so a model
    saved by any path loads here) and continues from the file's weights and timestep count.
    ``start_learning(CONFIG, build_model, arguments)`` takes them as a learn()'s ``locals()``.
    """
    if env is _LOCALS:
        network, env, total_timesteps, seed, kwargs = _passed(config_class, network)
    kwargs = dict(kwargs or {})
    algorithm = config_class.algorithm
    if _is_env(network):
        # Baselines' deepq.learn (and rlbase 0.1's dqn and qlearning) took the env first.
        raise RLBaseError(f"{algorithm}.learn takes the network first: learn(network, env, ...)"
                          f", got an env as network (Baselines' deepq order); pass both by "
                          f"keyword: learn(network=..., env=...)")
    run = {k: kwargs.pop(k) for k in RUN_DEFAULTS if k in kwargs}
    defaults = config_class.defaults()
    fields = {k: kwargs.pop(k) for k in defaults if k in kwargs and k != "seed"}
    given, network_kwargs = config_class.split(kwargs)
    set_global_seeds(seed)
    env = ensure_monitor(as_vec_env(env, seed, logger.get_dir()), logger.get_dir())
    base = {k: seed if k == "seed" else fields.get(k, default) for k, default in defaults.items()}
    for spelling in given:  # a keyword changed from its default and another spelling of it
        for name in config_class.fields_of(spelling):
            if name in base and base[name] is not defaults[name] and \
                    base[name] != defaults[name]:
                raise RLBaseError(f"{algorithm}: {name} is given twice (as {name} and "
                                  f"{spelling})")
    config = config_class.build(given, env.num_envs, base=base)
    load_path = run.get("load_path")
    if load_path is not None:
        network, network_kwargs, arch = saved_architecture(load_path, config_class)
        config = config.replace(**arch)
    with precision_scope(config.precision):
        model = build_model(env.observation_space, env.action_space, env.num_envs, network,
                            network_kwargs, config, total_timesteps=int(total_timesteps or 0))
    if load_path is not None:
        model.load(load_path)
    model.attach_env(env)
    return model, env, LoopOptions.from_arguments({**RUN_DEFAULTS, **run, **config.to_dict()})


def _passed(config_class: type[AlgorithmConfig], arguments: Mapping[str, Any]
            ) -> tuple[Any, Any, int | None, int | None, dict[str, Any]]:
    """A learn()'s ``locals()`` as the arguments passed: (network, env, total_timesteps, seed,
    its fields, run arguments and network kwargs). Its other locals are not arguments."""
    names = (set(config_class.field_names()) - {"seed"}) | set(RUN_DEFAULTS)
    kwargs = {k: v for k, v in arguments.items() if k in names}
    return (arguments["network"], arguments["env"], arguments.get("total_timesteps"),
            arguments.get("seed"), {**kwargs, **(arguments.get("network_kwargs") or {})})


def config_signature(config_class: type[AlgorithmConfig],
                     notes: Mapping[str, str] | None = None) -> Callable[[LearnT], LearnT]:
    """Give ``learn(network, env, total_timesteps=..., seed=None, [*, own], **kwargs)`` the
    contract's signature and documentation, read from ``config_class``: after its first four
    parameters every config field but seed as a keyword argument (its default the field's),
    then :data:`RUN_PARAMETERS`, then learn()'s own keyword-only ones (PPO's ``model_fn``),
    then ``**network_kwargs``. Its docstring gets one line per parameter: the field's doc, or
    the run argument's meaning (``notes`` says what differs for this algorithm)."""
    def apply(learn: LearnT) -> LearnT:
        own = inspect.signature(learn).parameters.values()
        head = [p for p in own if p.kind is p.POSITIONAL_OR_KEYWORD]
        extra = [p for p in own if p.kind is KEYWORD]
        hints = config_class.type_hints()
        shared = {f.name for f in dataclasses.fields(AlgorithmConfig)}
        # The algorithm's own fields first, then those every config has but seed.
        order = [f for f in dataclasses.fields(config_class) if f.name not in shared] + \
            [f for f in dataclasses.fields(config_class) if f.name in shared - {"seed"}]
        fields = [inspect.Parameter(f.name, KEYWORD, default=f.default, annotation=hints[f.name])
                  for f in order]
        rest = inspect.Parameter("network_kwargs", inspect.Parameter.VAR_KEYWORD,
                                 annotation="Any")
        params = [*head, *fields, *RUN_PARAMETERS, *extra, rest]
        learn.__signature__ = inspect.signature(learn).replace(  # type: ignore[attr-defined]
            parameters=params)
        learn.__doc__ = _parameter_doc(learn.__doc__ or "", config_class, params, notes or {})
        return learn
    return apply


def _parameter_doc(doc: str, config_class: type[AlgorithmConfig],
                   params: list[inspect.Parameter], notes: Mapping[str, str]) -> str:
    """``doc`` followed by a line per parameter (wrapped, continuation lines indented)."""
    rows = {row["name"]: row for row in describe(config_class)}
    lines = []
    for param in params:
        label = f"**{param.name}" if param.kind is param.VAR_KEYWORD else param.name
        if label in notes or label in RUN_ARGUMENTS:
            text = notes.get(label, RUN_ARGUMENTS.get(label, ""))
        else:
            row = rows[param.name]
            facts = [f for f in (row["unit"], row["range"]) if f]
            facts += [f"SB3: {row['sb3']}"] if row["sb3"] else []
            facts += [f"deprecated: {row['deprecated']}"] if row["deprecated"] else []
            text = row["doc"] + (f" [{'; '.join(facts)}]" if facts else "")
        lines.append(textwrap.fill(f"{label}: {text}", width=92, subsequent_indent="    "))
    intro = textwrap.fill(f"Parameters (the config's fields are those of "
                          f"{config_class.__module__}.{config_class.__name__}; the docs' table "
                          f"has their types and defaults):", width=92)
    return "\n\n".join([inspect.cleandoc(doc), intro, "\n".join(lines)])


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
