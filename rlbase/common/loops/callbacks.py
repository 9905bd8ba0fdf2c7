"""Stable-Baselines3's callback protocol for the model classes' learn().

A callback subclasses :class:`BaseCallback` and overrides the hooks it needs: ``_init_callback``,
``_on_training_start``, ``_on_rollout_start``, ``_on_step`` (returning False stops training),
``_on_rollout_end``, ``_on_training_end``. It sees ``model`` (the class instance: ``PPO``,
``SAC``...), ``training_env``, ``n_calls`` (calls of ``on_step``: one per vector env step, so
frequencies count calls as in SB3: with 4 envs, ``eval_freq=1000`` is every 4000 env steps),
``num_timesteps`` (the model's count at the call), ``locals`` / ``globals`` (the algorithm's
step: ``new_obs``, ``rewards``, ``dones``, ``infos``, ``actions``, and ``self``), ``logger``
and ``parent``.

When the hooks run: A2C and PPO call ``on_rollout_start`` / ``on_step`` after every vector
step / ``on_rollout_end`` around each rollout of ``n_steps``; the off-policy algorithms (DQN,
DDPG, TD3, SAC) and QLearning treat every vector step as a rollout of one step (SB3 collects
``train_freq`` steps per rollout, so ``_on_rollout_start`` runs more often here when
``train_freq`` is above one vector step); ACER and ES (not in SB3) call them once per update
or generation.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tqdm import tqdm

from rlbase.common.envs.make import as_vec_env, ensure_monitor
from rlbase.common.errors import RLBaseError
from rlbase.common.logs import logger as logger_module
from rlbase.common.loops import evaluation


def _frequency(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise RLBaseError(f"{name} must be a positive integer (calls of on_step), got {value!r}")
    return int(value)


class BaseCallback:
    """SB3's callback base class (see the module docstring)."""

    def __init__(self, verbose: int = 0):
        self.model: Any = None
        self.training_env: Any = None
        self.n_calls = 0
        self.num_timesteps = 0
        self.verbose = verbose
        self.locals: dict[str, Any] = {}
        self.globals: dict[str, Any] = {}
        self.parent: BaseCallback | None = None

    @property
    def logger(self) -> Any:
        """The model's logger (the process's current one before the model has any)."""
        try:
            return self.model.logger
        except AttributeError:
            return logger_module.get_current()

    # -- called by learn() --------------------------------------------------------------------
    def init_callback(self, model: Any) -> None:
        self.model = model
        self.training_env = model.get_env()
        self._init_callback()

    def on_training_start(self, locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        self.locals, self.globals = locals_, globals_
        self.num_timesteps = self.model.num_timesteps
        self._on_training_start()

    def on_rollout_start(self) -> None:
        self._on_rollout_start()

    def on_step(self) -> bool:
        """Count the call and run ``_on_step``; False stops training."""
        self.n_calls += 1
        self.num_timesteps = self.model.num_timesteps
        return self._on_step() is not False

    def on_rollout_end(self) -> None:
        self._on_rollout_end()

    def on_training_end(self) -> None:
        self._on_training_end()

    def update_locals(self, locals_: dict[str, Any]) -> None:
        self.locals.update(locals_)
        self.update_child_locals(locals_)

    # -- to override ----------------------------------------------------------------------------
    def _init_callback(self) -> None:
        pass

    def _on_training_start(self) -> None:
        pass

    def _on_rollout_start(self) -> None:
        pass

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        pass

    def _on_training_end(self) -> None:
        pass

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        pass


class EventCallback(BaseCallback):
    """Runs ``callback`` (its child, whose ``parent`` it becomes) when an event fires."""

    def __init__(self, callback: BaseCallback | None = None, verbose: int = 0):
        super().__init__(verbose)
        self.callback = callback
        if callback is not None:
            callback.parent = self

    def init_callback(self, model: Any) -> None:
        super().init_callback(model)
        if self.callback is not None:
            self.callback.init_callback(model)

    def _on_training_start(self) -> None:
        if self.callback is not None:
            self.callback.on_training_start(self.locals, self.globals)

    def _on_event(self) -> bool:
        return self.callback.on_step() if self.callback is not None else True

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        if self.callback is not None:
            self.callback.update_locals(locals_)


class CallbackList(BaseCallback):
    """Runs every callback in turn; training stops if any returns False."""

    def __init__(self, callbacks: Sequence[BaseCallback]):
        super().__init__()
        bad = [c for c in callbacks if not isinstance(c, BaseCallback)]
        if bad:
            raise RLBaseError(f"CallbackList takes BaseCallback objects, got {bad[0]!r}")
        self.callbacks = list(callbacks)

    def _init_callback(self) -> None:
        for callback in self.callbacks:
            callback.init_callback(self.model)
            callback.parent = self.parent

    def _on_training_start(self) -> None:
        for callback in self.callbacks:
            callback.on_training_start(self.locals, self.globals)

    def _on_rollout_start(self) -> None:
        for callback in self.callbacks:
            callback.on_rollout_start()

    def _on_step(self) -> bool:
        return all([callback.on_step() for callback in self.callbacks])  # (every one runs)

    def _on_rollout_end(self) -> None:
        for callback in self.callbacks:
            callback.on_rollout_end()

    def _on_training_end(self) -> None:
        for callback in self.callbacks:
            callback.on_training_end()

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        for callback in self.callbacks:
            callback.update_locals(locals_)


class ConvertCallback(BaseCallback):
    """SB3's form of a plain function, ``fn(locals, globals)`` after every step; returning
    False stops (None continues)."""

    def __init__(self, callback: Callable[[dict[str, Any], dict[str, Any]], Any] | None,
                 verbose: int = 0):
        super().__init__(verbose)
        self.callback = callback

    def _on_step(self) -> bool:
        if self.callback is None:
            return True
        return self.callback(self.locals, self.globals) is not False


class CheckpointCallback(BaseCallback):
    """Save the model every ``save_freq`` calls to
    ``<save_path>/<name_prefix>_<num_timesteps>_steps.zip``; with ``save_replay_buffer`` the
    replay buffer (``..._replay_buffer_<n>_steps.pkl``, rlbase's zip format) and with
    ``save_vecnormalize`` the VecNormalize statistics (``..._vecnormalize_<n>_steps.pkl``)."""

    def __init__(self, save_freq: int, save_path: str, name_prefix: str = "rl_model",
                 save_replay_buffer: bool = False, save_vecnormalize: bool = False,
                 verbose: int = 0):
        super().__init__(verbose)
        self.save_freq = _frequency("save_freq", save_freq)
        self.save_path, self.name_prefix = save_path, name_prefix
        self.save_replay_buffer, self.save_vecnormalize = save_replay_buffer, save_vecnormalize
        self.saved: list[str] = []

    def _init_callback(self) -> None:
        os.makedirs(self.save_path, exist_ok=True)

    def _checkpoint_path(self, checkpoint_type: str = "", extension: str = "") -> str:
        return os.path.join(self.save_path, f"{self.name_prefix}_{checkpoint_type}"
                                            f"{self.num_timesteps}_steps.{extension}")

    def _on_step(self) -> bool:
        if self.n_calls % self.save_freq:
            return True
        path = self._checkpoint_path(extension="zip")
        self.model.save(path)
        self.saved.append(path)
        if self.verbose >= 2:
            print(f"Saving model checkpoint to {path}")
        if self.save_replay_buffer:
            self.model.save_replay_buffer(self._checkpoint_path("replay_buffer_", "pkl"))
        if self.save_vecnormalize:
            normalize = self.model.get_vec_normalize_env()
            if normalize is None:
                raise RLBaseError("CheckpointCallback(save_vecnormalize=True): the model's env "
                                  "has no VecNormalize")
            normalize.save(self._checkpoint_path("vecnormalize_", "pkl"))
        return True


class EvalCallback(EventCallback):
    """Every ``eval_freq`` calls play ``n_eval_episodes`` on ``eval_env`` (observations
    normalized as training's at that moment); record ``eval/mean_reward`` and
    ``eval/mean_ep_length`` (and ``eval/success_rate`` when the episodes' last infos have
    ``is_success``, as goal envs' do) to the model's logger and dump a row; keep the best model
    (``<best_model_save_path>/best_model.zip``) and run ``callback_on_new_best`` when the mean
    return improves, ``callback_after_eval`` after every evaluation. With ``log_path`` every
    evaluation so far is written to ``<log_path>/evaluations.npz`` (``timesteps``,
    ``results``, ``ep_lengths``, and ``successes`` for goal envs). Returns are the env's own
    reward sums.
    ``warn`` is accepted: rlbase reads returns from a monitor it puts below every wrapper, so
    there is no unmonitored env to warn about."""

    def __init__(self, eval_env: Any, callback_on_new_best: BaseCallback | None = None,
                 callback_after_eval: BaseCallback | None = None, n_eval_episodes: int = 5,
                 eval_freq: int = 10000, log_path: str | None = None,
                 best_model_save_path: str | None = None, deterministic: bool = True,
                 render: bool = False, verbose: int = 1, warn: bool = True):
        super().__init__(callback_after_eval, verbose)

        self.callback_on_new_best = callback_on_new_best
        if callback_on_new_best is not None:
            callback_on_new_best.parent = self
        self.n_eval_episodes = _frequency("n_eval_episodes", n_eval_episodes)
        self.eval_freq = _frequency("eval_freq", eval_freq)
        if render:
            raise RLBaseError("EvalCallback(render=True) is not supported: make eval_env with "
                              "render_mode='human', or record it with VecVideoRecorder")
        self.eval_env = ensure_monitor(as_vec_env(eval_env))
        self.deterministic, self.warn = deterministic, warn
        self.best_model_save_path = best_model_save_path
        self.log_path = None if log_path is None else os.path.join(log_path, "evaluations")
        self.best_mean_reward = -np.inf
        self.last_mean_reward = -np.inf
        self.evaluations_timesteps: list[int] = []
        self.evaluations_results: list[list[float]] = []
        self.evaluations_length: list[list[int]] = []
        self.evaluations_successes: list[list[float]] = []

    def _init_callback(self) -> None:
        for folder in (self.best_model_save_path,
                       None if self.log_path is None else os.path.dirname(self.log_path)):
            if folder:
                os.makedirs(folder, exist_ok=True)
        if self.callback_on_new_best is not None:
            self.callback_on_new_best.init_callback(self.model)

    def _on_step(self) -> bool:
        if self.n_calls % self.eval_freq:
            return True

        venv = self.model.normalized_like_training(self.eval_env)
        successes: list[float] = []
        # Through the module, so that a test can count the evaluations.
        returns, lengths = evaluation.run_episodes(self.model, venv, self.n_eval_episodes,
                                                   self.deterministic, successes=successes)
        self.evaluations_timesteps.append(self.num_timesteps)
        self.evaluations_results.append(returns)
        self.evaluations_length.append(lengths)
        if successes:
            self.evaluations_successes.append(successes)
        if self.log_path is not None:
            saved: dict[str, Any] = {"timesteps": self.evaluations_timesteps,
                                     "results": self.evaluations_results,
                                     "ep_lengths": self.evaluations_length}
            if self.evaluations_successes:
                saved["successes"] = self.evaluations_successes
            np.savez(self.log_path, **saved)
        mean, std = float(np.mean(returns)), float(np.std(returns))
        mean_length = float(np.mean(lengths))
        self.last_mean_reward = mean
        if self.verbose >= 1:
            print(f"Eval num_timesteps={self.num_timesteps}, episode_reward={mean:.2f} "
                  f"+/- {std:.2f}")
            print(f"Episode length: {mean_length:.2f} +/- {np.std(lengths):.2f}")
        log = self.logger
        log.record("eval/mean_reward", mean)
        log.record("eval/mean_ep_length", mean_length)
        if successes:
            success_rate = float(np.mean(successes))
            if self.verbose >= 1:
                print(f"Success rate: {100 * success_rate:.2f}%")
            log.record("eval/success_rate", success_rate)
        log.record("time/total_timesteps", self.num_timesteps, exclude="tensorboard")
        log.dump(self.num_timesteps)
        continue_training = True
        if mean > self.best_mean_reward:
            if self.verbose >= 1:
                print("New best mean reward!")
            if self.best_model_save_path is not None:
                self.model.save(os.path.join(self.best_model_save_path, "best_model.zip"))
            self.best_mean_reward = mean
            if self.callback_on_new_best is not None:
                continue_training = self.callback_on_new_best.on_step()
        if self.callback is not None:
            continue_training = continue_training and self._on_event()
        return continue_training

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        super().update_child_locals(locals_)
        if self.callback_on_new_best is not None:
            self.callback_on_new_best.update_locals(locals_)


def _parent_eval(callback: BaseCallback, name: str) -> EvalCallback:
    if not isinstance(callback.parent, EvalCallback):
        raise RLBaseError(f"{name} must be used with an EvalCallback (as callback_on_new_best "
                          f"or callback_after_eval)")
    return callback.parent


class StopTrainingOnRewardThreshold(BaseCallback):
    """Stop once the best mean evaluation return reaches ``reward_threshold`` (give it to an
    :class:`EvalCallback` as ``callback_on_new_best``)."""

    def __init__(self, reward_threshold: float, verbose: int = 0):
        super().__init__(verbose)
        self.reward_threshold = float(reward_threshold)

    def _on_step(self) -> bool:
        best = _parent_eval(self, "StopTrainingOnRewardThreshold").best_mean_reward
        continue_training = bool(best < self.reward_threshold)
        if self.verbose >= 1 and not continue_training:
            print(f"Stopping training because the mean reward {best:.2f} is above the "
                  f"threshold {self.reward_threshold}")
        return continue_training


class StopTrainingOnNoModelImprovement(BaseCallback):
    """Stop when ``max_no_improvement_evals`` evaluations in a row (after the first
    ``min_evals``) did not improve the best mean return (give it to an :class:`EvalCallback`
    as ``callback_after_eval``)."""

    def __init__(self, max_no_improvement_evals: int, min_evals: int = 0, verbose: int = 0):
        super().__init__(verbose)
        self.max_no_improvement_evals = int(max_no_improvement_evals)
        self.min_evals = int(min_evals)
        self.last_best_mean_reward = -np.inf
        self.no_improvement_evals = 0

    def _on_step(self) -> bool:
        best = _parent_eval(self, "StopTrainingOnNoModelImprovement").best_mean_reward
        if self.n_calls > self.min_evals:
            if best > self.last_best_mean_reward:
                self.no_improvement_evals = 0
            else:
                self.no_improvement_evals += 1
        self.last_best_mean_reward = best
        continue_training = self.no_improvement_evals <= self.max_no_improvement_evals
        if self.verbose >= 1 and not continue_training:
            print(f"Stopping training because there was no new best model in the last "
                  f"{self.no_improvement_evals} evaluations")
        return continue_training


class EveryNTimesteps(EventCallback):
    """Run ``callback`` every ``n_steps`` env steps (timesteps, not calls)."""

    def __init__(self, n_steps: int, callback: BaseCallback):
        super().__init__(callback)
        self.n_steps = _frequency("n_steps", n_steps)
        self.last_time_trigger = 0

    def _on_step(self) -> bool:
        if self.num_timesteps - self.last_time_trigger >= self.n_steps:
            self.last_time_trigger = self.num_timesteps
            return self._on_event()
        return True


class StopTrainingOnMaxEpisodes(BaseCallback):
    """Stop after ``max_episodes`` episodes per env (``max_episodes * num_envs`` in all),
    counted from the ``dones`` of each step."""

    def __init__(self, max_episodes: int, verbose: int = 0):
        super().__init__(verbose)
        self.max_episodes = _frequency("max_episodes", max_episodes)
        self._total_max_episodes = self.max_episodes
        self.n_episodes = 0

    def _init_callback(self) -> None:
        self._total_max_episodes = self.max_episodes * self.training_env.num_envs

    def _on_step(self) -> bool:
        if "dones" not in self.locals:
            raise RLBaseError("StopTrainingOnMaxEpisodes needs the step's dones, which this "
                              "algorithm does not report per step")
        self.n_episodes += int(np.sum(self.locals["dones"]))
        continue_training = self.n_episodes < self._total_max_episodes
        if self.verbose >= 1 and not continue_training:
            print(f"Stopping training after {self.n_episodes} episodes")
        return continue_training


class ProgressBarCallback(BaseCallback):
    """A tqdm progress bar of the env steps (``learn(progress_bar=True)`` adds one)."""

    def __init__(self) -> None:
        super().__init__()
        self.pbar: Any = None

    def _on_training_start(self) -> None:
        self.pbar = tqdm(total=int(self.locals["total_timesteps"]))
        self._start = self.model.num_timesteps

    def _on_step(self) -> bool:
        self.pbar.n = min(self.num_timesteps - self._start, self.pbar.total)
        self.pbar.refresh()
        return True

    def _on_training_end(self) -> None:
        self.pbar.refresh()
        self.pbar.close()
