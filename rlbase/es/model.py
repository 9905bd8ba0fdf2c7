"""ES's model: the parameter vector ``theta`` of a numpy policy, its observation statistics,
Adam's state, the shared noise table's seed and size, and this process's generator."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common import nested
from rlbase.common.base_model import BaseModel, StepResult
from rlbase.common.errors import RLBaseError
from rlbase.common.io.checkpoint import generator_state, set_generator_state
from rlbase.common.io.serialization import check_named_arrays, numbered_arrays
from rlbase.common.logs import logger
from rlbase.common.mpi_util import mpi_rank, mpi_size
from rlbase.common.networks.policy_graph import PolicyGraph
from rlbase.common.running_mean_std import RunningMeanStd
from rlbase.es.config import ESConfig
from rlbase.es.networks import ESPolicy
from rlbase.es.noise_table import NoiseTable, default_size
from rlbase.es.optimizer import Adam

ALGORITHM = "es"
# The file's array names (unchanged since rlbase 0.1, so older ES files load): the policy's
# variables numbered as Keras orders them, then the statistics and Adam's state.
POLICY, OBS_RMS, ADAM = "policy/", "obs_rms/", "adam/"
GENERATOR_TAG = 0xE5  # mixed into the seed of each rank's perturbation generator


class Model(BaseModel):
    """The current ``theta`` of an :class:`~rlbase.es.networks.ESPolicy` and what training it
    needs.

    policy: the numpy policy (theta's layout, the forward pass, the observation encoder).
    noise_seed / noise_size: the shared noise table (every rank builds the same one).
    rng: this rank's generator of perturbation offsets, paired reset seeds and action noise.
    rank / num_ranks: this process's MPI rank and the number of ranks.
    """

    algorithm = ALGORITHM

    config: ESConfig

    def __init__(self, policy: ESPolicy, network: Any, network_kwargs: dict[str, Any],
                 config: ESConfig, num_envs: int, noise_seed: int, noise_size: int,
                 rng: np.random.Generator, rank: int = 0, num_ranks: int = 1):
        super().__init__(policy.observation_space, policy.action_space, network,
                         network_kwargs, config, num_envs)
        self.policy = policy
        self.theta = policy.get_flat()
        self.obs_rms = RunningMeanStd(shape=(policy.ob_dim,))
        self.optimizer = Adam(policy.dim, config.lr)
        # Whether the policy sees normalized observations decides what a saved model does
        # (an architecture field: a saved model's value wins).
        self.normalize_observations = config.normalize_observations
        self.noise_seed, self.noise_size = int(noise_seed), int(noise_size)
        self.rng = rng
        self.rank, self.num_ranks = rank, num_ranks
        # Every rank's generator state after the last generation: rank 0's checkpoints hold
        # them all, so each rank of a resumed run draws what it would have drawn.
        self.generator_states: list[dict[str, Any]] = []
        # Env steps of unperturbed-policy episodes (not counted in num_timesteps).
        self.center_timesteps = 0
        self._noise: NoiseTable | None = None
        self.sync_obs_stats()

    @property
    def generation(self) -> int:
        """Generations trained, earlier runs included (each makes one Adam step)."""
        return self.optimizer.t

    def noise_table(self) -> NoiseTable:
        """The shared noise table, built once for its seed and size (~40 ms per 2**20)."""
        table = self._noise
        if table is None or (table.seed, table.size) != (self.noise_seed, self.noise_size):
            table = self._noise = NoiseTable(self.noise_seed, self.noise_size)
        return table

    def sync_obs_stats(self) -> None:
        """Hand the running statistics to the policy (frozen between generations)."""
        if self.normalize_observations:
            self.policy.set_obs_stats(self.obs_rms.mean, self.obs_rms.var)

    # -- acting ---------------------------------------------------------------------------------
    def step(self, obs: Any, state: np.ndarray | None = None, mask: np.ndarray | None = None,
             deterministic: bool = False) -> StepResult:
        """``(actions, None, state, None)``: ES's policy is deterministic and has no value
        function, so ``deterministic`` changes nothing."""
        return self.policy.act(self.theta[None], self._observations(obs)), None, state, None

    def policy_graph(self) -> PolicyGraph:
        """ES acts in numpy; its graph is the TF twin of that forward pass on the current
        ``theta`` and statistics (constants), checked against ``step`` by the export tests."""
        return PolicyGraph(self.observation_space, 0, self.policy.graph_act(self.theta))

    def action_probabilities(self, obs: Any, state: np.ndarray, mask: np.ndarray
                             ) -> tuple[np.ndarray, ...]:
        """Discrete: one-hot of the action taken; Box: ``(action, zero std)``."""
        actions = self.policy.act(self.theta[None], self._observations(obs))
        space = self.action_space
        if isinstance(space, gym.spaces.Discrete):
            probs = np.zeros((len(actions), int(space.n)), np.float32)
            probs[np.arange(len(actions)), np.asarray(actions) - int(space.start)] = 1.0
            return (probs,)
        mean = np.asarray(actions, np.float32)
        return mean, np.zeros_like(mean)

    def _observations(self, obs: Any) -> Any:
        """A batch as the policy encodes it: an array, or nested for Dict/Tuple spaces."""
        return obs if nested.is_nested(self.observation_space) else np.asarray(obs)

    # -- parameters -----------------------------------------------------------------------------
    def parameter_arrays(self) -> dict[str, np.ndarray]:
        parts = self.policy.unflatten(self.theta[None])
        arrays = {f"{POLICY}{i:04d}": part[0] for i, part in enumerate(parts)}
        arrays.update({OBS_RMS + k: v for k, v in self.obs_rms.state_dict().items()})
        arrays.update({ADAM + k: v for k, v in self.optimizer.state_dict().items()})
        return arrays

    def load_parameter_arrays(self, arrays: dict[str, np.ndarray], source: str = "") -> None:
        saved = numbered_arrays(arrays, POLICY.rstrip("/"), self.policy.shapes, source)
        check_named_arrays(arrays, {name: current for name, current in
                                    self.parameter_arrays().items()
                                    if not name.startswith(POLICY)},
                           source, missing="not an ES model")
        # Everything checked: only now change the model.
        self.theta = np.concatenate([np.asarray(a, np.float32).ravel() for a in saved])
        self.obs_rms.load_state_dict({k: arrays[OBS_RMS + k] for k in ("mean", "var", "count")})
        self.optimizer.load_state_dict({k: arrays[ADAM + k] for k in ("m", "v", "t")})
        self.sync_obs_stats()

    # -- resuming -------------------------------------------------------------------------------
    def resume_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta, arrays = super().resume_state()
        meta["noise_table"] = {"seed": self.noise_seed, "size": self.noise_size}
        meta["rngs"] = self.generator_states or [generator_state(self.rng)]
        meta["center_timesteps"] = self.center_timesteps
        return meta, arrays

    def restore_resume_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super().restore_resume_state(meta, arrays)
        try:
            table = meta["noise_table"]
            seed, size = int(table["seed"]), int(table["size"])
            rngs = list(meta["rngs"])
            center = int(meta["center_timesteps"])
        except (KeyError, TypeError, ValueError) as exc:
            raise RLBaseError(f"ES checkpoint has a malformed resume state "
                              f"({type(exc).__name__}: {exc})") from None
        self.noise_seed, self.noise_size, self.center_timesteps = seed, size, center
        if len(rngs) == self.num_ranks:
            set_generator_state(self.rng, rngs[self.rank])
            self.generator_states = rngs
            return
        # Another number of ranks: the run goes on correctly, but its perturbations are not
        # the ones the saved run would have drawn. The checkpoint restored the global
        # generator alike on every rank, so this is reproducible and still distinct per rank.
        fresh = np.random.default_rng([int(np.random.randint(2**31)), self.rank,
                                       self.generation])
        self.rng.bit_generator.state = fresh.bit_generator.state
        self.generator_states = []
        logger.log(f"checkpoint written by {len(rngs)} ranks, resumed on {self.num_ranks}: "
                   "the perturbation streams start afresh")


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: ESConfig, *,
                total_timesteps: int = 0) -> Model:
    """ES's model for these spaces (learn() and rlbase.ES call this). Under MPI, train()
    replaces the noise-table seed and theta by rank 0's."""
    policy = ESPolicy(observation_space, action_space, network, network_kwargs)
    size = config.noise_table_size or default_size(policy.dim)
    if size < policy.dim:
        raise RLBaseError(f"a policy of {policy.dim} parameters does not fit a noise table of "
                          f"{size} entries; use noise_table_size >= {policy.dim}")
    seed = config.seed
    noise_seed = seed if seed is not None else int(np.random.default_rng().integers(2**31))
    rank = mpi_rank()
    rng = np.random.default_rng(None if seed is None else [seed, rank, GENERATOR_TAG])
    return Model(policy, network, network_kwargs, config, num_envs, noise_seed, size, rng,
                 rank, mpi_size())
