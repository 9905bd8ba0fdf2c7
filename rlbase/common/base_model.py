"""What every algorithm's ``Model`` is: the one declared interface the training loop, the
checkpointer, evaluation, the CLI and the model classes use (nothing probes a model with
``getattr``).

A model holds its trainable state (weights, optimizer slots, statistics, replay buffer), knows
its spaces, network and hyperparameters, acts (``step``), and saves to and loads from the one
safe model-file format. Each algorithm's ``<alg>/model.py`` subclasses it (TensorFlow models
through :class:`rlbase.common.tf_model.TFModel`) and builds it with one ``build_model``
function that ``learn()`` and the classes in ``rlbase.compat.sb3`` both call.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from rlbase.common.config import AlgorithmConfig
from rlbase.common.errors import RLBaseError
from rlbase.common.io.serialization import check_spaces, load_file, save_file, space_to_json
from rlbase.common.networks.policy_graph import PolicyGraph
from rlbase.common.vec_env.base import VecEnv, find_wrapper
from rlbase.common.vec_env.vec_normalize import NormalizationStats, VecNormalize

NORMALIZE_PREFIX = "vec_normalize/"
# Arrays a checkpoint adds to a model file (its resume state), not the model's parameters.
RESUME_PREFIXES = ("rng/", "loop/", "replay/", "resume/", "best/")
# Models saved before the one contract (rlbase 0.1) have no "format" entry; their arrays are
# named as today's, so they load unless the algorithm's variables changed.
MODEL_FORMAT = 2

StepResult = tuple[np.ndarray, "np.ndarray | None", "np.ndarray | None", "np.ndarray | None"]


def _json_value(value: Any) -> tuple[Any, bool]:
    """``(value as JSON holds it (tuples as lists), whether JSON can hold it)``."""
    value = list(value) if isinstance(value, tuple) else value
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return value, False
    return value, True


def jsonable(params: dict[str, Any]) -> dict[str, Any]:
    """Hyperparameters for the metadata: values JSON cannot hold are kept as their repr."""
    out = {}
    for key, value in params.items():
        value, ok = _json_value(value)
        out[key] = value if ok else repr(value)
    return out


def unserializable(params: dict[str, Any]) -> list[str]:
    """The keys :func:`jsonable` could only keep as a repr (callables, objects): a model
    rebuilt from a file uses the defaults for those."""
    return [key for key, value in params.items() if not _json_value(value)[1]]


class BaseModel(ABC):
    """A trained (or training) agent of one algorithm.

    observation_space / action_space: the env's single observation and action spaces.
    network: the registered network name (or a builder's name) the model was built with.
    network_kwargs: the network builder's keyword arguments.
    config: the algorithm's config (saved in the file as ``hyperparameters``; the training
        loop reads its settings from here).
    """

    #: the name written in model files; loading checks it
    algorithm: ClassVar[str] = ""
    #: hyperparameters that shape the variables: a file's values are used when loading it
    architecture: ClassVar[tuple[str, ...]] = ()
    #: width of the recurrent state (0: feed-forward)
    state_size: int = 0

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, network: Any,
                 network_kwargs: dict[str, Any] | None, config: AlgorithmConfig,
                 num_envs: int = 1):
        self.observation_space = observation_space
        self.action_space = action_space
        self.network = network if network is None or isinstance(network, str) \
            else getattr(network, "__name__", repr(network))
        self.network_kwargs = dict(network_kwargs or {})
        # The algorithm's config (read by the loop at every train() call, so a class's load()
        # can replace its training settings).
        self.config = config
        #: the keyword arguments of every env made for it (the CLI's --env_kwargs; saved)
        self.env_kwargs: dict[str, Any] = {}
        self.num_envs = int(num_envs)
        self.num_timesteps = 0
        # The normalization statistics the policy sees observations through: those of the
        # training env's VecNormalize (shared, so evaluation follows them live) or, for a model
        # loaded from a file, the file's.
        self.normalization: NormalizationStats | None = None
        self._training_normalizer: VecNormalize | None = None

    @property
    def hyperparameters(self) -> dict[str, Any]:
        """The config's fields as a dict (what the model file records)."""
        return self.config.to_dict()

    # -- acting ---------------------------------------------------------------------------------
    @abstractmethod
    def step(self, obs: Any, state: np.ndarray | None = None, mask: np.ndarray | None = None,
             deterministic: bool = False) -> StepResult:
        """``(actions, values or None, next state or None, extra or None)`` for a batch of
        observations. ``state``: the recurrent state (None: the initial one); ``mask``: 1
        where an episode starts. Actions are in the env's action space."""

    @property
    def action_masking(self) -> bool | str:
        """Where the model's action masks come from when it acts on an env: its config's
        ``action_masks`` (rlbase/docs/action_masking.md); False where an algorithm has none."""
        return False

    @property
    def initial_state(self) -> np.ndarray | None:
        """Baselines' attribute: None for a feed-forward model, else zeros
        ``[num_envs, state_size]``."""
        return None if self.state_size == 0 else self.initial_states(self.num_envs)

    def initial_states(self, batch: int) -> np.ndarray:
        """The initial recurrent state of ``batch`` envs (``[batch, 0]`` when feed-forward)."""
        return np.zeros((batch, self.state_size), np.float32)

    def value(self, obs: Any, state: np.ndarray | None = None,
              mask: np.ndarray | None = None) -> np.ndarray:
        """The state value of each observation (algorithms with a value function)."""
        raise RLBaseError(f"{self.algorithm} has no state-value function")

    def action_probabilities(self, obs: Any, state: np.ndarray, mask: np.ndarray
                             ) -> tuple[np.ndarray, ...]:
        """Discrete actions: ``(probabilities [B, n],)``; Box actions: ``(mean, std)``."""
        raise RLBaseError(f"{self.algorithm} does not give action probabilities")

    def pretrain_parts(self) -> tuple[list[Any], Any, Any]:
        """For behaviour cloning: (variables, ``loss(obs, actions)`` as a TF expression, a
        function to call after fitting)."""
        raise RLBaseError(f"pretrain is not supported by {self.algorithm}; use a2c, ppo, acer "
                          "or dqn")

    # -- export ---------------------------------------------------------------------------------
    def policy_graph(self) -> PolicyGraph:
        """The act path of ``step(..., deterministic=True)`` as graph code (what ``export``
        writes); models that are not a network refuse in one line."""
        raise RLBaseError(f"{self.algorithm}'s model is not a network and cannot be exported; "
                          "export works for a2c, acer, acktr, ddpg/td3, dqn, es, gail, ppo, sac "
                          "and trpo")

    def export(self, path: str, format: str = "saved_model", quantize: bool = False) -> str:
        """Write the deterministic policy (observation normalization, network, action
        post-processing) to ``path`` as ``format`` ('saved_model', 'tflite' or 'onnx');
        ``quantize``: TFLite's dynamic-range int8 weights. Returns the file or folder
        written. See rlbase/docs/export.md."""
        # The exporters (and tf2onnx for ONNX) load only when a model is exported.
        from rlbase.common.export import export_model

        return export_model(self, path, format, quantize=quantize)

    # -- parameters -----------------------------------------------------------------------------
    @abstractmethod
    def parameter_arrays(self) -> dict[str, np.ndarray]:
        """Every array a model file holds for this model (weights, optimizer state,
        statistics), by name."""

    @abstractmethod
    def load_parameter_arrays(self, arrays: dict[str, np.ndarray], source: str = "") -> None:
        """Set what :meth:`parameter_arrays` returns; checks every array before changing any
        (a mismatch raises RLBaseError naming ``source``)."""

    def get_parameters(self) -> dict[str, np.ndarray]:
        """A copy of every saved array, in memory (no file)."""
        return {k: np.array(v, copy=True) for k, v in self.parameter_arrays().items()}

    def set_parameters(self, arrays: dict[str, np.ndarray], exact_match: bool = True) -> None:
        """Set arrays by name, in memory. exact_match: every array must be given (False:
        missing ones keep their values). Unknown names and wrong shapes are errors."""
        current = self.parameter_arrays()
        unknown = sorted(set(arrays) - set(current))
        if unknown:
            raise RLBaseError(f"unknown parameter(s) {unknown[:5]}; this {self.algorithm} model "
                              f"has {sorted(current)[:5]}...")
        if exact_match:
            refuse_missing(current, arrays, "parameter")
        merged = dict(current)
        for name, value in arrays.items():
            value = np.asarray(value)
            if value.shape != np.shape(current[name]):
                raise RLBaseError(f"parameter {name} has shape {value.shape}, the model's is "
                                  f"{np.shape(current[name])}")
            merged[name] = value.astype(np.asarray(current[name]).dtype)
        self.load_parameter_arrays(merged, "set_parameters")

    # -- resuming ---------------------------------------------------------------------------------
    def resume_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """What a checkpoint holds beyond the model file for training to continue exactly
        (replay buffers, generators, counters): JSON-able metadata and arrays."""
        arrays: dict[str, np.ndarray] = {}
        if self._training_normalizer is not None:  # its running discounted returns
            arrays["loop/vec_normalize_returns"] = np.asarray(self._training_normalizer.returns)
        return {}, arrays

    def restore_resume_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Inverse of :meth:`resume_state`."""
        returns = arrays.get("loop/vec_normalize_returns")
        normalizer = self._training_normalizer
        if normalizer is not None and returns is not None:
            if returns.shape != normalizer.returns.shape:
                raise RLBaseError(f"the checkpoint's VecNormalize returns have shape "
                                  f"{returns.shape}, this run has {normalizer.returns.shape}")
            normalizer.returns[...] = returns

    # -- normalization --------------------------------------------------------------------------
    def attach_env(self, env: VecEnv) -> None:
        """Train on ``env``: its VecNormalize statistics become part of the model. Statistics
        loaded from a file (a model that continues training) go into that wrapper."""
        wrapper = find_wrapper(env, VecNormalize)
        if not isinstance(wrapper, VecNormalize):
            return
        if self.normalization is not None and self.normalization is not wrapper.stats:
            wrapper.load_state_dict(self.normalization.state_dict())
        self.normalization = wrapper.stats
        self._training_normalizer = wrapper

    def normalized_like_training(self, venv: VecEnv) -> VecEnv:
        """``venv`` seeing observations exactly as training sees them now: wrapped in a
        VecNormalize that shares (does not copy) the training statistics, frozen on its side.
        ``venv`` itself when training normalizes nothing, or when it already normalizes."""
        if self.normalization is None or find_wrapper(venv, VecNormalize) is not None:
            return venv
        return self.normalization.follower(venv)

    # -- files ------------------------------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "algorithm": self.algorithm, "format": MODEL_FORMAT, "network": self.network,
            "network_kwargs": jsonable(self.network_kwargs),
            "observation_space": space_to_json(self.observation_space),
            "action_space": space_to_json(self.action_space),
            "hyperparameters": jsonable(self.hyperparameters),
            "unserializable": unserializable(self.hyperparameters),
            "num_timesteps": int(self.num_timesteps), "num_envs": self.num_envs}
        if self.env_kwargs:
            meta["env_kwargs"] = jsonable(self.env_kwargs)
        if self.normalization is not None:
            meta["vec_normalize"] = self.normalization.config()
        return meta

    def save(self, path: str, extra_arrays: dict[str, np.ndarray] | None = None,
             extra_metadata: dict[str, Any] | None = None) -> None:
        """Write the model to one file, atomically; ``extra_*`` add entries (checkpoints put
        their resume state there)."""
        arrays = dict(self.parameter_arrays())
        if self.normalization is not None:
            arrays.update({NORMALIZE_PREFIX + k: v
                           for k, v in self.normalization.state_dict().items()})
        arrays.update(extra_arrays or {})
        save_file(path, {**self.metadata(), **(extra_metadata or {})}, arrays)

    def load(self, path: str, allow_pickle: bool = False
             ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Load a file written by :meth:`save` for the same algorithm, spaces and network into
        this model; returns the file's metadata and arrays."""
        metadata, arrays, _ = load_file(path, allow_pickle=allow_pickle)
        check_model_metadata(metadata, path, self.algorithm)
        check_spaces(metadata, self.observation_space, self.action_space)
        params = {k: v for k, v in arrays.items()
                  if not k.startswith((NORMALIZE_PREFIX, *RESUME_PREFIXES))}
        self.load_parameter_arrays(params, path)
        self.num_timesteps = int(metadata.get("num_timesteps", 0))
        config = metadata.get("vec_normalize")
        if isinstance(config, dict):
            stats = {k[len(NORMALIZE_PREFIX):]: v for k, v in arrays.items()
                     if k.startswith(NORMALIZE_PREFIX)}
            if self.normalization is None:
                self.normalization = NormalizationStats.from_config(self.observation_space,
                                                                    config)
            self.normalization.load_state_dict(stats)
        return metadata, arrays


