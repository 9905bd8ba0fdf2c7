"""The model ``ddpg.learn`` returns: acting, exploration noise, observation statistics,
action scaling, saving and loading, around the :class:`~rlbase.ddpg.ddpg_learner.Learner`.

Actions live in [-1, 1] inside the agent (the actor's tanh range, the replay buffer, the
noise) and are mapped affinely onto the env's [low, high] only when they leave it, so
asymmetric bounds such as [0, 2] or [-1, 3] work.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.model_io import load_model, save_model
from rlbase.common.mpi_util import allreduce_mean
from rlbase.common.running_mean_std import RunningMeanStd
from rlbase.ddpg.ddpg_learner import MIN_VAR, STAT_NAMES, Learner
from rlbase.ddpg.noise import ActionNoise, AdaptiveParamNoiseSpec

ALGORITHM = "ddpg"


def scale_actions(actions: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """[-1, 1] -> [low, high], element-wise (low maps to -1, high to +1)."""
    return low + (np.asarray(actions) + 1.0) * 0.5 * (high - low)


def unscale_actions(actions: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """[low, high] -> [-1, 1], the inverse of :func:`scale_actions`."""
    return 2.0 * (np.asarray(actions) - low) / (high - low) - 1.0


class DDPGModel:
    """A trained (or training) DDPG agent.

    learner: the networks and compiled calls.
    ob_space / ac_space: the env's spaces (a Box each).
    normalize_observations: keep running observation statistics and feed the nets normalized
        observations (pooled over MPI workers through ``comm``).
    action_noise / param_noise: the exploration noises (None: none of that kind).
    network / network_kwargs / hyperparameters: recorded in saved files.
    """

    def __init__(self, learner: Learner, ob_space: gym.spaces.Box, ac_space: gym.spaces.Box,
                 normalize_observations: bool, action_noise: ActionNoise | None,
                 param_noise: AdaptiveParamNoiseSpec | None, network: str,
                 network_kwargs: dict[str, Any], hyperparameters: dict[str, Any],
                 comm: Any | None = None):
        self.learner = learner
        self.ob_space, self.ac_space = ob_space, ac_space
        self.low = ac_space.low.astype(np.float64)
        self.high = ac_space.high.astype(np.float64)
        self.obs_rms = RunningMeanStd(shape=ob_space.shape, comm=comm) \
            if normalize_observations else None
        self.action_noise, self.param_noise = action_noise, param_noise
        self.network, self.network_kwargs = network, dict(network_kwargs)
        self.hyperparameters = dict(hyperparameters)
        self.comm = comm
        self.num_timesteps = 0
        self.replay_buffer: Any = None  # set by learn()
        self.loop_rng: np.random.Generator | None = None  # set by learn()
        self._refresh_obs_stats()

    # -- observation statistics ---------------------------------------------------------------
    def _refresh_obs_stats(self) -> None:
        shape = self.ob_space.shape
        if self.obs_rms is None:
            self.obs_mean, self.obs_std = np.zeros(shape, np.float32), np.ones(shape, np.float32)
        else:
            self.obs_mean = self.obs_rms.mean.astype(np.float32)
            self.obs_std = np.sqrt(np.maximum(self.obs_rms.var, MIN_VAR)).astype(np.float32)

    def update_obs_stats(self, obs: np.ndarray) -> None:
        if self.obs_rms is not None:
            self.obs_rms.update(obs)
            self._refresh_obs_stats()

    # -- acting --------------------------------------------------------------------------------
    def act(self, obs: np.ndarray, explore: bool) -> tuple[np.ndarray, np.ndarray]:
        """Actions in [-1, 1] (with exploration noise when ``explore``) and the actor's Q."""
        clean, noisy, q = self.learner.act_fn(np.asarray(obs, np.float32), self.obs_mean,
                                              self.obs_std)
        return self.explore(clean.numpy(), noisy.numpy(), explore), q.numpy()

    def explore(self, clean: np.ndarray, noisy: np.ndarray, explore: bool) -> np.ndarray:
        """The action the agent takes: the perturbed actor's plus action noise, clipped."""
        if not explore:
            return clean
        actions = noisy
        if self.action_noise is not None:
            actions = actions + np.stack([self.action_noise() for _ in range(len(actions))])
        return np.clip(actions, -1.0, 1.0)

    def train_and_act(self, batch: tuple[np.ndarray, ...], nsteps: int, obs: np.ndarray
                      ) -> tuple[dict[str, float], np.ndarray, np.ndarray]:
        """``nsteps`` gradient steps on stacked minibatches, then the exploring actions (in
        [-1, 1]) and Q for ``obs`` from the updated actor: one compiled call."""
        stats, clean, noisy, q = self.learner.train_fn(
            *batch, self.learner.smoothing_noise(), np.int32(nsteps),
            np.asarray(obs, np.float32), self.obs_mean, self.obs_std)
        actions = self.explore(clean.numpy(), noisy.numpy(), True)
        return dict(zip(STAT_NAMES, stats.numpy().tolist())), actions, q.numpy()

    def step(self, obs: np.ndarray, state: np.ndarray | None = None,
             mask: np.ndarray | None = None, deterministic: bool = False
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, None]:
        """(actions in the env's bounds, Q, state, None); ``deterministic=False`` adds the
        exploration noise. ``state``/``mask`` pass through (the nets are feed-forward)."""
        actions, q = self.act(obs, explore=not deterministic)
        return scale_actions(actions, self.low, self.high).astype(self.ac_space.dtype), q, \
            state, None

    def initial_state(self, batch: int) -> np.ndarray:
        return np.zeros((batch, 0), np.float32)

    def reset_noise(self) -> None:
        """At an episode's start: restart the action noise, draw a new actor perturbation."""
        if self.action_noise is not None:
            self.action_noise.reset()
        if self.param_noise is not None:
            self.learner.perturb_fn(np.float32(self.param_noise.current_stddev),
                                    self.learner.noise_seed_pair())

    def adapt_param_noise(self, obs: np.ndarray) -> float:
        """Measure the action distance of a fresh perturbation on ``obs`` (averaged over MPI
        workers) and adapt the noise scale on it."""
        if self.param_noise is None:
            return 0.0
        learner = self.learner
        distance = float(learner.distance_fn(np.asarray(obs, np.float32), self.obs_mean,
                                             self.obs_std,
                                             np.float32(self.param_noise.current_stddev),
                                             learner.noise_seed_pair()))
        distance = float(allreduce_mean(np.array([distance]), self.comm)[0])
        self.param_noise.adapt(distance)
        return distance

    # -- saving --------------------------------------------------------------------------------
    def _extra_arrays(self) -> dict[str, np.ndarray]:
        out = {}
        if self.obs_rms is not None:
            out.update({f"obs_rms/{k}": v for k, v in self.obs_rms.state_dict().items()})
        if self.param_noise is not None:
            out["param_noise/stddev"] = np.array(self.param_noise.current_stddev)
        return out

    def save(self, path: str, extra_arrays: dict[str, np.ndarray] | None = None,
             extra_metadata: dict[str, Any] | None = None) -> None:
        """Write every network, both optimizers, the return and observation statistics and
        the parameter-noise scale to one file (atomically); ``extra_*`` add entries
        (checkpoints put their resume state there)."""
        save_model(path, ALGORITHM, self.learner.groups(), self.ob_space, self.ac_space,
                   self.network if isinstance(self.network, str) else repr(self.network),
                   self.network_kwargs, self.hyperparameters, self.num_timesteps,
                   extra_arrays={**self._extra_arrays(), **(extra_arrays or {})},
                   extra_metadata=extra_metadata)

    def load(self, path: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Load a file written by :meth:`save` for the same spaces, network and options;
        returns the file's ``(metadata, arrays)``."""
        metadata, arrays = load_model(path, ALGORITHM, self.learner.groups(), self.ob_space,
                                      self.ac_space)
        if self.obs_rms is not None:
            state = {k.split("/", 1)[1]: v for k, v in arrays.items()
                     if k.startswith("obs_rms/")}
            if not state:
                raise RLBaseError(f"model file {path} has no observation statistics: it was "
                                  "saved with normalize_observations=False")
            self.obs_rms.load_state_dict(state)
        if self.param_noise is not None and "param_noise/stddev" in arrays:
            self.param_noise.current_stddev = float(arrays["param_noise/stddev"])
        self.num_timesteps = int(metadata.get("num_timesteps", 0))
        self._refresh_obs_stats()
        return metadata, arrays
