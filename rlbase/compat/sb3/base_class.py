"""The model classes' shared layer (the Stable Baselines way) over the algorithms.

A class holds the algorithm's own ``Model``, built by the same ``build_model`` function
``learn()`` calls (through :mod:`rlbase.registry`), and trains it in memory with the
algorithm's ``train`` loop: a second ``learn()`` continues from the same weights, optimizer
state, replay buffer and compiled calls, writing no file and tracing nothing again.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import gymnasium as gym
import numpy as np
import tensorflow as tf
from tqdm import tqdm

from rlbase import registry
from rlbase.common import nested
from rlbase.common.base_model import (
    BaseModel,
    check_model_metadata,
    jsonable,
    refuse_missing,
    unserializable,
)
from rlbase.common.buffers.her_replay_buffer import HerReplayBuffer
from rlbase.common.envs.make import as_vec_env, ensure_monitor
from rlbase.common.errors import RLBaseError
from rlbase.common.families.actor_critic import OnPolicyModel
from rlbase.common.families.q_learning.acting import EpsilonGreedyQ
from rlbase.common.io.serialization import NORMALIZE_HINT, library_versions, load_file
from rlbase.common.logs import logger
from rlbase.common.logs.logger import Logger, configure_logger
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.common.loops.training_loop import LoopOptions
from rlbase.common.misc_util import set_global_seeds
from rlbase.common.networks.registry import registered_networks
from rlbase.common.vec_env import VecEnv
from rlbase.common.vec_env.base import find_wrapper
from rlbase.common.vec_env.vec_normalize import VecNormalize
from rlbase.compat.sb3.callbacks import split_callbacks
from rlbase.compat.sb3.policy import Policy
from rlbase.compat.sb3.policy_kwargs import translate_policy_kwargs
from rlbase.compat.sb3.pretraining.expert_dataset import fit_policy
from rlbase.compat.sb3.replay import ReplayModel, load_buffer, save_buffer
from rlbase.compat.sb3.saving import custom_object_kwargs, excluded_names, reading, writing

# Stable Baselines policy names -> rlbase network names.
POLICY_NETWORKS = {"MlpPolicy": "mlp", "CnnPolicy": "cnn", "MlpLstmPolicy": "lstm",
                   "MlpLnLstmPolicy": "lnlstm", "CnnLstmPolicy": "cnn_lstm",
                   "CnnLnLstmPolicy": "cnn_lnlstm", "MultiInputPolicy": "mlp"}
ALL_POLICIES = tuple(POLICY_NETWORKS)
FEED_FORWARD = ("MlpPolicy", "CnnPolicy", "MultiInputPolicy")
# learn() arguments the class itself supplies.
RESERVED = ("network", "env", "total_timesteps", "seed", "load_path", "callback", "resume",
            "checkpoint_path", "checkpoint_interval", "log_interval")
# learn()'s default log_interval per algorithm, as the SB3 classes set it (updates for A2C and
# PPO, finished episodes for the off-policy ones); the others use their config's.
LEARN_LOG_INTERVAL = {"a2c": 100, "ppo": 1, "dqn": 4, "ddpg": 4, "sac": 4}
# Attributes a class sets itself: never read from (or written to) the hyperparameters.
OWN_ATTRIBUTES = frozenset({"seed", "verbose", "tensorboard_log", "policy_kwargs", "policy",
                            "device", "env", "model", "entry", "network", "hyperparameters"})


class BaseRLModel:
    """``Cls(policy, env, **hyperparameters, policy_kwargs=None, seed=None, verbose=0,
    tensorboard_log=None)``, as in Stable-Baselines3 (see rlbase/docs/sb3_names.md).

    policy may also be a registered network name ('mlp', 'cnn', ...) or a network builder
    callable; hyperparameters are the algorithm's learn() arguments under rlbase's or SB3's
    names; device 'cuda'/'gpu' needs a GPU TensorFlow can see.
    """

    algorithm = ""
    policies: tuple[str, ...] = ALL_POLICIES
    default_network = "mlp"
    #: learn() arguments this class fixes (TD3's options on DDPG)
    presets: dict[str, Any] = {}
    #: the logger of the last learn() call, or the one given to set_logger
    _logger: Logger | None = None
    _custom_logger = False

    def __init__(self, policy: str | Callable | None, env: VecEnv | gym.Env | str | None,
                 policy_kwargs: dict[str, Any] | None = None, seed: int | None = None,
                 verbose: int = 0, tensorboard_log: str | None = None,
                 _init_setup_model: bool = True, **hyperparameters: Any):
        self.entry = registry.get_algorithm(self.algorithm)
        #: the policy name given ('MlpPolicy', a network name; None for a callable)
        self.policy_name = policy if isinstance(policy, str) else None
        #: SB3's policy object: predict, the spaces, the policy's weights
        self.policy = Policy(self)
        self.network = self._network_for(policy)
        self.device = _check_device(hyperparameters.get("device", "auto"))
        self.seed, self.verbose, self.tensorboard_log = seed, verbose, tensorboard_log
        self.env: VecEnv | None = None
        self.observation_space: gym.Space | None = None
        self.action_space: gym.Space | None = None
        self.model: BaseModel | None = None
        self._learn_calls = 0
        set_global_seeds(seed)
        if env is not None:
            self.env = ensure_monitor(as_vec_env(env, seed))
            self.observation_space = self.env.observation_space
            self.action_space = self.env.action_space
        num_envs = self.env.num_envs if self.env is not None else 1
        config = self.entry.config
        # (DQN: SB3's net_arch is the whole Q-network, so it also sets hiddens=())
        from_kwargs, policy_kwargs = translate_policy_kwargs(
            self.algorithm, dict(policy_kwargs or {}), self.network)
        hyperparameters = {**from_kwargs, **hyperparameters}
        allowed = set(config.accepted_names()) - set(RESERVED)
        for name in hyperparameters:  # what learn() or the class itself sets is not one
            if name not in allowed:
                raise RLBaseError(f"{type(self).__name__} has no hyperparameter {name!r}; "
                                  f"allowed: {', '.join(sorted(allowed))}")
        # A preset the user sets under another spelling (TD3's target_noise as SB3's
        # target_policy_noise) gives way.
        given = {name for k in hyperparameters for name in (config.fields_of(k) or [k])}
        presets = {k: v for k, v in self.presets.items() if k not in given}
        # Checked now (names, types, ranges), converted again when the model is built.
        config.build({**presets, **hyperparameters}, num_envs)
        self.hyperparameters = {**presets, **hyperparameters}
        self.policy_kwargs = policy_kwargs
        if self.env is not None and _init_setup_model:
            self._setup_model()

    # -- construction helpers ----------------------------------------------------------------
    def _network_for(self, policy: str | Callable | None) -> str | Callable | None:
        if policy is None or policy == self.default_network:
            return self.default_network
        if callable(policy):
            return policy
        if policy in POLICY_NETWORKS or policy.endswith("Policy"):
            if policy not in self.policies:
                raise RLBaseError(f"{type(self).__name__} does not support policy {policy!r}; "
                                  f"supported: {', '.join(self.policies)}")
            return POLICY_NETWORKS.get(policy, self.default_network)
        if policy not in registered_networks():
            raise RLBaseError(f"unknown policy {policy!r}: use one of {', '.join(self.policies)}"
                              f", a network name ({', '.join(registered_networks())}) or a "
                              "callable")
        return policy

    def _setup_model(self) -> None:
        assert self.observation_space is not None and self.action_space is not None
        num_envs = self.env.num_envs if self.env is not None else 1
        self.model = registry.build_model(
            self.algorithm, self.observation_space, self.action_space, num_envs, self.network,
            self.policy_kwargs, {**self.hyperparameters, "seed": self.seed}, warn=False)
        if self.env is not None:
            self.model.attach_env(self.env)

    def _require_model(self) -> BaseModel:
        if self.model is None:
            raise RLBaseError(f"{type(self).__name__} has no model yet: give it an env or "
                              "load one")
        return self.model

    # -- training --------------------------------------------------------------------------------
    @property
    def num_timesteps(self) -> int:
        return int(self.model.num_timesteps) if self.model is not None else 0

    @property
    def logger(self) -> Logger:
        """The logger learn() writes to: the one given to :meth:`set_logger`, else the one the
        last learn() call made (stdout when verbose, TensorBoard with ``tensorboard_log``)."""
        if self._logger is None:
            raise AttributeError(self._no_logger())
        return self._logger

    def _no_logger(self) -> str:
        return f"{type(self).__name__} has no logger before learn() or set_logger()"

    def set_logger(self, logger: Logger) -> None:
        """Make every later learn() write to ``logger`` (a
        :class:`~rlbase.common.logs.logger.Logger`, e.g. from ``rlbase.logger.configure(folder,
        formats)``) instead of making its own; the model leaves it open."""
        if not isinstance(logger, Logger):
            raise RLBaseError(f"set_logger takes an rlbase.logger.Logger, got "
                              f"{type(logger).__name__}: make one with "
                              "rlbase.logger.configure(folder, format_strings)")
        self._logger = logger
        self._custom_logger = True

    def learn(self, total_timesteps: int, callback: Any = None, log_interval: int | None = None,
              tb_log_name: str | None = None, reset_num_timesteps: bool = True,
              progress_bar: bool = False) -> BaseRLModel:
        """SB3's learn (see rlbase/docs/sb3_names.md); a second call continues training in
        memory. ``callback`` also takes rlbase's plain ``callback(model, info)``, called after
        every iteration, returning False to stop.
        """
        if self.env is None:
            raise RLBaseError(f"{type(self).__name__}.learn needs an env: pass one to the "
                              "constructor, to load() or to set_env()")
        total_timesteps = _timestep_count(total_timesteps)
        model = self._require_model()
        self._learn_calls += 1
        if reset_num_timesteps:
            model.num_timesteps = 0
        if not self._custom_logger:
            self._logger = configure_logger(
                self.verbose, self.tensorboard_log,
                type(self).__name__ if tb_log_name is None else tb_log_name, reset_num_timesteps)
        assert self._logger is not None
        hooks, plain = split_callbacks(callback)
        bar = None
        if progress_bar:

            bar = tqdm(total=int(total_timesteps), unit="steps")
        start = model.num_timesteps

        def on_step(inner: Any, info: dict[str, Any]) -> bool:
            if bar is not None:
                bar.n = min(int(inner.num_timesteps) - start, total_timesteps)
                bar.refresh()
            results = [fn(self, info) for fn in plain]
            return all(result is not False for result in results)

        interval = log_interval if log_interval is not None else LEARN_LOG_INTERVAL.get(
            self.algorithm, self.entry.learn_defaults()["log_interval"])
        options = LoopOptions(log_interval=int(interval), callback=on_step, hooks=hooks)
        try:
            with logger.using(self._logger):
                if hooks is not None:
                    hooks.init_callback(self)
                    hooks.on_training_start(locals(), globals())
                self.entry.train(model, self.env, int(total_timesteps), options)
                if hooks is not None:
                    hooks.on_training_end()
        finally:
            if bar is not None:
                bar.close()
            if not self._custom_logger:
                self._logger.close()  # its files complete; a custom logger stays the user's
        return self

    # -- acting ----------------------------------------------------------------------------------
    def _batch(self, observation: Any) -> tuple[Any, bool, int]:
        """``(batch, was_batched, batch size)`` of one observation or a batch (nested for
        Dict/Tuple spaces: a dict/tuple of one observation's entries, or of batches)."""
        space = self.observation_space
        assert space is not None
        if isinstance(observation, tuple) and len(observation) == 2 and \
                isinstance(observation[1], dict):
            raise RLBaseError("predict got the (observation, info) pair of a gymnasium env's "
                              "reset(): write obs, info = env.reset() and pass obs (a VecEnv's "
                              "reset() returns the observations alone; do not mix Gym and "
                              "VecEnv APIs)")
        if nested.is_nested(space):
            return _nested_batch(space, observation)
        obs = np.asarray(observation)
        shape = tuple(space.shape or ())
        if obs.shape == shape:
            return obs[None], False, 1
        if obs.shape[1:] != shape:
            raise RLBaseError(f"observation of shape {obs.shape} does not fit the observation "
                              f"space {space}: use {shape} or (batch, *{shape})")
        return obs, True, len(obs)

    def _state_mask(self, n: int, state: Any, mask: Any) -> tuple[np.ndarray, np.ndarray]:
        model = self._require_model()
        state = model.initial_states(n) if state is None else np.asarray(state, np.float32)
        mask = np.zeros(n, np.float32) if mask is None else \
            np.asarray(mask, np.float32).reshape(n)
        return state, mask

    def step(self, obs: Any, state: Any = None, mask: Any = None,
             deterministic: bool = False, action_masks: Any = None) -> tuple:
        """The algorithm model's ``step`` (so evaluate_policy takes a class instance)."""
        model = self._require_model()
        if action_masks is None:
            return model.step(obs, state, mask, deterministic=deterministic)
        return _maskable(model, type(self).__name__).step(
            obs, state, mask, deterministic=deterministic, action_masks=action_masks)

    @property
    def action_masking(self) -> bool | str:
        """The model's ``action_masks`` setting (where evaluate_policy reads the env's masks
        from; False for algorithms without one)."""
        return self._require_model().action_masking

    def initial_states(self, batch: int) -> np.ndarray:
        return self._require_model().initial_states(batch)

    @property
    def initial_state(self) -> np.ndarray | None:
        return self._require_model().initial_state

    def normalized_like_training(self, venv: VecEnv) -> VecEnv:
        """``venv`` seeing observations as training does (see BaseModel)."""
        return self._require_model().normalized_like_training(venv)

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None,
                deterministic: bool = False, *, mask: Any = None, action_masks: Any = None
                ) -> tuple[np.ndarray, np.ndarray | None]:
        """SB3's predict: ``(actions, next state)`` (see rlbase/docs/sb3_names.md);
        ``mask`` is ``episode_start``'s Stable Baselines 2 name; ``action_masks``
        (sb3-contrib's): the valid actions, ``[n]`` or ``[B, n]`` (actor-critic models).
        """
        if mask is not None and episode_start is not None:
            raise RLBaseError("predict: give episode_start or its old name mask, not both")
        model = self._require_model()
        obs, batched, n = self._batch(observation)
        state, starts = self._state_mask(n, state, episode_start if mask is None else mask)
        if action_masks is None:
            actions, _, state, _ = model.step(obs, state, starts, deterministic=deterministic)
        else:
            actions, _, state, _ = _maskable(model, type(self).__name__).step(
                obs, state, starts, deterministic=deterministic, action_masks=action_masks)
        actions = np.asarray(actions)
        if isinstance(self.action_space, gym.spaces.Box):
            actions = np.clip(actions, self.action_space.low, self.action_space.high)
        next_state = None if model.state_size == 0 else state
        return (actions if batched else actions[0, ...]), next_state

    def export(self, path: Any, format: str = "saved_model", quantize: bool = False) -> str:
        """Write the deterministic policy to the folder ``path`` as a TensorFlow SavedModel,
        TFLite or ONNX file whose actions equal ``predict(obs, deterministic=True)`` on raw
        env observations (VecNormalize statistics baked in); returns what was written. See
        rlbase/docs/export.md."""
        return self._require_model().export(os.fspath(path), format, quantize=quantize)

    def action_probability(self, observation: Any, state: Any = None, mask: Any = None,
                           actions: Any = None, logp: bool = False) -> Any:
        """Discrete: the probability of every action (``[n]`` or ``[B, n]``); Box: ``(mean,
        std)``. With ``actions``: the probability (density) of those actions, or its log."""
        model = self._require_model()
        obs, batched, n = self._batch(observation)
        state, mask = self._state_mask(n, state, mask)
        out = model.action_probabilities(obs, state, mask)
        if actions is None:
            out = out if batched else tuple(x[0] for x in out)
            return out[0] if len(out) == 1 else out
        acts = np.asarray(actions)
        if isinstance(self.action_space, gym.spaces.Discrete):
            idx = acts.reshape(n).astype(np.int64) - int(self.action_space.start)
            p = out[0][np.arange(n), idx]
            logp_val = np.log(p)
        elif isinstance(self.action_space, gym.spaces.Box):
            mean, std = out
            if not np.all(std > 0):
                raise RLBaseError(f"{type(self).__name__}'s policy is deterministic: actions "
                                  "have no probability density")
            acts = acts.reshape(mean.shape)
            z = (acts - mean) / std
            logp_val = np.sum(-0.5 * z ** 2 - np.log(std) - 0.5 * np.log(2 * np.pi), axis=-1)
        else:
            raise RLBaseError(f"action_probability with actions needs a Discrete or Box action "
                              f"space, got {self.action_space}")
        result = logp_val if logp else np.exp(logp_val)
        return result if batched else result[0]

    # -- env -------------------------------------------------------------------------------------
    def get_env(self) -> VecEnv | None:
        """The training env (a VecEnv), or None."""
        return self.env

    def get_vec_normalize_env(self) -> VecNormalize | None:
        """The training env's VecNormalize wrapper, or None."""
        wrapper = find_wrapper(self.env, VecNormalize) if self.env is not None else None
        return wrapper if isinstance(wrapper, VecNormalize) else None

    @property
    def n_envs(self) -> int:
        """How many envs the model trains on (those of its env, else the file's)."""
        if self.env is not None:
            return int(self.env.num_envs)
        return int(self.model.num_envs) if self.model is not None else 1

    @property
    def policy_class(self) -> type[Policy]:
        return type(self.policy)

    def set_env(self, env: VecEnv | gym.Env | str, force_reset: bool = True) -> None:
        """SB3's set_env; another number of envs (which SB3 refuses) rebuilds the model
        around the same parameters, and ``force_reset=False`` is refused."""
        _check_force_reset(force_reset)
        venv = ensure_monitor(as_vec_env(env))
        if self.observation_space is not None and (
                venv.observation_space != self.observation_space
                or venv.action_space != self.action_space):
            trained_normalized = self.model is not None and self.model.normalization is not None
            raise RLBaseError(f"set_env: the env's spaces ({venv.observation_space}, "
                              f"{venv.action_space}) differ from the model's "
                              f"({self.observation_space}, {self.action_space})"
                              f"{NORMALIZE_HINT if trained_normalized else ''}")
        self.env = venv
        if self.model is None:
            self.observation_space, self.action_space = venv.observation_space, venv.action_space
            self._setup_model()
        elif self.model.num_envs != venv.num_envs:
            params, steps = self.model.get_parameters(), self.model.num_timesteps
            normalization = self.model.normalization
            self._setup_model()
            assert self.model is not None
            self.model.set_parameters(params)
            self.model.num_timesteps = steps
            if normalization is not None and self.model.normalization is None:
                self.model.normalization = normalization
        else:
            self.model.attach_env(venv)

    def set_random_seed(self, seed: int | None = None) -> None:
        """Seed python, numpy and TensorFlow now, the action space and the env (None: nothing
        changes)."""
        if seed is None:
            return
        set_global_seeds(seed)
        self.seed = seed
        if self.action_space is not None:
            self.action_space.seed(seed)
        if self.env is not None:
            self.env.seed(seed)

    # -- saving, loading ------------------------------------------------------------------------
    def save(self, path: Any, exclude: Iterable[str] | None = None,
             include: Iterable[str] | None = None) -> None:
        """SB3's save (see rlbase/docs/sb3_names.md): one model file any rlbase path loads.
        The weights and the settings that shape them cannot be excluded."""
        model = self._require_model()
        fields, attributes = excluded_names(self.entry.config, exclude, include)
        api: dict[str, Any] = {"class": type(self).__name__, "policy": self.policy_name,
                               "policy_kwargs": jsonable(self.policy_kwargs)}
        api.update({k: getattr(self, k) for k in ("verbose", "tensorboard_log")
                    if k not in attributes})
        extra: dict[str, Any] = {"api": api}
        if fields:
            kept = {k: v for k, v in model.hyperparameters.items() if k not in fields}
            extra.update(hyperparameters=jsonable(kept), unserializable=unserializable(kept))
        if "num_timesteps" in attributes:
            extra["num_timesteps"] = 0
        with writing(path, "zip") as target:
            model.save(target, extra_metadata=extra)

    @classmethod
    def load(cls, path: Any, env: VecEnv | gym.Env | str | None = None, device: str = "auto",
             custom_objects: dict[str, Any] | None = None, print_system_info: bool = False,
             force_reset: bool = True, **kwargs: Any) -> BaseRLModel:
        """SB3's load (see rlbase/docs/sb3_names.md) of a file saved by any rlbase path (a
        class, learn(), the CLI, a checkpoint), with the file's own network and settings.

        custom_objects takes hyperparameters, ``verbose`` and ``tensorboard_log`` only;
        ``force_reset=False`` is refused. kwargs: hyperparameters that win over the file's and
        custom_objects; those that could not be saved, such as callables, must be given again.
        """
        _check_force_reset(force_reset)
        config = registry.get_algorithm(cls.algorithm).config
        kwargs = {**custom_object_kwargs(config, custom_objects), **kwargs, "device": device}
        with reading(path, "zip") as file:
            return cls._load_file(file, env, print_system_info, kwargs)

    @classmethod
    def _load_file(cls, path: str, env: VecEnv | gym.Env | str | None, print_system_info: bool,
                   kwargs: dict[str, Any]) -> BaseRLModel:
        metadata = load_file(path)[0]
        check_model_metadata(metadata, path, cls.algorithm)
        if print_system_info:
            print(f"== saved with: {metadata.get('versions')}\n== this system: "
                  f"{library_versions()}")
        config = registry.get_algorithm(cls.algorithm).config
        given = {f for k in kwargs for f in (config.fields_of(k) or [k])}
        lost = sorted(set(metadata.get("unserializable") or ()) - given)
        if lost:  # SB3 warns likewise when an object cannot be deserialized
            warnings.warn(f"{path}: {', '.join(lost)} could not be saved (not JSON, e.g. a "
                          "function) and take their defaults; give them again with "
                          f"custom_objects={{{lost[0]!r}: ...}} or as load() keywords",
                          UserWarning, stacklevel=3)
        api = metadata.get("api") or {}
        policy = kwargs.pop("policy", api.get("policy") or metadata.get("network"))
        verbose = kwargs.pop("verbose", api.get("verbose", 0))
        tensorboard_log = kwargs.pop("tensorboard_log", api.get("tensorboard_log"))
        seed = kwargs.pop("seed", None)
        # Seeded before anything draws from the generators (the model's sampling seeds); a
        # seed given here wins over the file's.
        set_global_seeds(seed)
        venv = ensure_monitor(as_vec_env(env, seed)) if env is not None else None
        model = registry.load(path, num_envs=venv.num_envs if venv is not None else None,
                              overrides=None if seed is None else {"seed": seed})
        obj = cls.__new__(cls)
        BaseRLModel.__init__(obj, policy, None, seed=seed, verbose=verbose,
                             tensorboard_log=tensorboard_log, _init_setup_model=False, **kwargs)
        _check_same_architecture(path, obj, model, "policy_kwargs" in kwargs)
        obj.policy_kwargs = dict(metadata.get("network_kwargs") or {})
        obj.model = model
        # The file's settings under the ones given here (any spelling, converted).
        model.config = type(model.config).build(obj.hyperparameters, model.num_envs,
                                                base=model.config.to_dict())
        obj.hyperparameters = {k: v for k, v in model.config.to_dict().items()
                               if k not in RESERVED}
        obj.observation_space, obj.action_space = model.observation_space, model.action_space
        if venv is not None:
            obj.set_env(venv)
        return obj

    # -- parameters -----------------------------------------------------------------------------
    def get_parameters(self) -> dict[str, dict[str, np.ndarray]]:
        """Every array the model file holds (weights, optimizer state, statistics) as
        ``{object: {name: array}}`` (``{'policy': {'0000': ...}, 'optimizer': {...}}``; the
        objects are the algorithm's networks and optimizers); a copy, in memory."""
        nested_params: dict[str, dict[str, np.ndarray]] = {}
        for key, array in self._require_model().get_parameters().items():
            group, _, name = key.partition("/")
            nested_params.setdefault(group, {})[name] = array
        return nested_params

    def set_parameters(self, load_path_or_dict: Any, exact_match: bool = True,
                       device: str = "auto") -> None:
        """SB3's set_parameters, from a dict shaped as :meth:`get_parameters` gives it or a
        model file; unknown names and wrong shapes are errors even without exact_match."""
        _check_device(device)
        given = load_path_or_dict
        if not isinstance(given, dict):
            with reading(given, "zip") as path:
                arrays = load_file(path)[1]
            current = self._require_model().parameter_arrays()
            self._require_model().set_parameters({k: v for k, v in arrays.items()
                                                  if k in current}, exact_match=exact_match)
            return
        objects = self.get_parameters()
        for name, arrays in given.items():
            if not isinstance(arrays, dict):
                raise RLBaseError(f"set_parameters takes {{object: {{name: array}}}} as "
                                  f"get_parameters() gives it, got {type(arrays).__name__} for "
                                  f"{name!r}; for {{'object/name': array}} use load_parameters")
            if name not in objects:
                raise RLBaseError(f"set_parameters: unknown object {name!r}; this "
                                  f"{type(self).__name__} has {', '.join(objects)}")
        if exact_match:
            refuse_missing(objects, given, "object")
        flat = {f"{name}/{key}" if key else name: value
                for name, arrays in given.items() for key, value in arrays.items()}
        self._require_model().set_parameters(flat, exact_match=exact_match)

    def load_parameters(self, load_path_or_dict: str | dict[str, np.ndarray],
                        exact_match: bool = True) -> None:
        """Set arrays by their file names, ``{'policy/0000': array, ...}`` (a dict, a saved
        model or an .npz file): Stable Baselines 2's form of :meth:`set_parameters`.

        exact_match: every array must be given; False: missing ones keep their values.
        Unknown names and wrong shapes are always errors.
        """
        given: Any = load_path_or_dict
        if isinstance(given, (str, os.PathLike)):
            if os.fspath(given).endswith(".npz"):
                with np.load(os.fspath(given), allow_pickle=False) as npz:
                    given = {k: npz[k] for k in npz.files}
            else:
                arrays = load_file(given)[1]
                current = self._require_model().parameter_arrays()
                given = {k: v for k, v in arrays.items() if k in current}
        if not isinstance(given, dict):
            raise RLBaseError(f"load_parameters takes a dict, a model file or an .npz file, "
                              f"got {type(given).__name__}")
        self._require_model().set_parameters(given, exact_match=exact_match)

    # -- replay buffer (classes whose model replays) ---------------------------------------------
    def _replay_model(self, what: str) -> ReplayModel:
        model = self._require_model()
        if not isinstance(model, ReplayModel) or model.replay_buffer is None:
            raise AttributeError(f"{type(self).__name__} has no replay buffer (it learns from "
                                 f"fresh rollouts): {what} exists for DQN, DDPG, TD3 and SAC")
        return model

    @property
    def replay_buffer(self) -> Any:
        """The model's replay buffer (rlbase.common.buffers.replay_buffer's, raw transitions)."""
        return self._replay_model("replay_buffer").replay_buffer

    def save_replay_buffer(self, path: Any) -> None:
        """SB3's save_replay_buffer (``.pkl`` added), though the file is rlbase's zip, not a
        pickle."""
        model = self._replay_model("save_replay_buffer")
        with writing(path, "pkl") as target:
            save_buffer(model, target)

    def load_replay_buffer(self, path: Any, truncate_last_traj: bool = True) -> None:
        """Fill the replay buffer from a :meth:`save_replay_buffer` file (same spaces, number
        of envs and buffer size). The episodes in progress in the file end where it was written
        (a HER buffer can then relabel them); ``truncate_last_traj=False`` is refused.
        """
        model = self._replay_model("load_replay_buffer")
        if truncate_last_traj is not True:
            raise RLBaseError("load_replay_buffer(truncate_last_traj=False) continues the last "
                              "episodes with the env's next steps, but learn() resets the "
                              "envs, which ends them: leave it True")
        with reading(path, "pkl") as source:
            load_buffer(model, source)
        if isinstance(model.replay_buffer, HerReplayBuffer):  # SB3's truncate_last_trajectory
            model.replay_buffer.start_episodes()

    # -- hyperparameters as attributes ----------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        """A hyperparameter under rlbase's or SB3's name (``model.gamma``,
        ``model.learning_rate``, ``model.n_steps``); names SB3 counts in another unit say
        which rlbase setting holds it."""
        if name.startswith("_") or name in OWN_ATTRIBUTES or "entry" not in self.__dict__:
            raise AttributeError(name)
        if name == "replay_buffer":  # the property found none: say why
            self._replay_model(name)
        if name == "logger":
            raise AttributeError(self._no_logger())
        config = self.entry.config
        if config.field_names().count(name) == 0 and not config.fields_of(name):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        values = self._settings()
        if name in values:
            return values[name]
        targets = config.rules_of(name)
        fields = [f for f, _ in targets]
        # The SB3 value whose conversion gives every field's current value: one field holding
        # it as it is, the others what it converts to (A2C's learning_rate=x is lr=x with
        # lrschedule='constant'; DDPG's is both learning rates, equal).
        plain = {values[f] for f, rule in targets if rule.convert is None
                 and _hashable(values[f])}
        if len(plain) == 1:
            candidate = next(iter(plain))
            converted = [rule.value(candidate, {}, self.n_envs) == values[f]
                         for f, rule in targets if rule.convert is not None]
            if all(converted):
                return candidate
        held = ", ".join(f"{f}={values[f]!r}" for f in fields)
        raise AttributeError(f"{type(self).__name__} holds SB3's {name} in rlbase's unit as "
                             f"{held} (see rlbase/docs/sb3_names.md)")

    def __setattr__(self, name: str, value: Any) -> None:
        entry = self.__dict__.get("entry")
        if entry is not None and name not in OWN_ATTRIBUTES and entry.config.accepts(name) \
                and name not in type(self).__dict__:
            raise RLBaseError(f"{type(self).__name__}.{name} is a hyperparameter: set it when "
                              f"building the model, or load(path, {name}=...)")
        super().__setattr__(name, value)

    def _settings(self) -> dict[str, Any]:
        """The hyperparameters in force: the model's config (else the given ones over the
        defaults)."""
        if self.model is not None:
            return self.model.config.to_dict()
        num_envs = self.env.num_envs if self.env is not None else 1
        return self.entry.config.build(self.hyperparameters, num_envs, warn=False).to_dict()

    # -- supervised pre-training and evaluation -------------------------------------------------
    def pretrain(self, dataset: Any, n_epochs: int = 10, learning_rate: float = 1e-4,
                 val_interval: int | None = None) -> BaseRLModel:
        """Fit the policy to an :class:`~rlbase.compat.sb3.pretraining.ExpertDataset` by
        supervised learning (behaviour cloning)."""
        model = self._require_model()
        space = self.action_space
        if not isinstance(space, (gym.spaces.Discrete, gym.spaces.Box)):
            raise RLBaseError(f"pretrain needs a Discrete or Box action space, got {space}")
        variables, loss_fn, after = model.pretrain_parts()
        assert self.observation_space is not None
        fit_policy(variables, loss_fn, dataset, self.observation_space, space, n_epochs,
                   learning_rate, val_interval, self.verbose)
        after()
        return self

    def test(self, num_episodes: int = 10, env: Any = None, deterministic: bool = True
             ) -> tuple[float, float]:
        """Mean and std of the return over ``num_episodes`` episodes (on the training env by
        default), observations normalized as in training."""
        env = env if env is not None else self.env
        if env is None:
            raise RLBaseError("test() needs an env: pass one or set_env() first")
        return evaluate_policy(self, env, num_episodes, deterministic)


def _maskable(model: BaseModel, name: str) -> OnPolicyModel | EpsilonGreedyQ:
    """``model`` when its ``step`` takes action masks (the actor-critic models and the
    Q-networks), else a one-line error."""
    if not isinstance(model, (OnPolicyModel, EpsilonGreedyQ)):
        raise RLBaseError(f"{name} does not act with action masks: action_masks is for the "
                          "actor-critic algorithms (a2c, ppo, acktr, trpo, gail, acer) and "
                          "the Q-networks (dqn, qrdqn, pqn)")
    return model


def _nested_batch(space: gym.Space, observation: Any) -> tuple[Any, bool, int]:
    """:meth:`BaseRLModel._batch` for Dict/Tuple spaces: every entry one observation, or every
    entry a batch of the same size."""
    try:
        found = len(nested.flatten(space, observation))
    except (KeyError, IndexError, TypeError) as exc:
        raise RLBaseError(f"observation {type(observation).__name__} does not fit the "
                          f"observation space {space} (missing {exc})") from None
    expected = len(nested.leaf_spaces(space))
    if found != expected:  # a tuple too short (zip stops early)
        raise RLBaseError(f"observation {type(observation).__name__} does not fit the "
                          f"observation space {space}: {found} entries, not {expected}")
    obs, batched = nested.as_batch(space, observation)
    leaves = nested.flatten(space, obs)
    sizes = set()
    for name, leaf, sub in zip(nested.leaf_names(space), leaves, nested.leaf_spaces(space)):
        if leaf.shape[1:] != tuple(sub.shape or ()):
            raise RLBaseError(f"observation entry {name!r} of shape {leaf.shape} does not fit "
                              f"{sub}: use {sub.shape} or (batch, *{sub.shape})")
        sizes.add(len(leaf))
    if len(sizes) != 1:
        raise RLBaseError(f"the observation's entries hold batches of different sizes "
                          f"{sorted(sizes)}")
    return obs, batched, sizes.pop()


def _timestep_count(total_timesteps: Any) -> int:
    """learn()'s ``total_timesteps``: an int, or a float that is a whole number (``1e5``)."""
    if isinstance(total_timesteps, (float, np.floating)) and float(total_timesteps).is_integer():
        total_timesteps = int(total_timesteps)
    if isinstance(total_timesteps, bool) or not isinstance(total_timesteps, (int, np.integer)) \
            or total_timesteps < 0:
        raise RLBaseError(f"total_timesteps must be a non-negative whole number (an int, or "
                          f"a float such as 1e5), got {total_timesteps!r}")
    return int(total_timesteps)


