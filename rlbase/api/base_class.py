"""The model classes' shared layer (the Stable Baselines way) over each algorithm's learn().

A class stores its hyperparameters and env, and holds the algorithm's own model object (the
one learn() builds and returns). ``learn`` saves that model to a temporary file and runs the
algorithm's learn() with ``load_path`` pointing at it, so training continues from the same
weights, optimizer state and timestep count; there is one implementation of each algorithm.
"""

from __future__ import annotations

import inspect
import os
import tempfile
from typing import Any, Callable

import gymnasium as gym
import numpy as np

from rlbase.api.callbacks import to_callback
from rlbase.common import logger
from rlbase.common.cmd_util import as_vec_env
from rlbase.common.errors import RLBaseError
from rlbase.common.evaluation import evaluate_policy
from rlbase.common.misc_util import set_global_seeds
from rlbase.common.model_io import jsonable
from rlbase.common.serialization import load_file, save_file, space_from_json
from rlbase.common.vec_env import VecEnv

# Stable Baselines policy names -> rlbase network names.
POLICY_NETWORKS = {"MlpPolicy": "mlp", "CnnPolicy": "cnn", "MlpLstmPolicy": "lstm",
                   "MlpLnLstmPolicy": "lnlstm", "CnnLstmPolicy": "cnn_lstm",
                   "CnnLnLstmPolicy": "cnn_lnlstm"}
ALL_POLICIES = tuple(POLICY_NETWORKS)
FEED_FORWARD = ("MlpPolicy", "CnnPolicy")
# learn() arguments the class itself supplies.
RESERVED = ("network", "env", "total_timesteps", "seed", "load_path", "callback")


