"""The trained ES model: acting, saving and loading (parameters, observation statistics and
optimizer state in the one safe model-file format)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.model_io import load_model, save_model
from rlbase.common.running_mean_std import RunningMeanStd
from rlbase.es.optimizer import Adam
from rlbase.es.policy import ESPolicy

ALGORITHM = "es"


class ESModel:
    """The current parameter vector ``theta`` of an :class:`ESPolicy`, with its observation
    statistics; ``step`` matches the other algorithms' models (for evaluate_policy).

    learn() also sets ``generation`` (generations run, resumed runs included) and ``rng`` (the
    generator of this process's perturbations, reset seeds and action noise), for inspection
    and checks.
    """

    def __init__(self, policy: ESPolicy, theta: np.ndarray, obs_rms: RunningMeanStd,
                 optimizer: Adam, hyperparameters: dict[str, Any]):
        self.policy, self.obs_rms, self.optimizer = policy, obs_rms, optimizer
        self.hyperparameters = hyperparameters
        self.theta = np.asarray(theta, np.float32)
        self.num_timesteps = 0
        self.generation = 0
        self.rng: np.random.Generator | None = None
        self.sync_obs_stats()

    def sync_obs_stats(self) -> None:
        """Hand the running statistics to the policy (frozen between generations)."""
        if self.hyperparameters.get("observation_normalization", True):
            self.policy.set_obs_stats(self.obs_rms.mean, np.sqrt(self.obs_rms.var))

    def step(self, obs: np.ndarray, state: np.ndarray | None = None,
             mask: np.ndarray | None = None, deterministic: bool = True
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """(actions, values, state, neglogp) for a batch of observations. ES policies are
        deterministic (``deterministic`` is accepted for the common API); values and neglogp
        are zeros, since ES learns neither."""
        obs = np.asarray(obs)
        actions = self.policy.act(self.theta[None], obs)
        zeros = np.zeros(len(obs), np.float32)
        return actions, zeros, state, zeros

    def initial_state(self, batch: int) -> np.ndarray:
        return np.zeros((batch, 0), np.float32)

    def save(self, path: str, extra_arrays: dict[str, np.ndarray] | None = None,
             extra_metadata: dict[str, Any] | None = None) -> None:
        """Write the parameters, observation statistics and Adam state to one file (plus a
        checkpoint's ``extra_arrays`` and ``extra_metadata``)."""
        policy = self.policy
        policy.set_flat(self.theta)
        extra = {f"obs_rms/{k}": v for k, v in self.obs_rms.state_dict().items()}
        extra.update({f"adam/{k}": v for k, v in self.optimizer.state_dict().items()})
        extra.update(extra_arrays or {})
        save_model(path, ALGORITHM, {"policy": policy.variables}, policy.ob_space,
                   policy.ac_space, policy.network_name, policy.network_kwargs,
                   self.hyperparameters, self.num_timesteps, extra_arrays=extra,
                   extra_metadata=extra_metadata)

    def load(self, path: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Load a file written by :meth:`save` for the same spaces and network; returns the
        file's ``(metadata, arrays)`` (a checkpoint's resume state is in them)."""
        policy = self.policy
        metadata, arrays = load_model(path, ALGORITHM, {"policy": policy.variables},
                                      policy.ob_space, policy.ac_space)
        try:
            self.obs_rms.load_state_dict({k: arrays[f"obs_rms/{k}"]
                                          for k in ("mean", "var", "count")})
            self.optimizer.load_state_dict({k: arrays[f"adam/{k}"] for k in ("m", "v", "t")})
        except KeyError as exc:
            raise RLBaseError(f"model file {path} lacks ES array {exc}: not an ES model") \
                from None
        self.theta = policy.get_flat()
        self.num_timesteps = int(metadata.get("num_timesteps", 0))
        self.sync_obs_stats()
        return metadata, arrays

    @classmethod
    def from_file(cls, path: str, ob_space: Any, ac_space: Any) -> ESModel:
        """Rebuild a saved model (its network and hyperparameters come from the file)."""
        from rlbase.common.model_io import read_metadata

        meta = read_metadata(path)
        policy = ESPolicy(ob_space, ac_space, meta.get("network", "mlp"),
                          meta.get("network_kwargs", {}))
        model = cls(policy, policy.get_flat(), RunningMeanStd(shape=(policy.ob_dim,)),
                    Adam(policy.dim, 0.0), meta.get("hyperparameters", {}))
        model.load(path)
        return model
