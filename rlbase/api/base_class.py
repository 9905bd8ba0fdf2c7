"""The model classes' shared layer (the Stable Baselines way) over the algorithms.

A class holds the algorithm's own ``Model``, built by the same ``build_model`` function
``learn()`` calls (through :mod:`rlbase.registry`), and trains it in memory with the
algorithm's ``train`` loop: a second ``learn()`` continues from the same weights, optimizer
state, replay buffer and compiled calls, writing no file and tracing nothing again.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from rlbase import registry
from rlbase.api.callbacks import to_callback
from rlbase.api.policy_kwargs import translate_policy_kwargs
from rlbase.common import logger, nested
from rlbase.common.base_model import BaseModel, jsonable
from rlbase.common.cmd_util import as_vec_env, ensure_monitor
from rlbase.common.errors import RLBaseError
from rlbase.common.evaluation import evaluate_policy
from rlbase.common.loop import LoopOptions
from rlbase.common.misc_util import set_global_seeds
from rlbase.common.serialization import NORMALIZE_HINT, load_file
from rlbase.common.vec_env import VecEnv

# Stable Baselines policy names -> rlbase network names.
POLICY_NETWORKS = {"MlpPolicy": "mlp", "CnnPolicy": "cnn", "MlpLstmPolicy": "lstm",
                   "MlpLnLstmPolicy": "lnlstm", "CnnLstmPolicy": "cnn_lstm",
                   "CnnLnLstmPolicy": "cnn_lnlstm", "MultiInputPolicy": "mlp"}
ALL_POLICIES = tuple(POLICY_NETWORKS)
FEED_FORWARD = ("MlpPolicy", "CnnPolicy", "MultiInputPolicy")
# learn() arguments the class itself supplies.
RESERVED = ("network", "env", "total_timesteps", "seed", "load_path", "callback", "resume",
            "checkpoint_path", "checkpoint_interval", "log_interval")


class BaseRLModel:
    """``Cls(policy, env, **hyperparameters, policy_kwargs=None, seed=None, verbose=0,
    tensorboard_log=None)``.

    policy: a policy name the algorithm supports ('MlpPolicy', 'CnnPolicy', ...), a
        registered network name ('mlp', 'cnn', ...) or a network builder callable.
    env: a VecEnv, a gymnasium env or an env id (None: set one later with set_env or load).
    hyperparameters: any argument of the algorithm's learn() except those the class supplies,
        under rlbase's name or Stable-Baselines3's (``learning_rate``, ``n_steps``, ...; see
        rlbase/docs/sb3_names.md).
    policy_kwargs: network keyword arguments (num_layers, num_hidden, value_network, ... or
        SB3's ``net_arch`` and ``activation_fn``).
    seed: seeds python, numpy, TensorFlow and the env.
    verbose: 0 silent, 1 training tables to stdout.
    tensorboard_log: folder for TensorBoard event files (one sub-folder per learn() call).
    """

    algorithm = ""
    policies: tuple[str, ...] = ALL_POLICIES
    default_network = "mlp"
    #: learn() arguments this class fixes (TD3's options on DDPG)
    presets: dict[str, Any] = {}

    def __init__(self, policy: str | Callable | None, env: VecEnv | gym.Env | str | None,
                 policy_kwargs: dict[str, Any] | None = None, seed: int | None = None,
                 verbose: int = 0, tensorboard_log: str | None = None,
                 _init_setup_model: bool = True, **hyperparameters: Any):
        self.entry = registry.get_algorithm(self.algorithm)
        self.policy = policy
        self.network = self._network_for(policy)
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
        from_kwargs, policy_kwargs = translate_policy_kwargs(self.algorithm,
                                                             dict(policy_kwargs or {}))
        hyperparameters = {**from_kwargs, **hyperparameters}
        allowed = self._hyperparameter_names()
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
        from rlbase.common.models import registered_networks
        if policy not in registered_networks():
            raise RLBaseError(f"unknown policy {policy!r}: use one of {', '.join(self.policies)}"
                              f", a network name ({', '.join(registered_networks())}) or a "
                              "callable")
        return policy

    def _hyperparameter_names(self) -> set[str]:
        return set(self.entry.config.accepted_names()) - set(RESERVED)

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

    def learn(self, total_timesteps: int, callback: Any = None, log_interval: int | None = None,
              tb_log_name: str = "run", reset_num_timesteps: bool = True,
              progress_bar: bool = False) -> BaseRLModel:
        """Train for ``total_timesteps`` more env steps; a second call continues training in
        memory.

        callback: ``callback(model, info)`` returning False stops training, a
            :class:`~rlbase.api.callbacks.BaseCallback`, or a list of them.
        log_interval: the algorithm's logging interval (updates or episodes).
        tb_log_name: TensorBoard run name (``<tensorboard_log>/<tb_log_name>_<n>``).
        reset_num_timesteps: start the timestep count from 0 (False: keep counting).
        progress_bar: show a tqdm progress bar.
        """
        if self.env is None:
            raise RLBaseError(f"{type(self).__name__}.learn needs an env: pass one to the "
                              "constructor, to load() or to set_env()")
        if isinstance(total_timesteps, bool) or not isinstance(total_timesteps, (int, np.integer)) \
                or total_timesteps < 0:
            raise RLBaseError(f"total_timesteps must be a non-negative integer, got "
                              f"{total_timesteps!r}")
        model = self._require_model()
        self._learn_calls += 1
        if reset_num_timesteps:
            model.num_timesteps = 0
        callbacks = to_callback(callback)
        if callbacks is not None:
            callbacks.init_callback(self)
        bar = _progress_bar(total_timesteps) if progress_bar else None
        start = model.num_timesteps

        def on_step(inner: Any, info: dict[str, Any]) -> bool:
            if bar is not None:
                bar.n = min(int(inner.num_timesteps) - start, total_timesteps)
                bar.refresh()
            return callbacks is None or callbacks(self, info) is not False

        interval = log_interval if log_interval is not None else \
            self.hyperparameters.get("log_interval", self.entry.learn_defaults()["log_interval"])
        options = LoopOptions(log_interval=int(interval), callback=on_step)
        formats = (["stdout"] if self.verbose else []) + \
            (["tensorboard"] if self.tensorboard_log else [])
        logdir = os.path.join(self.tensorboard_log, f"{tb_log_name}_{self._learn_calls}") \
            if self.tensorboard_log else None
        try:
            with logger.scoped_configure(dir=logdir, format_strs=formats):
                self.entry.train(model, self.env, int(total_timesteps), options)
        finally:
            if bar is not None:
                bar.close()
        return self

    # -- acting ----------------------------------------------------------------------------------
    def _batch(self, observation: Any) -> tuple[Any, bool, int]:
        """``(batch, was_batched, batch size)`` of one observation or a batch (nested for
        Dict/Tuple spaces: a dict/tuple of one observation's entries, or of batches)."""
        space = self.observation_space
        assert space is not None
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
             deterministic: bool = False) -> tuple:
        """The algorithm model's ``step`` (so evaluate_policy takes a class instance)."""
        return self._require_model().step(obs, state, mask, deterministic=deterministic)

    def initial_states(self, batch: int) -> np.ndarray:
        return self._require_model().initial_states(batch)

    @property
    def initial_state(self) -> np.ndarray | None:
        return self._require_model().initial_state

    def normalized_like_training(self, venv: VecEnv) -> VecEnv:
        """``venv`` seeing observations as training does (see BaseModel)."""
        return self._require_model().normalized_like_training(venv)

    def predict(self, observation: Any, state: Any = None, mask: Any = None,
                deterministic: bool = False) -> tuple[np.ndarray, Any]:
        """Actions for one observation or a batch; returns ``(actions, next state)``."""
        model = self._require_model()
        obs, batched, n = self._batch(observation)
        state, mask = self._state_mask(n, state, mask)
        actions, _, state, _ = model.step(obs, state, mask, deterministic=deterministic)
        actions = np.asarray(actions)
        if isinstance(self.action_space, gym.spaces.Box):
            actions = np.clip(actions, self.action_space.low, self.action_space.high)
        return (actions if batched else actions[0]), state

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
        return self.env

    def set_env(self, env: VecEnv | gym.Env | str) -> None:
        """Train on another env with the same observation and action spaces (another number
        of envs rebuilds the model's training call around the same parameters)."""
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

    def set_random_seed(self, seed: int | None) -> None:
        """Seed python, numpy and TensorFlow now, and the env."""
        set_global_seeds(seed)
        self.seed = seed
        if self.env is not None and seed is not None:
            self.env.seed(seed)

    # -- saving, loading, parameters --------------------------------------------------------------
    def save(self, path: str) -> None:
        """One model file (any rlbase path loads it) plus what this class needs to rebuild."""
        model = self._require_model()
        model.save(path, extra_metadata={"api": {
            "class": type(self).__name__,
            "policy": self.policy if isinstance(self.policy, str) else None,
            "policy_kwargs": jsonable(self.policy_kwargs),
        }})

    @classmethod
    def load(cls, path: str, env: VecEnv | gym.Env | str | None = None, **kwargs: Any
             ) -> BaseRLModel:
        """Rebuild a model saved by any rlbase path (a class, learn(), the CLI, a checkpoint)
        from the file's own network and settings; ``kwargs`` override training settings
        (hyperparameters that could not be saved, such as callables, must be given again)."""
        path = os.path.expanduser(os.fspath(path))
        metadata = load_file(path)[0]
        if metadata.get("algorithm") != cls.algorithm:
            raise RLBaseError(f"model file {path} holds a '{metadata.get('algorithm')}' "
                              f"model, not '{cls.algorithm}'")
        api = metadata.get("api") or {}
        policy = kwargs.pop("policy", api.get("policy") or metadata.get("network"))
        verbose, tensorboard_log = kwargs.pop("verbose", 0), kwargs.pop("tensorboard_log", None)
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

    def get_parameters(self) -> dict[str, np.ndarray]:
        """Every array the model file holds (weights, optimizer state, statistics), by the
        names the file uses; a copy, in memory."""
        return self._require_model().get_parameters()

    def load_parameters(self, load_path_or_dict: str | dict[str, np.ndarray],
                        exact_match: bool = True) -> None:
        """Set arrays by name (a dict like get_parameters', a saved model or an .npz file).

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

    # -- supervised pre-training and evaluation -------------------------------------------------
    def pretrain(self, dataset: Any, n_epochs: int = 10, learning_rate: float = 1e-4,
                 val_interval: int | None = None) -> BaseRLModel:
        """Fit the policy to an :class:`~rlbase.api.behaviour_cloning.ExpertDataset` by
        supervised learning (behaviour cloning)."""
        from rlbase.api.behaviour_cloning import fit_policy

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


def _progress_bar(total: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=int(total), unit="steps")
