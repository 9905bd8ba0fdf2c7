"""Evaluating a trained policy: mean and spread of full-episode returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, overload

import gymnasium as gym
import numpy as np

from rlbase.common.envs.make import as_vec_env, ensure_monitor
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.action_masks import ActionMaskReader, masking_of
from rlbase.common.vec_env import VecEnv, vec_step

StepCallback = Callable[[dict[str, Any], dict[str, Any]], Any]


def run_episodes(model: Any, env: VecEnv, n_episodes: int, deterministic: bool = True,
                 render: bool = False, callback: StepCallback | None = None,
                 successes: list[float] | None = None, action_masks: bool | str = False
                 ) -> tuple[list[float], list[int]]:
    """Play ``n_episodes`` full episodes and return their returns and lengths.

    Episodes are shared out evenly over the envs (so short episodes are not over-counted).
    Returns are the env's own reward sums, read from a VecMonitor below every normalization
    (one is put above the base VecEnv if ``env`` has none: see ``ensure_monitor``).
    model: anything with ``step(obs, state, mask, deterministic)`` and ``initial_states(n)``
        (an algorithm's model or a model class).
    render: call ``env.render()`` after every step.
    callback: SB3's ``callback(locals, globals)``, after every step for every env, with
        ``i`` (the env), ``info``, ``done``, ``reward``, ``observations``, ``actions``,
        ``episode_rewards`` and ``episode_lengths`` (the finished episodes' so far).
    successes: when given, each counted episode whose last info has ``is_success`` (goal
        envs) appends it (1.0 or 0.0) here.
    action_masks: act among the valid actions the env reports (the setting of
        :mod:`rlbase.common.loops.action_masks`; the model must take ``action_masks``).
    """
    env = ensure_monitor(env)
    n = env.num_envs
    targets = np.array([n_episodes // n + (i < n_episodes % n) for i in range(n)])
    counts = np.zeros(n, dtype=int)
    returns: list[float] = []
    lengths: list[int] = []
    obs = env.reset()
    state = model.initial_states(n)
    starts = np.ones(n, dtype=np.float32)
    reader = ActionMaskReader.for_env(env, action_masks)
    masks = None if reader is None else reader.after_reset()
    while (counts < targets).any():
        if masks is None:
            actions, _, state, _ = model.step(obs, state, starts, deterministic=deterministic)
        else:
            actions, _, state, _ = model.step(obs, state, starts, deterministic=deterministic,
                                              action_masks=masks)
        if isinstance(env.action_space, gym.spaces.Box):
            actions = np.clip(actions, env.action_space.low, env.action_space.high)
        obs, rewards, terminated, truncated, infos = vec_step(env, actions)
        done = terminated | truncated
        if reader is not None:
            masks = reader.after_step(infos, done)
        if render:
            env.render()
        if callback is not None:
            for env_index in range(n):
                callback({"i": env_index, "info": infos[env_index],
                          "done": bool(done[env_index]), "reward": rewards[env_index],
                          "observations": obs, "actions": actions,
                          "episode_rewards": returns, "episode_lengths": lengths}, globals())
        for i in np.flatnonzero(done):
            # The monitor reports whole games: a life lost ends an episode for training but
            # carries no "episode" entry, and is not counted.
            episode = infos[i].get("episode")
            if episode is None:
                continue
            ret, length = float(episode["r"]), int(episode["l"])
            if counts[i] < targets[i]:
                returns.append(ret)
                lengths.append(length)
                counts[i] += 1
                if successes is not None and "is_success" in infos[i]:
                    successes.append(float(infos[i]["is_success"]))
        starts = done.astype(np.float32)
    return returns, lengths


@overload
def evaluate_policy(model: Any, env: Any, n_eval_episodes: int = ...,
                    deterministic: bool = ..., render: bool = ...,
                    callback: StepCallback | None = ..., reward_threshold: float | None = ...,
                    return_episode_rewards: Literal[False] = ..., warn: bool = ...,
                    action_masks: bool | str | None = ...) -> tuple[float, float]: ...


@overload
def evaluate_policy(model: Any, env: Any, n_eval_episodes: int = ...,
                    deterministic: bool = ..., render: bool = ...,
                    callback: StepCallback | None = ..., reward_threshold: float | None = ...,
                    *, return_episode_rewards: Literal[True], warn: bool = ...,
                    action_masks: bool | str | None = ...) -> tuple[list[float], list[int]]: ...


def evaluate_policy(model: Any, env: Any, n_eval_episodes: int = 10,
                    deterministic: bool = True, render: bool = False,
                    callback: StepCallback | None = None,
                    reward_threshold: float | None = None,
                    return_episode_rewards: bool = False, warn: bool = True,
                    action_masks: bool | str | None = None
                    ) -> tuple[float, float] | tuple[list[float], list[int]]:
    """Mean and standard deviation of the return over ``n_eval_episodes`` episodes (SB3's
    signature); the model sees observations normalized as in training (unless ``env``
    normalizes itself). Returns are the env's own reward sums, read from a monitor below
    every wrapper that changes rewards.

    render: render the env after every step.
    callback: ``callback(locals, globals)`` after every step for every env (see
        :func:`run_episodes`).
    reward_threshold: raise AssertionError when the mean return is below it.
    return_episode_rewards: return ``(episode returns, episode lengths)`` (lists) instead.
    warn: accepted for SB3's signature; rlbase puts a monitor below every normalization
        itself, so there is no unmonitored env to warn about.
    action_masks: where the env's action masks come from (rlbase/docs/action_masking.md);
        None: the model's own ``action_masks`` setting (False for models without one).
    """
    if isinstance(n_eval_episodes, bool) or not isinstance(n_eval_episodes, int | np.integer) \
            or n_eval_episodes < 1:
        raise RLBaseError(f"n_eval_episodes must be a positive integer, got "
                          f"{n_eval_episodes!r}")
    venv = model.normalized_like_training(as_vec_env(env))
    masking = masking_of(model) if action_masks is None else action_masks
    returns, lengths = run_episodes(model, venv, n_eval_episodes, deterministic, render,
                                    callback, action_masks=masking)
    mean, std = float(np.mean(returns)), float(np.std(returns))
    if reward_threshold is not None:
        assert mean >= reward_threshold, \
            f"Mean reward below threshold: {mean:.2f} < {reward_threshold:.2f}"
    if return_episode_rewards:
        return returns, lengths
    return mean, std


class Evaluator:
    """Scores a model on a separate env and keeps the best one seen.

    eval_env: a VecEnv, a gymnasium env or an env id (seeded with ``seed``); None: models are
        only scored by :meth:`consider`. Observations reach the policy normalized exactly as in
        training at that moment (the training statistics are shared, never copied).
    n_episodes: episodes per evaluation (greedy actions unless ``deterministic`` is False).
    best_model_path: where the best model is written (None: not written).
    keep_best: keep the best model's parameters in memory (to hand it back at the end).
    """

    def __init__(self, eval_env: Any, n_episodes: int, seed: int | None = None,
                 deterministic: bool = True, best_model_path: str | None = None,
                 keep_best: bool = False):
        # Returns are read from a monitor below the normalization the model adds.
        self.env = None if eval_env is None else ensure_monitor(as_vec_env(eval_env, seed))
        self.n_episodes, self.deterministic = int(n_episodes), deterministic
        self.best_model_path, self.keep_best = best_model_path, keep_best
        self.best_score: float | None = None
        self.best_parameters: dict[str, np.ndarray] | None = None
        self.last: tuple[float, float] | None = None  # (mean return, mean length)
        self.last_success_rate: float | None = None  # goal envs' is_success, else None
        self.scored_at: int | None = None  # the model's num_timesteps at the last evaluation
        self._wrapped: VecEnv | None = None

    def evaluate(self, model: Any, step: int | None = None) -> float:
        """Play ``n_episodes`` episodes; returns their mean return (ties keep the newer
        model as the best). ``step``: the timestep the model has reached (default its
        ``num_timesteps``); asked again at the same step (the loop's periodic evaluation and
        DQN's best-model rule share one Evaluator), it returns that score unplayed."""
        if self.env is None:
            raise ValueError("this Evaluator has no env: score models with consider()")
        step = int(model.num_timesteps if step is None else step)
        if self.last is not None and self.scored_at == step:
            return self.last[0]
        if self._wrapped is None:
            self._wrapped = model.normalized_like_training(self.env)
        successes: list[float] = []
        returns, lengths = run_episodes(model, self._wrapped, self.n_episodes,
                                        self.deterministic, successes=successes,
                                        action_masks=masking_of(model))
        score = float(np.mean(returns))
        self.last_success_rate = float(np.mean(successes)) if successes else None
        self.last = (score, float(np.mean(lengths)))
        self.scored_at = step
        self.consider(model, score, ties_win=True)
        return score

    def consider(self, model: Any, score: float, ties_win: bool) -> bool:
        """Keep ``model`` as the best if ``score`` beats the best so far."""
        if self.best_score is not None and (score < self.best_score or
                                            (score == self.best_score and not ties_win)):
            return False
        self.best_score = score
        if self.keep_best:
            self.best_parameters = model.get_parameters()
        if self.best_model_path is not None:
            model.save(self.best_model_path)
        return True

    def restore_best(self, model: Any) -> bool:
        """Put the best parameters back into ``model`` (False: none kept yet)."""
        if self.best_parameters is None:
            return False
        steps = model.num_timesteps
        model.set_parameters(self.best_parameters)
        model.num_timesteps = steps
        return True

    # -- checkpoints ----------------------------------------------------------------------------
    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        arrays = {f"best/{k}": v for k, v in (self.best_parameters or {}).items()}
        return {"best_score": self.best_score, "last": self.last,
                "scored_at": self.scored_at}, arrays

    def set_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.best_score = meta.get("best_score")
        last = meta.get("last")
        self.last = None if last is None else (float(last[0]), float(last[1]))
        scored_at = meta.get("scored_at")
        self.scored_at = None if scored_at is None else int(scored_at)
        best = {k[len("best/"):]: v for k, v in arrays.items() if k.startswith("best/")}
        self.best_parameters = best or None
