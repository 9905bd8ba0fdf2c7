"""Running ES episodes: many perturbed parameter vectors at once, one env per slot.

Each slot holds one env and one parameter vector; all slots act through one batched numpy
forward pass per step (a 64x64 MLP costs ~12 us for one observation and ~17 us for 16), and a
slot whose episode ends takes the next task at once. Only live slots step, so no env step is
wasted at the end of a generation and every counted step belongs to a scored episode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from rlbase.common import nested
from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env import VecEnv, find_wrapper
from rlbase.common.vec_env.gym_vec import DummyVecEnv, GymVecEnv
from rlbase.common.vec_env.vec_check_finite import VecCheckFinite
from rlbase.common.vec_env.vec_monitor import VecMonitor
from rlbase.common.vec_env.vec_reward_scale import VecRewardScale
from rlbase.es.networks import ESPolicy
from rlbase.es.noise_table import NoiseTable


class Results(NamedTuple):
    """What one worker's tasks gave: returns and lengths per task, and the sums of the
    observations it saw (for the running normalization statistics)."""

    returns: np.ndarray
    lengths: np.ndarray
    obs_sum: np.ndarray
    obs_sumsq: np.ndarray
    obs_count: int


def gym_envs(venv: VecEnv) -> list[gym.Env]:
    """The gymnasium envs inside ``venv``, to be stepped here one episode at a time.

    ES scores whole episodes of different parameter vectors, which the lockstep VecEnv API
    does not fit. Wrappers that only watch are passed through (VecMonitor, to which ES
    reports its episodes itself; VecCheckFinite, whose check ES makes on returns and
    observations); wrappers that change observations or rewards are refused. Envs of a
    SubprocVecEnv are re-made here from their spec.
    """
    if find_wrapper(venv, VecRewardScale) is not None:
        raise RLBaseError("es does not take reward scaling (--reward_scale, VecRewardScale): "
                          "its episodes run under the wrapper; drop it (with fitness_shaping="
                          "'none' scale lr instead)")
    inner = venv
    while isinstance(inner, (VecMonitor, VecCheckFinite)):
        inner = inner.venv
    if isinstance(inner, DummyVecEnv):
        return inner.envs
    if isinstance(inner, GymVecEnv):
        specs = inner.env_method("spec")
        if all(spec is not None for spec in specs):
            return [gym.make(spec) for spec in specs]
    raise RLBaseError(f"es runs episodes on the gymnasium envs of a DummyVecEnv (optionally "
                      f"under VecMonitor), got {type(venv).__name__}; drop VecNormalize and "
                      f"use normalize_observations=True instead")


class EpisodeRunner:
    """Runs tasks (a noise offset and a sign: +1, -1, or 0 for the unperturbed policy).

    :param envs: one env per slot.
    :param policy: the numpy policy.
    :param seeds: each env's seed for its first reset (None: unseeded).
    :param max_episode_steps: cut episodes at this length (None: the env's own limit).
    :param action_noise: std of Gaussian noise added to the outputs in perturbed episodes.
    :param rng: draws the action noise.
    :param record: called as ``record(return, length)`` when a perturbed episode ends (the
        training env's ``VecMonitor.record_episode``: ES steps the envs under the monitor
        itself, so it reports them).
    """

    def __init__(self, envs: list[gym.Env], policy: ESPolicy, seeds: list[int | None],
                 max_episode_steps: int | None, action_noise: float,
                 rng: np.random.Generator,
                 record: Callable[[float, int], None] | None = None):
        self.envs, self.policy = envs, policy
        self.pending_seeds = list(seeds)
        self.max_steps = max_episode_steps or np.iinfo(np.int64).max
        self.action_noise, self.rng = action_noise, rng
        self.record = record

    def run(self, theta: np.ndarray, noise: NoiseTable, noise_stdev: float,
            indices: np.ndarray, signs: np.ndarray, reset_seeds: np.ndarray | None = None
            ) -> Results:
        """Returns, lengths and observation sums of the tasks ``(indices[i], signs[i])``;
        ``reset_seeds[i] >= 0`` resets task i's env with that seed (equal seeds, equal
        starts), -1 continues the env's own random stream."""
        policy, dim = self.policy, self.policy.dim
        n = len(indices)
        nslots = min(len(self.envs), n)
        returns, lengths = np.zeros(n), np.zeros(n, np.int64)
        obs_sum, obs_sumsq = np.zeros(policy.ob_dim), np.zeros(policy.ob_dim)
        obs_count = 0
        if n == 0:
            return Results(returns, lengths, obs_sum, obs_sumsq, 0)
        params = np.empty((nslots, dim), np.float32)
        raw_obs = nested.zeros(policy.observation_space, (nslots,))  # nested for Dict/Tuple spaces
        store = _row_writer(policy.observation_space, raw_obs)
        noisy = np.zeros((nslots, 1), np.float32)
        task_of = np.full(nslots, -1)
        next_task = 0

        def start(slot: int) -> None:
            nonlocal next_task
            task = task_of[slot] = next_task
            next_task += 1
            sign = signs[task]
            params[slot] = theta
            if sign != 0:
                params[slot] += (sign * noise_stdev) * noise.get(indices[task], dim)
            noisy[slot] = float(sign != 0)
            seed, self.pending_seeds[slot] = self.pending_seeds[slot], None
            if reset_seeds is not None and reset_seeds[task] >= 0:
                seed = int(reset_seeds[task])
            store(slot, self.envs[slot].reset(seed=seed)[0])

        for slot in range(nslots):
            start(slot)
        layers = policy.unflatten(params)  # views: they follow params as slots change
        active = list(range(nslots))
        while active:
            x = policy.encode(raw_obs)
            live = x[active] if len(active) < nslots else x
            obs_sum += live.sum(axis=0)
            obs_sumsq += np.square(live, dtype=np.float64).sum(axis=0)
            obs_count += len(live)
            out = policy.outputs(layers, policy.normalize(x))
            # Unperturbed episodes take no noise and draw none (they leave the generator to
            # the training episodes, which a resumed run must replay exactly).
            if self.action_noise > 0 and noisy.any():
                out = out + self.action_noise * noisy * self.rng.standard_normal(out.shape)
            actions = policy.actions(out)
            for slot in list(active):
                ob, reward, terminated, truncated, _ = self.envs[slot].step(actions[slot])
                task = task_of[slot]
                returns[task] += float(reward)
                lengths[task] += 1
                if terminated or truncated or lengths[task] >= self.max_steps:
                    if self.record is not None and signs[task] != 0:
                        self.record(float(returns[task]), int(lengths[task]))
                    if next_task < n:
                        start(slot)
                    else:
                        active.remove(slot)
                else:
                    store(slot, ob)
        return Results(returns, lengths, obs_sum, obs_sumsq, obs_count)


def _row_writer(space: gym.Space, batch: Any) -> Callable[[int, Any], None]:
    """``write(row, obs)``: one env's observation into row ``row`` of ``batch``; a plain
    assignment for a Box (the per-step path stays as cheap as before Dict support)."""
    if nested.is_nested(space):
        return lambda row, obs: nested.assign(space, batch, row, obs)
    return batch.__setitem__
