"""Callbacks for the model classes' learn(): called as ``callback(model, info)`` after every
update (or env step, for the off-policy algorithms); returning False stops training.

``model`` is the class instance (A2C, PPO, ...); ``info`` holds at least ``num_timesteps``.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import numpy as np

from rlbase.common.cmd_util import as_vec_env
from rlbase.common.errors import RLBaseError
from rlbase.common.evaluation import evaluate_policy


class BaseCallback:
    """Subclasses define :meth:`on_step`; ``n_calls`` counts the calls, ``num_timesteps`` is the
    model's count at the last call."""

    def __init__(self) -> None:
        self.model: Any = None
        self.n_calls = 0
        self.num_timesteps = 0

    def init_callback(self, model: Any) -> None:
        self.model = model

    def __call__(self, model: Any, info: dict[str, Any]) -> bool:
        self.model = model
        self.n_calls += 1
        self.num_timesteps = int(info.get("num_timesteps", model.num_timesteps))
        return self.on_step(info) is not False

    def on_step(self, info: dict[str, Any]) -> bool:
        return True


class _Every(BaseCallback):
    """Fires when the timestep count passes a multiple of ``freq`` (updates add many steps at
    once, so an exact multiple may never be seen)."""

    def __init__(self, freq: int):
        super().__init__()
        if isinstance(freq, bool) or not isinstance(freq, (int, np.integer)) or freq < 1:
            raise RLBaseError(f"the frequency must be a positive integer, got {freq!r}")
        self.freq = int(freq)
        self._last: int | None = None

    def init_callback(self, model: Any) -> None:
        super().init_callback(model)
        self._last = model.num_timesteps

    def due(self) -> bool:
        last = self.num_timesteps if self._last is None else self._last
        self._last = self.num_timesteps
        return self.num_timesteps // self.freq > last // self.freq


class FunctionCallback(BaseCallback):
    """A plain ``fn(model, info)``; returning False stops training."""

    def __init__(self, fn: Callable[[Any, dict[str, Any]], Any]):
        super().__init__()
        self.fn = fn

    def on_step(self, info: dict[str, Any]) -> bool:
        return self.fn(self.model, info) is not False


class CallbackList(BaseCallback):
    """Calls every callback; training stops if any returns False."""

    def __init__(self, callbacks: Sequence[Any]):
        super().__init__()
        self.callbacks = [c if isinstance(c, BaseCallback) else FunctionCallback(c)
                          for c in callbacks]

    def init_callback(self, model: Any) -> None:
        super().init_callback(model)
        for c in self.callbacks:
            c.init_callback(model)

    def on_step(self, info: dict[str, Any]) -> bool:
        results = [c(self.model, info) for c in self.callbacks]
        return all(results)


def to_callback(callback: Any) -> BaseCallback | None:
    """None, a callable, a BaseCallback or a list of those -> one BaseCallback (or None)."""
    if callback is None:
        return None
    if isinstance(callback, BaseCallback):
        return callback
    if isinstance(callback, (list, tuple)):
        return CallbackList(callback)
    if callable(callback):
        return FunctionCallback(callback)
    raise RLBaseError(f"callback must be a callable, a BaseCallback or a list of them, got "
                      f"{type(callback).__name__}")


class CheckpointCallback(_Every):
    """Save the model every ``save_freq`` env steps to
    ``<save_path>/<name_prefix>_<num_timesteps>_steps.zip``."""

    def __init__(self, save_freq: int, save_path: str, name_prefix: str = "rl_model"):
        super().__init__(save_freq)
        self.save_path, self.name_prefix = save_path, name_prefix
        self.saved: list[str] = []

    def on_step(self, info: dict[str, Any]) -> bool:
        if self.due():
            os.makedirs(self.save_path, exist_ok=True)
            path = os.path.join(self.save_path,
                                f"{self.name_prefix}_{self.num_timesteps}_steps.zip")
            self.model.save(path)
            self.saved.append(path)
        return True


class StopTrainingOnRewardThreshold(BaseCallback):
    """Stop once the mean evaluation return reaches ``reward_threshold``: give it to
    :class:`EvalCallback` as ``callback_on_new_best`` (it reads ``info['best_mean_reward']``)."""

    def __init__(self, reward_threshold: float):
        super().__init__()
        self.reward_threshold = float(reward_threshold)

    def on_step(self, info: dict[str, Any]) -> bool:
        return not info.get("best_mean_reward", -np.inf) >= self.reward_threshold


class EvalCallback(_Every):
    """Every ``eval_freq`` env steps play ``n_eval_episodes`` on ``eval_env``; keep the best
    model (``<best_model_save_path>/best_model.zip``) and call ``callback_on_new_best`` (with
    ``best_mean_reward`` in its info) when the mean return improves.

    Results are kept in ``evaluations`` as (num_timesteps, mean, std) tuples.
    """

    def __init__(self, eval_env: Any, n_eval_episodes: int = 5, eval_freq: int = 10000,
                 best_model_save_path: str | None = None, deterministic: bool = True,
                 callback_on_new_best: BaseCallback | Callable | None = None,
                 verbose: int = 0):
        super().__init__(eval_freq)
        self.eval_env = as_vec_env(eval_env)
        self.n_eval_episodes, self.deterministic = n_eval_episodes, deterministic
        self.best_model_save_path = best_model_save_path
        self.callback_on_new_best = to_callback(callback_on_new_best)
        self.best_mean_reward = -np.inf
        self.evaluations: list[tuple[int, float, float]] = []
        self.verbose = verbose

    def init_callback(self, model: Any) -> None:
        super().init_callback(model)
        if self.callback_on_new_best is not None:
            self.callback_on_new_best.init_callback(model)

    def on_step(self, info: dict[str, Any]) -> bool:
        if not self.due():
            return True
        mean, std = evaluate_policy(self.model, self.eval_env, self.n_eval_episodes,
                                    self.deterministic)
        self.evaluations.append((self.num_timesteps, mean, std))
        if self.verbose:
            print(f"Eval num_timesteps={self.num_timesteps}, episode_reward={mean:.2f} "
                  f"+/- {std:.2f}")
        if mean <= self.best_mean_reward:
            return True
        self.best_mean_reward = mean
        if self.best_model_save_path is not None:
            os.makedirs(self.best_model_save_path, exist_ok=True)
            self.model.save(os.path.join(self.best_model_save_path, "best_model.zip"))
        if self.callback_on_new_best is not None:
            return self.callback_on_new_best(self.model, {**info,
                                                          "best_mean_reward": mean})
        return True
