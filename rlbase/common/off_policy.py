"""The parts of an off-policy learn() loop that DDPG/TD3 and SAC share: the training cadence
(SB3's ``train_freq`` and ``gradient_steps``), independent random streams, the env step that
fills the replay buffer, and minibatches stacked for a compiled call that runs several
gradient steps at once. Observations may be nested (Dict/Tuple spaces: dicts and tuples of
arrays, rlbase.common.nested) everywhere here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common import nested
from rlbase.common.episodes import EpisodeStats
from rlbase.common.errors import RLBaseError
from rlbase.common.replay_buffer import ReplayBuffer, make_replay_buffer
from rlbase.common.transitions import final_observations, target_dones
from rlbase.common.vec_env import VecEnv


def _count(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise RLBaseError(f"{name} must be {kind}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class TrainSchedule:
    """When an off-policy loop acts at random and when it trains (SB3's convention).

    train_freq: vectorized env steps between training phases (1: train before every step).
    gradient_steps: gradient steps per training phase (0: collect only).
    learning_starts: env steps (summed over envs) of uniformly random actions, and no
        training, at the start.
    batch_size: transitions per gradient step; training waits until the buffer holds that many.
    """

    train_freq: int
    gradient_steps: int
    learning_starts: int
    batch_size: int

    def __post_init__(self) -> None:
        _count("train_freq", self.train_freq, 1)
        _count("gradient_steps", self.gradient_steps, 0)
        _count("learning_starts", self.learning_starts, 0)
        _count("batch_size", self.batch_size, 1)

    def warming_up(self, num_timesteps: int) -> bool:
        """Whether this step's actions are uniformly random (no training yet)."""
        return num_timesteps < self.learning_starts

    def trains(self, iteration: int, stored: int) -> bool:
        """Whether a training phase runs before vectorized step ``iteration`` (counted from 0
        over the run; a resumed run continues the count) with ``stored`` transitions in the
        buffer."""
        return self.gradient_steps > 0 and iteration % self.train_freq == 0 and \
            stored >= self.batch_size


def check_soft_update_rate(tau: float) -> None:
    if not 0.0 < tau <= 1.0:
        raise RLBaseError(f"tau must be in (0, 1], got {tau!r}")


def random_streams(seed: int | None, n: int, rank: int = 0) -> list[np.random.Generator]:
    """``n`` independent generators for one run (exploration noise, minibatch sampling, ...).

    Seeding each with the same integer would make their streams identical (the noise would
    repeat the sampler's numbers); ``SeedSequence.spawn`` derives statistically independent
    ones. Each MPI rank gets its own family. seed None: fresh entropy.
    """
    root = np.random.SeedSequence(None if seed is None else [int(seed), int(rank)])
    return [np.random.default_rng(child) for child in root.spawn(n)]


def continuous_replay_buffer(observation_space: gym.Space, size: int, nb_actions: int
                             ) -> ReplayBuffer:
    """The replay buffer of a continuous-control agent (DDPG/TD3, SAC): [-1, 1] float32
    actions; Box observations stored as float32, Dict/Tuple ones leaf by leaf in their own
    dtypes (images stay uint8)."""
    float32 = np.dtype(np.float32)
    return make_replay_buffer(int(size), observation_space, float32, ac_shape=(nb_actions,),
                              ac_dtype=float32)


def next_observations(space: gym.Space, new_obs: Any, done: np.ndarray,
                      infos: list[dict[str, Any]]) -> Any:
    """What a transition stores as its next observation: ``new_obs`` with each finished env's
    row replaced by the episode's true last one (rlbase.common.transitions), for Box and
    Dict/Tuple observations alike."""
    if nested.is_nested(space):
        return nested.final_observations(space, new_obs, done, infos)
    return final_observations(new_obs, done, infos)


def step_and_store(env: VecEnv, buffer: ReplayBuffer, episodes: EpisodeStats,
                   obs: Any, actions: np.ndarray, env_actions: np.ndarray, gamma: float,
                   reward_scale: float = 1.0
                   ) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
    """Step ``env`` with ``env_actions`` and store each env's transition.

    ``actions`` is what the buffer keeps (the agent's own [-1, 1] actions); the stored next
    observation is the episode's true last one where an episode ended (the env has already
    reset that row), and the stored done flag is what targets must not bootstrap across
    (terminations, and with gamma = 1 truncations too: rlbase.common.transitions). Rewards are
    stored times ``reward_scale``. Returns ``(new_obs, rewards, done, infos)`` with ``done``
    the episode ends of either kind.
    """
    new_obs, rewards, terminated, truncated, infos = env.step(env_actions)
    done = np.logical_or(terminated, truncated)
    next_obs = next_observations(env.observation_space, new_obs, done, infos)
    buffer.add(obs, actions, rewards * reward_scale, next_obs,
               target_dones(terminated, truncated, gamma), truncated)
    episodes.update(infos)
    return new_obs, rewards, done, infos


def sample_minibatches(buffer: ReplayBuffer, rng: np.random.Generator, steps: int,
                       batch_size: int) -> tuple[Any, ...]:
    """``steps`` minibatches drawn uniformly, stacked: ``(obs, actions, rewards, next_obs,
    dones)`` each shaped ``[steps, batch_size, ...]`` (one compiled call loops over them;
    nested observations leaf by leaf)."""
    batch = buffer.get(buffer.sample_indices(steps * batch_size, rng))

    def split(x: np.ndarray) -> np.ndarray:
        return x.reshape(steps, batch_size, *x.shape[1:])

    return tuple(nested.map_structure(split, x) for x in
                 (batch.obs, batch.actions, batch.rewards, batch.next_obs, batch.dones))