class BaseRLModel:
    """``Cls(policy, env, **hyperparameters, policy_kwargs=None, seed=None, verbose=0,
    tensorboard_log=None)``.

    policy: a policy name the algorithm supports ('MlpPolicy', 'CnnPolicy', ...), a
        registered network name ('mlp', 'cnn', ...) or a network builder callable.
    env: a VecEnv, a gymnasium env or an env id (None: set one later with set_env or load).
    hyperparameters: any argument of the algorithm's learn() except those the class supplies.
    policy_kwargs: network keyword arguments (num_layers, num_hidden, nlstm, value_network...).
    seed: seeds python, numpy, TensorFlow and the env at construction and the first learn().
    verbose: 0 silent, 1 training tables to stdout.
    tensorboard_log: folder for TensorBoard event files (one sub-folder per learn() call).
    """

    algorithm = ""
    policies: tuple[str, ...] = ALL_POLICIES
    log_interval_key = "log_interval"
    default_network = "mlp"

    def __init__(self, policy: str | Callable | None, env: VecEnv | gym.Env | str | None,
                 policy_kwargs: dict[str, Any] | None = None, seed: int | None = None,
                 verbose: int = 0, tensorboard_log: str | None = None,
                 _init_setup_model: bool = True, **hyperparameters: Any):
        self.policy = policy
        self.network = self._network_for(policy)
        self.policy_kwargs = dict(policy_kwargs or {})
        allowed = self._hyperparameter_names()
        for name in hyperparameters:
            if name not in allowed:
                raise RLBaseError(f"{type(self).__name__} has no hyperparameter {name!r}; "
                                  f"allowed: {', '.join(sorted(allowed))}")
        self.hyperparameters = dict(hyperparameters)
        self.seed, self.verbose, self.tensorboard_log = seed, verbose, tensorboard_log
        self._seed_pending = True
        self._learn_calls = 0
        self.env: VecEnv | None = None
        self.observation_space: gym.Space | None = None
        self.action_space: gym.Space | None = None
        self.model: Any = None
        set_global_seeds(seed)
        if env is not None:
            self.env = as_vec_env(env, seed)
            self.observation_space = self.env.observation_space
            self.action_space = self.env.action_space
            if _init_setup_model:
                self._setup_model()

    # -- what each algorithm class defines ------------------------------------------------------
    @staticmethod
    def _learn_fn() -> Callable[..., Any]:
        raise NotImplementedError

    def _build(self, ob_space: gym.Space, ac_space: gym.Space, nenvs: int) -> Any:
        """The algorithm's model object for these spaces, built as its learn() builds it."""
        raise NotImplementedError

    def _probabilities(self, obs: np.ndarray, state: np.ndarray, mask: np.ndarray
                       ) -> tuple[np.ndarray, ...]:
        """Discrete: ``(probs,)``; Box: ``(mean, std)``."""
        raise NotImplementedError

    def _pretrain_parts(self) -> tuple[list, Callable, Callable[[], None]]:
        """(variables, loss(obs, actions) -> tensor, after-training sync) for pretrain."""
        raise RLBaseError(f"pretrain is not supported by {type(self).__name__}; use A2C, PPO, "
                          "ACER or DQN")

    def _continue_kwargs(self) -> dict[str, Any]:
        """learn() arguments that carry state from the current model into a later learn()."""
        return {}

    # -- construction helpers ----------------------------------------------------------------
    def _network_for(self, policy: str | Callable | None) -> str | Callable:
        if policy is None:
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
        params = inspect.signature(self._learn_fn()).parameters.values()
        return {p.name for p in params if p.kind is not p.VAR_KEYWORD} - set(RESERVED)

    def _params(self) -> dict[str, Any]:
        """learn()'s defaults overridden by this model's hyperparameters."""
        params = inspect.signature(self._learn_fn()).parameters.values()
        out = {p.name: p.default for p in params if p.default is not p.empty}
        out.update(self.hyperparameters)
        return out

    def _setup_model(self) -> None:
        nenvs = self.env.num_envs if self.env is not None else 1
        self.model = self._build(self.observation_space, self.action_space, nenvs)

    def _require_model(self) -> Any:
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
        """Train for ``total_timesteps`` more env steps; a second call continues training.

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
        if total_timesteps < 1:
            raise RLBaseError(f"total_timesteps must be at least 1, got {total_timesteps!r}")
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
            self.model = inner  # the algorithm's model object, kept current for callbacks
            if bar is not None:
                bar.n = min(int(inner.num_timesteps) - start, total_timesteps)
                bar.refresh()
            return callbacks is None or callbacks(self, info) is not False

        kwargs = {**self.hyperparameters, **self.policy_kwargs, **self._continue_kwargs()}
        if log_interval is not None and self.log_interval_key:
            kwargs[self.log_interval_key] = log_interval
        seed = self.seed if self._seed_pending else None
        self._seed_pending = False
        formats = (["stdout"] if self.verbose else []) + \
            (["tensorboard"] if self.tensorboard_log else [])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.zip")
            model.save(path)
            logdir = os.path.join(self.tensorboard_log, f"{tb_log_name}_{self._learn_calls}") \
                if self.tensorboard_log else os.path.join(tmp, "log")
            try:
                with logger.scoped_configure(dir=logdir, format_strs=formats):
                    self.model = self._learn_fn()(
                        network=self.network, env=self.env, total_timesteps=int(total_timesteps),
                        seed=seed, load_path=path, callback=on_step, **kwargs)
            finally:
                if bar is not None:
                    bar.close()
        return self

    # -- acting ----------------------------------------------------------------------------------
    def _batch(self, observation: Any) -> tuple[np.ndarray, bool]:
        obs = np.asarray(observation)
        shape = self.observation_space.shape
        if obs.shape == tuple(shape):
            return obs[None], False
        if obs.shape[1:] != tuple(shape):
            raise RLBaseError(f"observation of shape {obs.shape} does not fit the observation "
                              f"space {self.observation_space}: use {shape} or (batch, *{shape})")
        return obs, True

    def _state_mask(self, n: int, state: Any, mask: Any) -> tuple[np.ndarray, np.ndarray]:
        state = self.model.initial_state(n) if state is None else np.asarray(state, np.float32)
        mask = np.zeros(n, np.float32) if mask is None else \
            np.asarray(mask, np.float32).reshape(n)
        return state, mask

    def step(self, obs: np.ndarray, state: Any = None, mask: Any = None,
             deterministic: bool = False) -> tuple:
        """The algorithm model's ``step`` (so evaluate_policy takes a class instance)."""
        return self._require_model().step(obs, state, mask, deterministic=deterministic)

    def initial_state(self, batch: int) -> np.ndarray:
        return self._require_model().initial_state(batch)

    def predict(self, observation: Any, state: Any = None, mask: Any = None,
                deterministic: bool = False) -> tuple[np.ndarray, Any]:
        """Actions for one observation or a batch; returns ``(actions, next state)``."""
        self._require_model()
        obs, batched = self._batch(observation)
        state, mask = self._state_mask(len(obs), state, mask)
        actions, _, state, _ = self.model.step(obs, state, mask, deterministic=deterministic)
        actions = np.asarray(actions)
        if isinstance(self.action_space, gym.spaces.Box):
            actions = np.clip(actions, self.action_space.low, self.action_space.high)
        return (actions if batched else actions[0]), state

    def action_probability(self, observation: Any, state: Any = None, mask: Any = None,
                           actions: Any = None, logp: bool = False) -> Any:
        """Discrete: the probability of every action (``[n]`` or ``[B, n]``); Box: ``(mean,
        std)``. With ``actions``: the probability (density) of those actions, or its log."""
        self._require_model()
        obs, batched = self._batch(observation)
        state, mask = self._state_mask(len(obs), state, mask)
        out = self._probabilities(obs, state, mask)
        if actions is None:
            out = out if batched else tuple(x[0] for x in out)
            return out[0] if len(out) == 1 else out
        acts = np.asarray(actions)
        if isinstance(self.action_space, gym.spaces.Discrete):
            idx = acts.reshape(len(obs)).astype(np.int64) - int(self.action_space.start)
            p = out[0][np.arange(len(obs)), idx]
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
        """Train on another env with the same observation and action spaces."""
        venv = as_vec_env(env)
        if self.observation_space is not None and (
                venv.observation_space != self.observation_space
                or venv.action_space != self.action_space):
            raise RLBaseError(f"set_env: the env's spaces ({venv.observation_space}, "
                              f"{venv.action_space}) differ from the model's "
                              f"({self.observation_space}, {self.action_space})")
        self.env = venv
        if self.model is None:
            self.observation_space, self.action_space = venv.observation_space, venv.action_space
            self._setup_model()

    def set_random_seed(self, seed: int | None) -> None:
        """Seed python, numpy and TensorFlow now, and the env at the next learn()."""
        set_global_seeds(seed)
        self.seed, self._seed_pending = seed, True
        if self.env is not None and seed is not None:
            self.env.seed(seed)

    # -- saving, loading, parameters --------------------------------------------------------------
    def save(self, path: str) -> None:
        """One model file: the algorithm's own format plus what this class needs to rebuild."""
        self._require_model().save(path)
        metadata, arrays, _ = load_file(path)
        hyper = jsonable(self.hyperparameters)
        metadata["api"] = {
            "class": type(self).__name__,
            "policy": self.policy if isinstance(self.policy, str) else None,
            "policy_kwargs": jsonable(self.policy_kwargs),
            "hyperparameters": {k: v for k, v in hyper.items() if v == self.hyperparameters[k]},
            # The exploration rate stochastic acting uses (DQN, Q-learning): not in their files.
            "epsilon": float(getattr(self.model, "epsilon", 0.0)),
        }
        save_file(path, metadata, arrays)

    @classmethod
    def load(cls, path: str, env: VecEnv | gym.Env | str | None = None, **kwargs: Any
             ) -> BaseRLModel:
        """Rebuild a model saved by :meth:`save` (kwargs override its saved settings;
        hyperparameters that could not be saved, such as callables, must be given again)."""
        metadata, _, _ = load_file(path)
        if metadata.get("algorithm") != cls.algorithm:
            raise RLBaseError(f"model file {path} holds a '{metadata.get('algorithm')}' "
                              f"model, not '{cls.algorithm}'")
        api = metadata.get("api") or {}
        policy = kwargs.pop("policy", api.get("policy") or metadata.get("network"))
        policy_kwargs = kwargs.pop("policy_kwargs", api.get("policy_kwargs", {}))
        settings = {**api.get("hyperparameters", {}), **kwargs}
        obj = cls(policy, env, policy_kwargs=policy_kwargs, _init_setup_model=False,
                  **settings)
        if obj.observation_space is None:
            obj.observation_space = space_from_json(metadata["observation_space"])
            obj.action_space = space_from_json(metadata["action_space"])
        obj._setup_model()
        obj.model.load(path)
        if hasattr(obj.model, "epsilon") and "epsilon" in api:
            obj.model.epsilon = float(api["epsilon"])
        return obj

    def get_parameters(self) -> dict[str, np.ndarray]:
        """Every array the model file holds (weights, optimizer state, statistics), by the
        names the file uses."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.zip")
            self._require_model().save(path)
            return load_file(path)[1]

    def load_parameters(self, load_path_or_dict: str | dict[str, np.ndarray],
                        exact_match: bool = True) -> None:
        """Set arrays by name (a dict like get_parameters', a saved model or an .npz file).

        exact_match: every array must be given; False: missing ones keep their values.
        Unknown names and wrong shapes are always errors.
        """
        given = load_path_or_dict
        if isinstance(given, (str, os.PathLike)):
            if os.fspath(given).endswith(".npz"):
                with np.load(os.fspath(given), allow_pickle=False) as npz:
                    given = {k: npz[k] for k in npz.files}
            else:
                given = load_file(given)[1]
        if not isinstance(given, dict):
            raise RLBaseError(f"load_parameters takes a dict, a model file or an .npz file, "
                              f"got {type(given).__name__}")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.zip")
            self._require_model().save(path)
            metadata, current, _ = load_file(path)
            unknown = sorted(set(given) - set(current))
            if unknown:
                raise RLBaseError(f"load_parameters: unknown parameter(s) {unknown[:5]}; the "
                                  f"model has {sorted(current)[:5]}...")
            missing = sorted(set(current) - set(given))
            if exact_match and missing:
                raise RLBaseError(f"load_parameters: missing parameter(s) {missing[:5]} "
                                  f"({len(missing)} in all); pass exact_match=False to keep them")
            for name, value in given.items():
                value = np.asarray(value)
                if value.shape != current[name].shape:
                    raise RLBaseError(f"load_parameters: {name} has shape {value.shape}, the "
                                      f"model's is {current[name].shape}")
                current[name] = value.astype(current[name].dtype)
            save_file(path, metadata, current)
            self.model.load(path)

    # -- supervised pre-training and evaluation -------------------------------------------------
    def pretrain(self, dataset: Any, n_epochs: int = 10, learning_rate: float = 1e-4,
                 val_interval: int | None = None) -> BaseRLModel:
        """Fit the policy to an :class:`~rlbase.api.behaviour_cloning.ExpertDataset` by
        supervised learning (behaviour cloning)."""
        from rlbase.api.behaviour_cloning import fit_policy

        self._require_model()
        space = self.action_space
        if not isinstance(space, (gym.spaces.Discrete, gym.spaces.Box)):
            raise RLBaseError(f"pretrain needs a Discrete or Box action space, got {space}")
        variables, loss_fn, after = self._pretrain_parts()
        fit_policy(variables, loss_fn, dataset, self.observation_space, space, n_epochs,
                   learning_rate, val_interval, self.verbose)
        after()
        return self

    def test(self, num_episodes: int = 10, env: Any = None, deterministic: bool = True
             ) -> tuple[float, float]:
        """Mean and std of the return over ``num_episodes`` episodes (on the training env by
        default)."""
        env = env if env is not None else self.env
        if env is None:
            raise RLBaseError("test() needs an env: pass one or set_env() first")
        return evaluate_policy(self, env, num_episodes, deterministic)


def _progress_bar(total: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=int(total), unit="steps")