def refuse_missing(expected: Iterable[str], given: Iterable[str], what: str) -> None:
    """set_parameters(exact_match=True): every one of ``expected`` must be ``given``."""
    missing = sorted(set(expected) - set(given))
    if missing:
        raise RLBaseError(f"missing {what}(s) {missing[:5]} ({len(missing)} in all); pass "
                          "exact_match=False to keep them")


def check_model_metadata(metadata: dict[str, Any], path: str, algorithm: str) -> None:
    """A model file of ``algorithm`` with a valid timestep count, or a clear error."""
    saved = metadata.get("algorithm")
    if saved != algorithm:
        raise RLBaseError(f"model file {path} holds a '{saved}' model, not '{algorithm}'")
    steps = metadata.get("num_timesteps", 0)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise RLBaseError(f"model file {path} has num_timesteps {steps!r}: not a count")


class SavesExplorationRate(BaseModel):
    """For epsilon-greedy models (DQN, Q-learning): the current exploration rate ``epsilon``
    is saved in the file's metadata, so a loaded model acts (and continues) as it would."""

    epsilon: float

    def metadata(self) -> dict[str, Any]:
        return {**super().metadata(), "exploration_rate": self.epsilon}

    def load(self, path: str, allow_pickle: bool = False
             ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        metadata, arrays = super().load(path, allow_pickle)
        rate = metadata.get("exploration_rate")
        if isinstance(rate, (int, float)) and not isinstance(rate, bool):
            self.epsilon = float(rate)
        return metadata, arrays
