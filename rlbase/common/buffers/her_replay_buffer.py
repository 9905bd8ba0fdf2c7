"""Hindsight Experience Replay (Andrychowicz et al., 2017) as a replay buffer, with
Stable-Baselines3's names and sampling rule, for every off-policy algorithm (DQN, SAC, DDPG,
TD3).

Goal envs return Dict observations with ``observation``, ``achieved_goal`` and
``desired_goal``, and a vectorized ``compute_reward(achieved_goal, desired_goal, info)``.
The buffer stores raw transitions as they happened. When a minibatch is sampled, a share
``n_sampled_goal / (n_sampled_goal + 1)`` of it is relabelled: its desired goal (in both
observations) is replaced by a goal achieved in the same episode of the same env, and its
reward recomputed by one vectorized ``compute_reward`` call over those transitions.

Episodes are tracked per env (flat index = row * num_envs + env): only transitions of
completed episodes are sampled, so a relabelled goal always comes from the transition's own
episode and never from a following one. An episode that was cut without ending (a second
``learn()`` or a resume resets the envs) is closed where it was cut, as SB3's
``truncate_last_trajectory`` does; its transitions keep their stored ``done`` flags, so the
cut one bootstraps from its stored next observation. The stored ``done`` (a termination, not
a time-limit truncation) is kept for relabelled transitions too, as in SB3.
"""

from __future__ import annotations

import copy
from enum import Enum
from typing import Any, Callable, Mapping

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from rlbase.common import nested
from rlbase.common.buffers.replay_buffer import Batch, NestedReplayBuffer, _check_size
from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env import DummyVecEnv, VecEnv, VecNormalize

GOAL_KEYS = ("observation", "achieved_goal", "desired_goal")
RewardFn = Callable[[np.ndarray, np.ndarray, Any], Any]


class GoalSelectionStrategy(Enum):
    """Where a relabelled transition's new goal comes from (SB3's values)."""

    FUTURE = 0   # achieved at this step or later in the episode (SB3's: this step included)
    FINAL = 1    # achieved at the episode's last step
    EPISODE = 2  # achieved at any step of the episode


def goal_strategy(value: Any) -> GoalSelectionStrategy:
    """A strategy from its name ('future', 'final', 'episode'; any case) or an enum member
    (rlbase's or Stable-Baselines3's, matched by name)."""
    name = value.name if isinstance(value, Enum) else value
    if isinstance(name, str) and name.upper() in GoalSelectionStrategy.__members__:
        return GoalSelectionStrategy[name.upper()]
    raise RLBaseError(f"goal_selection_strategy must be 'future', 'final' or 'episode', got "
                      f"{value!r}")


#: the keyword arguments HerReplayBuffer takes (replay_buffer_kwargs) and their defaults;
#: SB3's handle_timeout_termination is accepted with the one value rlbase uses
HER_DEFAULTS: dict[str, Any] = {"n_sampled_goal": 4, "goal_selection_strategy": "future",
                                "copy_info_dict": False}
_FIXED = {"handle_timeout_termination": True}