def _check_device(device: Any) -> str:
    """SB3's ``device`` as the device type TensorFlow runs on: 'auto', 'cpu', 'cuda'/'gpu'
    (refused when TensorFlow sees no GPU)."""
    if device not in ("auto", "cpu", "cuda", "gpu"):
        raise RLBaseError(f"device must be 'auto', 'cpu', 'cuda' or 'gpu', got {device!r}")
    has_gpu = bool(tf.config.list_physical_devices("GPU"))
    if device in ("cuda", "gpu") and not has_gpu:
        raise RLBaseError(f"device={device!r}: TensorFlow sees no GPU on this machine; use "
                          "device='auto' or 'cpu'")
    return "cuda" if device != "cpu" and has_gpu else "cpu"


def _check_force_reset(force_reset: Any) -> None:
    if force_reset is not True:
        raise RLBaseError(f"force_reset={force_reset!r}: every learn() starts from a reset of "
                          "its env in rlbase, so the env's last observation cannot be "
                          "continued; leave force_reset=True")


def _check_same_architecture(path: str, obj: BaseRLModel, model: BaseModel,
                             kwargs_given: bool) -> None:
    """load() rebuilds the network from the file: settings given to load() that shape it must
    be the file's (SB3 refuses other policy_kwargs likewise)."""
    if kwargs_given and jsonable(obj.policy_kwargs) != jsonable(model.network_kwargs):
        raise RLBaseError(f"load: policy_kwargs give the network {obj.policy_kwargs}, the file "
                          f"{path} holds {model.network_kwargs}: leave policy_kwargs out")
    built = obj.entry.config.build(obj.hyperparameters, model.num_envs, warn=False).to_dict()
    for name in model.config.architecture():
        given = {k for k in obj.hyperparameters
                 if name in (obj.entry.config.fields_of(k) or [k])}
        if given and jsonable({name: built[name]}) != jsonable({name: getattr(model.config,
                                                                              name)}):
            raise RLBaseError(f"load: {name}={built[name]!r} differs from the file's "
                              f"{getattr(model.config, name)!r}, which shapes its variables: "
                              f"leave {', '.join(sorted(given))} out")


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
