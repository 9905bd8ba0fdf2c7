"""What goes into an off-policy replay buffer and what comes out, for DDPG/TD3, SAC, DQN
(and ACER's replay): independent random streams, the env step that fills the buffer with raw
transitions, and minibatches normalized with the current VecNormalize statistics and stacked
for a compiled call that runs several gradient steps at once (when to train:
rlbase.common.loops.train_schedule). Observations may be nested (Dict/Tuple spaces: dicts and
tuples of arrays, rlbase.common.nested) everywhere here.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

import gymnasium as gym
import numpy as np

from rlbase.common import nested
from rlbase.common.buffers.her_replay_buffer import HerReplayBuffer, her_buffer
from rlbase.common.buffers.replay_buffer import (
    AnyBuffer,
    Batch,
    FrameStackReplayBuffer,
    PrioritizedReplayBuffer,
    ReplayBuffer,
    make_replay_buffer,
)
from rlbase.common.buffers.transitions import final_observations, target_dones
from rlbase.common.errors import RLBaseError
from rlbase.common.io.checkpoint import object_state, restore_object_state
from rlbase.common.loops.episodes import EpisodeStats
from rlbase.common.vec_env import (
    VecEnv,
    VecEnvWrapper,
    VecFrameStack,
    VecNormalize,
    find_wrapper,
    vec_step,
)
from rlbase.common.vec_env.vec_normalize import RAW_FINAL_OBSERVATION, NormalizationStats


def random_streams(seed: int | None, n: int, rank: int = 0) -> list[np.random.Generator]:
    """``n`` independent generators for one run (exploration noise, minibatch sampling, ...).

    Seeding each with the same integer would make their streams identical (the noise would
    repeat the sampler's numbers); ``SeedSequence.spawn`` derives statistically independent
    ones. Each MPI rank gets its own family. seed None: fresh entropy.
    """
    root = np.random.SeedSequence(None if seed is None else [int(seed), int(rank)])
    return [np.random.default_rng(child) for child in root.spawn(n)]


def continuous_replay_buffer(observation_space: gym.Space, config: Any, num_envs: int,
                             num_actions: int) -> ReplayBuffer:
    """The replay buffer of a continuous-control agent (DDPG/TD3, SAC) with the config's
    ``buffer_size`` and ``replay_buffer_class``: [-1, 1] float32 actions; Box, Discrete,
    MultiDiscrete and MultiBinary observations stored as float32 (exact for the integers such
    spaces hold), Dict/Tuple ones leaf by leaf in their own dtypes (images stay uint8)."""
    float32 = np.dtype(np.float32)
    if config.replay_buffer_class == "her":
        return her_buffer(config.replay_buffer_kwargs, config.buffer_size, observation_space,
                          num_envs, (num_actions,), float32)
    return make_replay_buffer(int(config.buffer_size), observation_space, float32,
                              ac_shape=(num_actions,), ac_dtype=float32)


BufferT = TypeVar("BufferT", bound=AnyBuffer)


def attach_replay_env(buffer: BufferT, env: VecEnv) -> BufferT:
    """The buffer to train on ``env`` with: a HER buffer takes the env's compute_reward and,
    still empty, is laid out anew for another number of envs (other buffers need no env)."""
    if isinstance(buffer, HerReplayBuffer):
        if buffer.num_envs != env.num_envs:
            buffer = cast(BufferT, buffer.for_num_envs(env.num_envs))
        cast(HerReplayBuffer, buffer).set_env(env)
    return buffer


def draw(buffer: AnyBuffer, n: int, rng: np.random.Generator, batch_size: int
         ) -> tuple[np.ndarray, Batch]:
    """``n`` stored transitions drawn by the buffer's rule, raw, and their indices; a HER
    buffer relabels a share of each minibatch of ``batch_size``."""
    if isinstance(buffer, HerReplayBuffer):
        return buffer.sample(n, rng, batch_size)
    idx = buffer.sample_indices(n, rng)
    return idx, buffer.get(idx)


def next_observations(space: gym.Space, new_obs: Any, done: np.ndarray,
                      infos: list[dict[str, Any]]) -> Any:
    """What a transition stores as its next observation: ``new_obs`` with each finished env's
    row replaced by the episode's true last one (rlbase.common.buffers.transitions), for Box and
    Dict/Tuple observations alike."""
    if nested.is_nested(space):
        return nested.final_observations(space, new_obs, done, infos)
    return final_observations(new_obs, done, infos)


def _training_normalizer(env: VecEnv) -> VecNormalize | None:
    """The env's VecNormalize (the outermost), refusing a chain whose observations the replay
    could not rebuild from the raw ones: a VecFrameStack above a VecNormalize that
    normalizes observations stacks frames normalized with statistics of different steps."""
    found = find_wrapper(env, VecNormalize)
    wrapper = found if isinstance(found, VecNormalize) else None
    venv: VecEnv = env
    while wrapper is not None and venv is not wrapper:
        if isinstance(venv, VecFrameStack) and wrapper.stats.ob:
            raise RLBaseError("replay stores raw observations and normalizes sampled "
                              "batches with the current statistics, which a VecFrameStack "
                              "above VecNormalize prevents: wrap it the other way round, "
                              "VecNormalize(VecFrameStack(venv, n))")
        assert isinstance(venv, VecEnvWrapper)
        venv = venv.venv
    return wrapper


# Marks a checkpoint's replay state as raw transitions (older checkpoints hold them
# normalized when collected, and frame stacks without the cut of a reset).
_RAW_MARK = "raw_transitions"
# A HER buffer's infos (copy_info_dict), as JSON.
_HER_INFOS = "her_infos"


class RawReplay:
    """Stable-Baselines3's rule for replay behind a VecNormalize: the buffer keeps what the env
    produced below the normalization (raw observations, the raw final observation of an ended
    episode, raw rewards) and each sampled minibatch is normalized with the statistics of the
    moment it is sampled. Normalized when collected, entries would keep statistics up to
    ``buffer_size`` steps old (the very first rewards, scaled by a degenerate return std,
    clipped to -cliprew). Without a VecNormalize the env's values pass unchanged.

    env: the training env (None: no normalization).
    reward_scale: sampled rewards are multiplied by this, after the normalization.
    """

    def __init__(self, env: VecEnv | None = None, reward_scale: float = 1.0):
        self.normalizer = None if env is None else _training_normalizer(env)
        self.reward_scale = float(reward_scale)

    @property
    def stats(self) -> NormalizationStats | None:
        return None if self.normalizer is None else self.normalizer.stats

    # -- collecting: what the buffer stores --------------------------------------------------
    @property
    def _raw_obs(self) -> bool:
        return self.normalizer is not None and self.normalizer.stats.ob

    def stored_space(self, space: gym.Space) -> gym.Space:
        """The space of what the buffer stores, given the env's ``space``: the one below the
        normalization (raw uint8 images stay uint8)."""
        if self.normalizer is None or not self.normalizer.stats.ob:
            return space
        return self.normalizer.venv.observation_space

    def observations(self, obs: Any) -> Any:
        """The raw version of ``obs``, the observations the env returned last (a copy:
        the raw arrays are the env's own)."""
        if self.normalizer is None or not self.normalizer.stats.ob:
            return obs
        return nested.map_structure(np.array, self.normalizer.get_original_obs())

    def rewards(self, rewards: np.ndarray) -> np.ndarray:
        """The raw version of ``rewards``, the ones the env returned last."""
        if self.normalizer is None or not self.normalizer.stats.ret:
            return rewards
        raw = self.normalizer.get_original_reward()
        assert raw is not None
        return raw

    def final_observation(self, info: dict[str, Any]) -> Any:
        """The raw true last observation of the episode that ended with ``info``."""
        return info[RAW_FINAL_OBSERVATION] if self._raw_obs else info["final_observation"]

    def transitions(self, space: gym.Space, new_obs: Any, rewards: np.ndarray, done: np.ndarray,
                    infos: list[dict[str, Any]]) -> tuple[Any, np.ndarray]:
        """``(next observations, rewards)`` of the step just taken, raw: the next observation
        is the episode's true last one where it ended (see :func:`next_observations`)."""
        if self._raw_obs:
            new_obs = self.observations(new_obs)
            infos = [{"final_observation": info[RAW_FINAL_OBSERVATION]}
                     if RAW_FINAL_OBSERVATION in info else {} for info in infos]
        return next_observations(space, new_obs, done, infos), self.rewards(rewards)

    # -- checkpoints ----------------------------------------------------------------------------
    def buffer_state(self, buffer: object) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """``buffer``'s resume state (rlbase.common.io.checkpoint), marked as raw (any buffer
        holding raw data: rlbase.common.buffers.replay_buffer's, ACER's)."""
        meta, arrays = object_state(buffer, "replay")
        if isinstance(buffer, HerReplayBuffer) and buffer.copy_info_dict:
            meta[_HER_INFOS] = buffer.info_state()
        return {**meta, _RAW_MARK: True}, arrays

    def restore_buffer(self, buffer: object, meta: Any, arrays: dict[str, np.ndarray]
                       ) -> None:
        """Inverse of :meth:`buffer_state`. A checkpoint of an older rlbase is refused where
        its buffer would be read wrong: behind a VecNormalize (it holds normalized values)
        and for stacked frames (no next frame of the newest transitions)."""
        storage = buffer.storage if isinstance(buffer, PrioritizedReplayBuffer) else buffer
        if isinstance(meta, dict) and not meta.get(_RAW_MARK) and (
                self.stats is not None or isinstance(storage, FrameStackReplayBuffer)):
            raise RLBaseError("the checkpoint's replay buffer was written by an older rlbase "
                              "(normalized transitions, or frame stacks without episode cuts) "
                              "that this one would read wrong: start a new run, or load the "
                              "saved model instead of resuming")
        her = buffer if isinstance(buffer, HerReplayBuffer) else None
        infos = her.check_info_state(meta.get(_HER_INFOS) if isinstance(meta, dict) else None) \
            if her is not None else []
        restore_object_state(buffer, meta, arrays, "replay")
        if her is not None:
            her.set_info_state(infos)

    # -- sampling: what the learner sees -----------------------------------------------------
    def normalize_obs(self, obs: Any) -> Any:
        """Stored observations normalized with the current statistics."""
        return obs if self.stats is None else self.stats.normalize_obs(obs)

    def normalize_rewards(self, rewards: np.ndarray) -> np.ndarray:
        """Stored rewards scaled with the current return statistics, times ``reward_scale``."""
        if self.stats is not None:
            rewards = self.stats.normalize_reward(rewards)
        if self.reward_scale != 1.0:
            rewards = (rewards * self.reward_scale).astype(np.float32)
        return rewards

    def normalize(self, batch: Batch) -> Batch:
        """A sampled minibatch as the learner sees it: observations and rewards normalized
        with the current statistics, rewards times ``reward_scale``."""
        return batch._replace(obs=self.normalize_obs(batch.obs),
                              rewards=self.normalize_rewards(batch.rewards),
                              next_obs=self.normalize_obs(batch.next_obs))


def store_step(buffer: AnyBuffer, raw: RawReplay, space: gym.Space, raw_obs: Any,
               actions: np.ndarray, new_obs: Any, rewards: np.ndarray, terminated: np.ndarray,
               truncated: np.ndarray, infos: list[dict[str, Any]], gamma: float) -> None:
    """Store one vectorized step's transitions, raw (see :class:`RawReplay`): ``raw_obs``
    taken before the step, the true final observation where an episode ended (the env has
    already reset that row), and as done flag what targets must not bootstrap across
    (terminations, and with gamma = 1 truncations too: rlbase.common.buffers.transitions)."""
    done = np.logical_or(terminated, truncated)
    next_obs, raw_rewards = raw.transitions(space, new_obs, rewards, done, infos)
    dones = target_dones(terminated, truncated, gamma)
    if isinstance(buffer, HerReplayBuffer):  # it may keep the infos for compute_reward
        buffer.add(raw_obs, actions, raw_rewards, next_obs, dones, truncated, infos)
    else:
        buffer.add(raw_obs, actions, raw_rewards, next_obs, dones, truncated)


def step_and_store(env: VecEnv, buffer: AnyBuffer, raw: RawReplay, episodes: EpisodeStats,
                   obs: Any, actions: np.ndarray, env_actions: np.ndarray, gamma: float
                   ) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
    """Step ``env`` with ``env_actions`` and store each env's transition (:func:`store_step`);
    ``actions`` is what the buffer keeps (the agent's own [-1, 1] actions). Returns
    ``(new_obs, rewards, done, infos)`` as the env gave them, with ``done`` the episode ends
    of either kind.
    """
    raw_obs = raw.observations(obs)
    new_obs, rewards, terminated, truncated, infos = vec_step(env, env_actions)
    store_step(buffer, raw, env.observation_space, raw_obs, actions, new_obs, rewards,
               terminated, truncated, infos, gamma)
    episodes.update(infos)
    return new_obs, rewards, np.logical_or(terminated, truncated), infos


def reset_env(env: VecEnv, buffer: AnyBuffer) -> Any:
    """``env.reset()``, telling the buffer that every env starts a new episode (a
    frame-stacking buffer must not join the next stored frame to the previous episode)."""
    obs = env.reset()
    buffer.start_episodes()
    return obs


def sample_minibatches(buffer: AnyBuffer, raw: RawReplay, rng: np.random.Generator,
                       steps: int, batch_size: int) -> tuple[Any, ...]:
    """``steps`` minibatches drawn uniformly, normalized with the current statistics
    (:class:`RawReplay`), stacked: ``(obs, actions, rewards, next_obs, dones)`` each shaped
    ``[steps, batch_size, ...]`` (one compiled call loops over them; nested observations leaf
    by leaf)."""
    batch = raw.normalize(draw(buffer, steps * batch_size, rng, batch_size)[1])

    def split(x: np.ndarray) -> np.ndarray:
        return x.reshape(steps, batch_size, *x.shape[1:])

    return tuple(nested.map_structure(split, x) for x in
                 (batch.obs, batch.actions, batch.rewards, batch.next_obs, batch.dones))