def her_kwargs(kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """``replay_buffer_kwargs`` checked and made JSON-able (the strategy as its name), in the
    form a config stores; an unknown name or a bad value is a one-line error."""
    out: dict[str, Any] = {}
    for name, value in (kwargs or {}).items():
        if name in _FIXED:
            if value != _FIXED[name]:
                raise RLBaseError(f"replay_buffer_kwargs: {name} must be {_FIXED[name]!r} (what "
                                  f"rlbase does: truncations bootstrap), got {value!r}")
            continue
        if name not in HER_DEFAULTS:
            raise RLBaseError(f"replay_buffer_kwargs: HerReplayBuffer has no parameter {name!r}; "
                              f"valid: {', '.join(HER_DEFAULTS)}")
        out[name] = value
    n = out.get("n_sampled_goal", HER_DEFAULTS["n_sampled_goal"])
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise RLBaseError(f"replay_buffer_kwargs: n_sampled_goal must be an integer >= 0, got "
                          f"{n!r}")
    if "n_sampled_goal" in out:
        out["n_sampled_goal"] = int(n)
    if "goal_selection_strategy" in out:
        out["goal_selection_strategy"] = \
            goal_strategy(out["goal_selection_strategy"]).name.lower()
    if not isinstance(out.get("copy_info_dict", False), bool):
        raise RLBaseError(f"replay_buffer_kwargs: copy_info_dict must be True or False, got "
                          f"{out['copy_info_dict']!r}")
    return out


def check_goal_space(space: gym.Space) -> None:
    """Refuse, in one line, an observation space that is not a goal env's."""
    if not isinstance(space, gym.spaces.Dict) or not set(GOAL_KEYS) <= set(space.spaces):
        raise RLBaseError(f"HER (replay_buffer_class='her') needs a goal env: a Dict "
                          f"observation with keys {', '.join(GOAL_KEYS)} and a compute_reward "
                          f"method, got observations {space}")
    for key in GOAL_KEYS[1:]:
        if nested.is_nested(space.spaces[key]):
            raise RLBaseError(f"HER needs {key} to be one array (Box, MultiBinary, Discrete, "
                              f"...), got {space.spaces[key]}")


def _local_copy(env: VecEnv) -> gym.Env | None:
    """An env of this process made from env 0's spec (Baselines computed HER's rewards on
    such a copy), or None when env 0 has no spec that gymnasium can make here."""
    try:
        spec = env.get_attr("spec", indices=[0])[0]
        return gym.make(spec) if spec is not None else None
    except Exception:  # noqa: BLE001 - any failure: compute the rewards in env 0's worker
        return None


def goal_reward_fn(env: VecEnv) -> RewardFn:
    """The env's vectorized ``compute_reward``, called once per batch in this process: the
    first env's own method for envs in this process (DummyVecEnv), else that of a copy made
    here from env 0's spec; without a spec, through ``env_method`` in env 0's worker alone
    (the envs are assumed identical, as in SB3). No compute_reward: a one-line error."""
    base = env.unwrapped
    try:
        if isinstance(base, DummyVecEnv):
            fn: RewardFn = base.envs[0].get_wrapper_attr("compute_reward")
        elif (local := _local_copy(env)) is not None:
            fn = local.get_wrapper_attr("compute_reward")
        else:
            env.get_attr("spec", indices=[0])  # fails here, not mid-run, if env 0 is gone

            def fn(achieved: np.ndarray, desired: np.ndarray, infos: Any) -> Any:
                return env.env_method("compute_reward", achieved, desired, infos,
                                      indices=[0])[0]
            probe = env.observation_space
            assert isinstance(probe, gym.spaces.Dict)
            goal = probe.spaces["achieved_goal"].sample()
            fn(np.asarray([goal]), np.asarray([goal]), [{}])
    except AttributeError:
        raise RLBaseError("HER (replay_buffer_class='her') needs a goal env with a "
                          "compute_reward(achieved_goal, desired_goal, info) method; this env "
                          "has none") from None
    if not callable(fn):
        raise RLBaseError("HER needs the env's compute_reward to be a method, got "
                          f"{type(fn).__name__}")
    return fn


class HerReplayBuffer(NestedReplayBuffer):
    """A replay buffer of goal-env transitions that relabels goals when sampled (see the
    module's docstring).

    size: transitions kept (rounded up to a multiple of num_envs); a new transition that
        overwrites an episode's first one removes that whole episode from sampling.
    num_envs: envs per vectorized step (episodes are tracked per env).
    n_sampled_goal: relabelled transitions per real one: a share n / (n + 1) of every
        minibatch is relabelled (0: none).
    goal_selection_strategy: 'future' (a goal achieved at this step or later: SB3's
        inclusive rule), 'final' or 'episode', or a GoalSelectionStrategy.
    copy_info_dict: keep each transition's info dict and pass the relabelled ones' to
        compute_reward (else a list of empty dicts). Checkpoints and saved replay buffers keep
        them as JSON: numpy values come back as numbers and lists; a value JSON cannot hold
        (an object) is left out of its dict.
    """

    ring_fields: tuple[str, ...] = ("obs_leaves", "next_obs_leaves", "actions", "rewards", "dones",
                   "ep_start", "ep_length")
    # Not saved in checkpoints (checkpoint.object_state): the env's method, infos, and the
    # settings, which come from this run's config.
    transient_fields = ("_reward_fn", "_infos", "goal_selection_strategy", "n_sampled_goal",
                        "her_ratio", "copy_info_dict")

    def __init__(self, size: int, ob_space: gym.Space, num_envs: int = 1,
                 ac_shape: tuple = (), ac_dtype: npt.DTypeLike = np.int64,
                 n_sampled_goal: int = 4, goal_selection_strategy: Any = "future",
                 copy_info_dict: bool = False):
        check_goal_space(ob_space)
        checked = her_kwargs({"n_sampled_goal": n_sampled_goal,
                              "goal_selection_strategy": goal_selection_strategy,
                              "copy_info_dict": copy_info_dict})
        self.num_envs = int(num_envs)
        self.rows = max(-(-_check_size(size) // self.num_envs), 1)
        super().__init__(self.rows * self.num_envs, ob_space, ac_shape, ac_dtype)
        self.n_sampled_goal = checked["n_sampled_goal"]
        self.her_ratio = 1.0 - 1.0 / (self.n_sampled_goal + 1)
        self.goal_selection_strategy = goal_strategy(checked["goal_selection_strategy"])
        self.copy_info_dict = checked["copy_info_dict"]
        names = nested.leaf_names(ob_space)
        self._achieved = names.index("achieved_goal")
        self._desired = names.index("desired_goal")
        # Per transition: the row of its episode's first transition, and the episode's length
        # once it is complete (0: in progress or overwritten, not sampled).
        self.ep_start = np.zeros(self.capacity, dtype=np.int64)
        self.ep_length = np.zeros(self.capacity, dtype=np.int64)
        self.current_start = np.zeros(self.num_envs, dtype=np.int64)  # row, per env
        self.valid = 0  # transitions with ep_length > 0
        self._infos: list[dict[str, Any]] | None = \
            [{} for _ in range(self.capacity)] if self.copy_info_dict else None
        self._reward_fn: RewardFn | None = None

    def set_env(self, env: VecEnv) -> None:
        """Take the training env's compute_reward (refused without one)."""
        self._reward_fn = goal_reward_fn(env)

    def for_num_envs(self, num_envs: int) -> HerReplayBuffer:
        """This empty buffer's settings for ``num_envs`` envs (its episodes are tracked per
        env: a buffer holding transitions cannot change that)."""
        if self.size:
            raise RLBaseError(f"the HER buffer holds {self.size} transitions of {self.num_envs} "
                              f"envs; it cannot continue with {num_envs} envs: use as many")
        return HerReplayBuffer(self.capacity, self.space, num_envs, self.actions.shape[1:],
                               self.actions.dtype, self.n_sampled_goal,
                               self.goal_selection_strategy, self.copy_info_dict)

    def __len__(self) -> int:
        """Transitions that can be sampled: those of completed episodes."""
        return self.valid

    # -- writing -------------------------------------------------------------------------
    def _set_length(self, env: int, start: int, offsets: np.ndarray, length: int) -> None:
        idx = (start + offsets) % self.rows * self.num_envs + env
        self.valid += (len(idx) if length > 0 else 0) - int(np.count_nonzero(self.ep_length[idx]))
        self.ep_length[idx] = length

    def add(self, obs: Any, actions: np.ndarray, rewards: np.ndarray, next_obs: Any,
            terminated: np.ndarray, truncated: np.ndarray,
            infos: list[dict[str, Any]] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Store one vectorized step (``terminated``: the done flag targets cut on), closing
        the episodes that ended on it (terminated or truncated)."""
        row = self.pos // self.num_envs
        for env in range(self.num_envs):
            i = row * self.num_envs + env
            if self.ep_length[i] > 0:  # the rest of an old episode can no longer be sampled
                start, length = int(self.ep_start[i]), int(self.ep_length[i])
                self._set_length(env, start, np.arange((row - start) % self.rows, length), 0)
        self.ep_start[row * self.num_envs + np.arange(self.num_envs)] = self.current_start
        idx, gone = super().add(obs, actions, rewards, next_obs, terminated, truncated)
        if self._infos is not None and infos is not None:
            for i, info in zip(idx.tolist(), infos):
                self._infos[i] = info
        ended = np.logical_or(np.asarray(terminated) > 0, truncated)
        for env in np.flatnonzero(ended).tolist():
            self._close_episode(env, row + 1)
        return idx, gone

    def _close_episode(self, env: int, end_row: int) -> None:
        """The episode of ``env`` whose last transition is in row ``end_row - 1`` is
        complete: its transitions become sampleable."""
        start = int(self.current_start[env])
        length = (end_row - start) % self.rows or self.rows
        self._set_length(env, start, np.arange(length), length)
        self.current_start[env] = end_row % self.rows

    def start_episodes(self) -> None:
        """The envs were reset: close each env's episode in progress where it was cut (its
        last transition keeps its own next observation and bootstraps from it)."""
        row = self.pos // self.num_envs
        if self.size == 0:
            return
        for env in range(self.num_envs):
            if int(self.current_start[env]) != row:
                self._close_episode(env, row)

    # -- saving the infos (copy_info_dict) ---------------------------------------------------
    def info_state(self) -> list[dict[str, Any]] | None:
        """The stored transitions' infos as JSON values (None without copy_info_dict)."""
        if self._infos is None:
            return None
        return [_jsonable(info) for info in self._infos[:self.size]]

    def check_info_state(self, infos: Any) -> list[dict[str, Any]]:
        """What :meth:`info_state` returned, checked to fit (a checkpoint without infos: none,
        so empty dicts)."""
        saved = infos if isinstance(infos, list) else []
        if len(saved) > self.capacity or not all(isinstance(i, dict) for i in saved):
            raise RLBaseError(f"the checkpoint's HER infos do not fit this buffer ({len(saved)} "
                              f"entries for {self.capacity} transitions, or not dicts)")
        return saved

    def set_info_state(self, infos: list[dict[str, Any]]) -> None:
        """Put infos checked by :meth:`check_info_state` back (nothing without
        copy_info_dict)."""
        if self._infos is not None:
            self._infos[:] = infos + [{} for _ in range(self.capacity - len(infos))]

    # -- sampling --------------------------------------------------------------------------
    def sample_indices(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` indices drawn uniformly (with replacement) among completed episodes'
        transitions."""
        if self.valid == 0:
            raise RLBaseError("HER cannot sample before the first episode ends: raise "
                              "learning_starts above the env's episode length")
        idx = rng.integers(0, self.size, size=n)
        for _ in range(8):  # redraw the few in-progress ones; usually none are left
            bad = np.flatnonzero(self.ep_length[idx] == 0)
            if not len(bad):
                return idx
            idx[bad] = rng.integers(0, self.size, size=len(bad))
        bad = np.flatnonzero(self.ep_length[idx] == 0)
        idx[bad] = rng.choice(np.flatnonzero(self.ep_length[:self.size]), size=len(bad))
        return idx

    def relabelled_positions(self, n: int, batch_size: int) -> np.ndarray:
        """Which of ``n`` sampled transitions (minibatches of ``batch_size`` in a row) are
        relabelled: the first ``int(her_ratio * batch_size)`` of each minibatch (SB3's
        split)."""
        k = int(self.her_ratio * batch_size)
        return np.flatnonzero(np.arange(n) % batch_size < k)

    def goal_indices(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """For each transition ``idx``, the transition of the same episode whose next
        achieved goal becomes its desired goal, by the goal selection strategy."""
        rows, envs = idx // self.num_envs, idx % self.num_envs
        start, length = self.ep_start[idx], self.ep_length[idx]
        strategy = self.goal_selection_strategy
        if strategy is GoalSelectionStrategy.FUTURE:
            t = rng.integers((rows - start) % self.rows, length)
        elif strategy is GoalSelectionStrategy.FINAL:
            t = length - 1
        else:
            t = rng.integers(0, length)
        return ((start + t) % self.rows) * self.num_envs + envs

    def sample(self, n: int, rng: np.random.Generator, batch_size: int | None = None
               ) -> tuple[np.ndarray, Batch]:
        """``n`` transitions (minibatches of ``batch_size``, None: one of n), a share of each
        relabelled; returns their indices and the batch."""
        idx = self.sample_indices(n, rng)
        obs = [leaf[idx] for leaf in self.obs_leaves]
        next_obs = [leaf[idx] for leaf in self.next_obs_leaves]
        rewards = self.rewards[idx]
        virtual = self.relabelled_positions(n, batch_size or n)
        if len(virtual):
            goals = self.next_obs_leaves[self._achieved][self.goal_indices(idx[virtual], rng)]
            obs[self._desired][virtual] = goals
            next_obs[self._desired][virtual] = goals
            rewards[virtual] = self.compute_rewards(next_obs[self._achieved][virtual], goals,
                                                    idx[virtual])
        return idx, Batch(nested.pack(self.space, obs), self.actions[idx], rewards,
                          nested.pack(self.space, next_obs), self.dones[idx])

    def compute_rewards(self, achieved: np.ndarray, desired: np.ndarray, idx: np.ndarray
                        ) -> np.ndarray:
        """The env's rewards for reaching ``achieved`` when ``desired`` was the goal, one
        vectorized compute_reward call (with the stored infos of transitions ``idx`` when
        copy_info_dict)."""
        if self._reward_fn is None:
            raise RLBaseError("HerReplayBuffer has no env to compute rewards with: call "
                              "set_env(env) first")
        infos: Any = [copy.deepcopy(self._infos[i]) for i in idx.tolist()] \
            if self._infos is not None else [{} for _ in range(len(idx))]
        rewards = np.asarray(self._reward_fn(achieved, desired, infos), np.float32).reshape(-1)
        if rewards.shape != (len(idx),):
            raise RLBaseError(f"the env's compute_reward returned {rewards.size} rewards for a "
                              f"batch of {len(idx)} goals: it must be vectorized")
        return rewards


def _jsonable(value: Any) -> Any:
    """``value`` with numpy scalars and arrays as numbers and lists, dicts and lists walked;
    dict entries JSON cannot hold are left out (None at the top: dropped by the caller)."""
    if isinstance(value, dict):
        entries = {key: _jsonable(item) for key, item in value.items() if isinstance(key, str)}
        return {key: item for key, item in entries.items() if item is not _UNSAVED}
    if isinstance(value, (list, tuple)):
        items = [_jsonable(v) for v in value]
        return _UNSAVED if any(i is _UNSAVED for i in items) else items
    if isinstance(value, np.ndarray):
        return value.tolist() if value.dtype.kind in "biuf" else _UNSAVED
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return _UNSAVED


_UNSAVED = object()  # a value JSON cannot hold


#: Baselines' HER normalizer (baselines/her/normalizer.py): normalized values clipped to
#: [-5, 5], standard deviations floored at 0.01
HER_CLIP_RANGE, HER_NORM_EPS = 5.0, 0.01


def her_vec_normalize(venv: VecEnv, training: bool = True) -> VecNormalize:
    """``venv`` with its observations normalized per key as Baselines' HER does: each Box
    entry (``observation``, ``achieved_goal``, ``desired_goal``) by its own running mean and
    std, clipped to +-5, std at least about 0.01 (``sqrt(var + 0.01**2)``); rewards left raw.
    The replay buffer keeps raw transitions (compute_reward sees raw goals) and normalizes each
    sampled, relabelled minibatch with the current statistics: a relabelled desired goal is
    normalized with the desired goals' statistics (Baselines pools both goal keys in one and
    updates it from relabelled samples)."""
    return VecNormalize(venv, norm_obs=True, norm_reward=False, clip_obs=HER_CLIP_RANGE,
                        epsilon=HER_NORM_EPS ** 2, training=training)


def her_buffer(kwargs: Mapping[str, Any] | None, size: int, ob_space: gym.Space, num_envs: int,
               ac_shape: tuple, ac_dtype: npt.DTypeLike) -> HerReplayBuffer:
    """The HER buffer an algorithm's config asks for (``replay_buffer_kwargs``)."""
    return HerReplayBuffer(size, ob_space, num_envs, ac_shape, ac_dtype,
                           **{**HER_DEFAULTS, **her_kwargs(kwargs)})
