"""rlib's ``BaseAlgorithm`` (train, test, save, load, save_plots, save_videos) over rlbase's
model classes: each rlib algorithm maps its parameters onto one class of :mod:`rlbase.compat.sb3`
and trains it with that class's ``learn()``; testing, saving models at the testing iterations
and stopping at ``stop_max_score`` run in the loop's callback."""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import types
from numbers import Real
from typing import Any, Callable, ClassVar

import gymnasium as gym
import numpy as np

from rlbase.common.display import has_display
from rlbase.common.errors import RLBaseError
from rlbase.common.io.serialization import load_file
from rlbase.common.logs.curves import run_title
from rlbase.common.loops.training_loop import crossings
from rlbase.common.vec_env import VecEnv, VecMonitor, VecVideoRecorder, find_wrapper
from rlbase.compat.rlib.envs import EnvSpec
from rlbase.compat.rlib.episode_log import EpisodeRecorder
from rlbase.compat.rlib.records import git_state, jsonable, plot_curves, write_json
from rlbase.compat.sb3.base_class import BaseRLModel

# learn()'s budget when training stops on an episode or generation count (the callback stops
# it; the algorithms' loops count env steps).
UNBOUNDED = 2 ** 62


def arguments(local: dict[str, Any]) -> dict[str, Any]:
    """A constructor's arguments from its ``locals()`` (what hyperparameters.json and a saved
    model record, and what load() rebuilds the algorithm from)."""
    return {k: v for k, v in local.items() if k not in ("self", "__class__")}


def positive_int(owner: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise RLBaseError(f"{owner}: {name} must be a positive integer, got {value!r}")
    return int(value)


class class_or_instance_method:
    """A method that works on the class and on an instance: rlib.md's ``Algo.load(path)``
    makes a new algorithm (an instance made here, then rebuilt by the method), and
    ``algo.load(path)`` rebuilds that one, as rlib's own instance method does."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn

    def __get__(self, obj: Any, owner: type) -> Callable[..., Any]:
        return types.MethodType(self.fn, object.__new__(owner) if obj is None else obj)


def network(owner: str, name: str, kwargs: Any) -> dict[str, Any]:
    """rlib's agent kwargs (``hidden_sizes``, ``activation``) as rlbase's mlp arguments."""
    if not isinstance(kwargs, dict) or "hidden_sizes" not in kwargs:
        raise RLBaseError(f"{owner}: {name} must be a dict with hidden_sizes (and optionally "
                          f"activation), e.g. {{'hidden_sizes': [64, 64]}}; got {kwargs!r}")
    unknown = sorted(set(kwargs) - {"hidden_sizes", "activation"})
    if unknown:
        raise RLBaseError(f"{owner}: {name} has {unknown}; rlbase's networks take hidden_sizes "
                          "and activation (inputs and outputs come from the env)")
    activation = kwargs.get("activation", "relu")
    if activation not in ("relu", "tanh", "sigmoid"):
        raise RLBaseError(f"{owner}: {name}['activation'] must be 'relu', 'tanh' or 'sigmoid', "
                          f"got {activation!r}")
    sizes = kwargs["hidden_sizes"]
    if not isinstance(sizes, (list, tuple)) or not all(
            isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n > 0 for n in sizes):
        raise RLBaseError(f"{owner}: {name}['hidden_sizes'] must be a list of positive "
                          f"integers, got {sizes!r}")
    return {"layer_sizes": [int(n) for n in sizes], "activation": activation}


def run_folder(save_folder: str) -> str:
    """``<save_folder>/run_<n>``, n the number of folders already there (rlib's numbering)."""
    if not isinstance(save_folder, (str, os.PathLike)):
        raise RLBaseError(f"save_folder must be a path, got {save_folder!r}")
    save_folder = os.fspath(save_folder)
    runs = sum(os.path.isdir(os.path.join(save_folder, f)) for f in os.listdir(save_folder)) \
        if os.path.isdir(save_folder) else 0
    return os.path.join(save_folder, f"run_{runs}")


class BaseAlgorithm:
    """What every rlib algorithm shares.

    A run's folder is ``<save_folder>/run_<n>`` with ``models/`` (``iter_<i>.zip`` at every
    testing iteration, ``iter_0.zip`` before training; rlbase model files), ``plots/``,
    ``videos/``, ``hyperparameters.json`` (rlib's arguments and the rlbase settings they
    became) and ``git.json`` (commit and dirty flag of the working directory's repository).
    Iterations count :attr:`unit`; ``test_every`` counts them too.
    """

    #: the rlbase class trained
    api_class: ClassVar[type[BaseRLModel]]
    #: what one iteration is (rlib's unit of test_every and of the models' names)
    unit: ClassVar[str] = "episodes"
    #: an iteration holds many episodes (ES): plots draw each iteration's mean and spread
    many_episodes_per_iteration: ClassVar[bool] = False
    #: also keep models/best.zip, the model with the best test score so far
    keeps_best: ClassVar[bool] = False
    #: test (and record) before training too
    test_at_start: ClassVar[bool] = False
    # Declared (set by a tuple assignment): the package's modules import one another, and mypy
    # needs the types of the attributes set in __init__ (annotated there).
    action_space: gym.Space
    episode_cap: int | None

    def __init__(self, kwargs: dict[str, Any], spec: EnvSpec, *, num_envs: int,
                 save_folder: str, seed: int | None, test_every: int, num_test_episodes: int,
                 budget: int, stop_max_score: bool = False, verbose: bool = True):
        name = type(self).__name__
        self.kwargs = kwargs
        self.spec = spec
        self.num_envs = positive_int(name, "num_envs", num_envs)
        self.test_every = positive_int(name, "test_every", test_every)
        self.num_test_episodes = positive_int(name, "num_test_episodes", num_test_episodes)
        self.budget = positive_int(name, f"its budget of {self.unit}", budget)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise RLBaseError(f"{name}: seed must be an integer, got {seed!r}")
        self.seed = seed
        if not isinstance(spec.max_total_reward, Real):
            raise RLBaseError(f"{name}: max_total_reward must be a number (-1: no limit), got "
                              f"{spec.max_total_reward!r}")
        self.max_episode_length = spec.max_episode_length
        self.max_total_reward: float = spec.max_total_reward
        if stop_max_score and spec.max_total_reward == -1:
            raise RLBaseError(f"{name}: stop_max_score=True stops once every test episode "
                              "reaches max_total_reward; give max_total_reward")
        self.stop_max_score: bool = bool(stop_max_score)
        self.verbose: bool = bool(verbose)
        self.obs_space, self.action_space, self.episode_cap = spec.spaces()
        self.save_folder: str = run_folder(save_folder)
        self.models_folder: str = os.path.join(self.save_folder, "models")
        self.plots_folder: str = os.path.join(self.save_folder, "plots")
        self.videos_folder: str = os.path.join(self.save_folder, "videos")
        self.current_iteration: int = 0
        self.train_episodes: list[list[float]] = []  # [env steps at its end, return, length]
        self.train_iterations: list[int] = []  # the iteration each training episode ended in
        self.test_scores: list[list[float]] = []  # [iteration, mean, std]
        self.best_test_reward: float = -math.inf
        self._call_start: int = 0  # current_iteration when that call began
        self._target: int = 0
        self.current_agent: BaseRLModel | None = None

    # -- the rlbase model ---------------------------------------------------------------------
    def _build(self, policy: str | None, policy_kwargs: dict[str, Any] | None,
               hyperparameters: dict[str, Any]) -> None:
        """Build the rlbase model (its config checks every mapped value)."""
        # A model file holds JSON values only: load() gives the schedules again.
        self._functions = {k: v for k, v in hyperparameters.items() if callable(v)}
        self.current_agent = self.api_class(
            policy, self.spec.vec_env(self.num_envs, self.seed), policy_kwargs=policy_kwargs,
            seed=self.seed, **hyperparameters)

    def make_env(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: rlib's make_env returns gymnasium vector envs with its wrappers, which
        rlbase does not train on."""
        raise RLBaseError("make_env is not available: rlbase.compat.rlib trains on rlbase VecEnvs; "
                          "use algorithm.spec.vec_env(num_envs, seed, render_mode) or "
                          "gymnasium.make(**env_kwargs)")

    @property
    def mean_test_rewards(self) -> list[float]:
        """The mean return of each test so far."""
        return [row[1] for row in self.test_scores]

    @property
    def std_test_rewards(self) -> list[float]:
        """The std of the returns of each test so far."""
        return [row[2] for row in self.test_scores]

    @property
    def train_rewards(self) -> list[float]:
        """The return of each training episode so far."""
        return [row[1] for row in self.train_episodes]

    @property
    def _recorder(self) -> EpisodeRecorder:
        """The training env's monitor, which records every training episode."""
        env = self.model.env
        found = None if env is None else find_wrapper(env, EpisodeRecorder)
        if not isinstance(found, EpisodeRecorder):
            raise RLBaseError(f"{type(self).__name__}'s training env has no EpisodeRecorder: "
                              "build it with spec.vec_env(num_envs, seed)")
        return found

    @property
    def model(self) -> BaseRLModel:
        """The rlbase model class instance being trained (rlib's current agent)."""
        if self.current_agent is None:
            raise RLBaseError(f"{type(self).__name__} has no model yet")
        return self.current_agent

    # -- training -----------------------------------------------------------------------------
    def train(self) -> None:
        """Train for the budget (more iterations after a previous train() or load()), testing
        every ``test_every`` iterations and at the end."""
        for folder in (self.models_folder, self.plots_folder, self.videos_folder):
            os.makedirs(folder, exist_ok=True)
        agent = self.model
        inner = agent.model
        write_json(os.path.join(self.save_folder, "hyperparameters.json"), {
            "algorithm": type(self).__name__, "rlib": self.kwargs,
            "rlbase": {"class": type(agent).__name__, "policy_kwargs": agent.policy_kwargs,
                       "config": inner.config.to_dict() if inner is not None else {}}})
        write_json(os.path.join(self.save_folder, "git.json"), git_state())
        if self.verbose:
            print(f"Training {type(self).__name__}; results in {self.save_folder}")
        self.save(self._model_path(f"iter_{self.current_iteration}"))
        if self.test_at_start and not self.test_scores:
            self._test_and_save()
        self._target = self.current_iteration + self.budget
        self._run()

    def _run(self) -> None:
        """Train up to ``self._target`` iterations (one learn() call by default)."""
        self._learn(self._target - self.current_iteration)

    def _learn(self, iterations: int) -> None:
        """One learn() call of up to ``iterations`` iterations (stopped by the callback)."""
        self._call_start = self.current_iteration
        self._recorder.steps = int(self.model.num_timesteps)
        steps = iterations if self.unit == "env steps" else UNBOUNDED
        self.model.learn(steps, callback=self._callback, reset_num_timesteps=False)

    def _iteration(self, info: dict[str, Any]) -> int:
        """The iteration count after the loop iteration ``info`` reports."""
        if self.unit == "env steps":
            return int(info["num_timesteps"])
        if self.unit == "generations":
            return self._call_start + int(info["iteration"])
        return self._call_start + int(info["episodes"])

    def _callback(self, agent: Any, info: dict[str, Any]) -> bool:
        """After each loop iteration: record finished episodes, test and save at the testing
        iterations; False stops training."""
        previous = self.current_iteration
        self.current_iteration = self._iteration(info)
        finished = self._recorder.drain()
        self.train_episodes.extend(finished)
        self.train_iterations.extend([self.current_iteration] * len(finished))
        if self.current_iteration != previous:
            self._after_iterations(self.current_iteration - previous)
        done = self.current_iteration >= self._target
        due = crossings(self.current_iteration, self.current_iteration - previous,
                        self.test_every) > 0
        tested = bool(self.test_scores) and self.test_scores[-1][0] == self.current_iteration
        if (due or done) and not tested and self._test_and_save():
            return False
        return not done

    def _after_iterations(self, count: int) -> None:
        """Called when ``count`` more iterations have ended (QLearning decays epsilon here)."""

    def _test_and_save(self) -> bool:
        """Test, record, save ``iter_<i>`` (and ``best``); True when stop_max_score stops."""
        returns = self._play(self.model, self.num_test_episodes)
        mean, std = float(np.mean(returns)), float(np.std(returns))
        self.test_scores.append([float(self.current_iteration), mean, std])
        self.save(self._model_path(f"iter_{self.current_iteration}"))
        if self.keeps_best and mean > self.best_test_reward:
            self.best_test_reward = mean
            self.save(self._model_path("best"))
        if self.verbose:
            print(f"{type(self).__name__}: {self.unit} {self.current_iteration}: test return "
                  f"{mean:.2f} +- {std:.2f}")
        if self.stop_max_score and min(returns) >= self.max_total_reward:
            if self.verbose:
                print(f"Stopping: every test episode reached {self.max_total_reward}")
            return True
        return False

    def _model_path(self, name: str) -> str:
        return os.path.join(self.models_folder, f"{name}.zip")

    # -- testing ------------------------------------------------------------------------------
    def test(self, num_episodes: int = 1, display: bool = False, save_video: bool = False,
             video_path: str | None = None, seed: int | None = None) -> tuple[float, float]:
        """Play ``num_episodes`` greedy episodes; returns the mean and std of their returns
        (the env's own rewards, within max_episode_length and max_total_reward).

        display: render on screen; save_video: record them all into ``video_path`` (mp4);
        seed: the envs' seed (None: a random one).
        """
        returns = self._play(self.model, num_episodes, display, save_video, video_path, seed)
        return float(np.mean(returns)), float(np.std(returns))

    def _play(self, agent: BaseRLModel, num_episodes: int, display: bool = False,
              save_video: bool = False, video_path: str | None = None,
              seed: int | None = None) -> list[float]:
        if isinstance(num_episodes, bool) or not isinstance(num_episodes, (int, np.integer)) \
                or num_episodes <= 0:
            raise RLBaseError(f"num_episodes should be a strictly positive integer, got "
                              f"{num_episodes!r}")
        if display and save_video:
            raise RLBaseError("display and save_video cannot be True at the same time")
        if display and not has_display():  # SDL would crash the process (rc 139), not fail
            raise RLBaseError("test(display=True) needs a display, and DISPLAY / "
                              "WAYLAND_DISPLAY are not set: use test(save_video=True, "
                              "video_path='test.mp4') or save_videos()")
        if save_video and not video_path:
            raise RLBaseError("save_video=True needs a video_path (an .mp4 file)")
        if seed is None:
            seed = int(np.random.randint(0, np.iinfo(np.int32).max))
        render = "human" if display else "rgb_array" if save_video else None
        # Returns read from a monitor below the training normalization (raw rewards).
        venv: VecEnv = VecMonitor(self.spec.vec_env(1, seed, render, training=False))
        recorder, folder = None, None
        if save_video:
            assert video_path is not None
            parent = os.path.dirname(os.path.abspath(video_path))
            os.makedirs(parent, exist_ok=True)
            folder = tempfile.mkdtemp(dir=parent)
            venv = recorder = VecVideoRecorder(venv, folder, lambda step: step == 0,
                                               video_length=2 ** 31)
        env = agent.normalized_like_training(venv)
        returns: list[float] = []
        try:
            obs = env.reset()
            while len(returns) < num_episodes:
                actions, _ = agent.predict(obs, deterministic=True)
                obs, _, _, _, infos = env.step(actions)
                if "episode" in infos[0]:
                    returns.append(float(infos[0]["episode"]["r"]))
        finally:
            env.close()
            if recorder is not None and folder is not None:
                if recorder.video_paths and video_path is not None:
                    os.replace(recorder.video_paths[0], video_path)
                shutil.rmtree(folder, ignore_errors=True)
        return returns

    # -- files --------------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        return {"class": type(self).__name__, "kwargs": self.kwargs,
                "current_iteration": self.current_iteration,
                "train_episodes": self.train_episodes, "test_scores": self.test_scores,
                "train_iterations": self.train_iterations,
                "best_test_reward": self.best_test_reward if math.isfinite(
                    self.best_test_reward) else None,
                "folders": {"save_folder": self.save_folder,
                            "models_folder": self.models_folder,
                            "plots_folder": self.plots_folder,
                            "videos_folder": self.videos_folder}}

    def save(self, path: str) -> None:
        """One rlbase model file (any rlbase path loads it) holding this algorithm's arguments,
        scores and folders too."""
        inner = self.model.model
        if inner is None:
            raise RLBaseError(f"{type(self).__name__} has no model to save")
        inner.save(os.fspath(path), extra_metadata={"rlib": jsonable(self._state())})

    @class_or_instance_method
    def load(self, path: str, verbose: bool = True) -> BaseAlgorithm:
        """Rebuild an algorithm from a file written by :meth:`save` (its arguments, model,
        scores and folders) and return it: ``DeepQLearning.load(path)`` makes a new one,
        ``algorithm.load(path)`` rebuilds that one; ``verbose`` says so in one line."""
        metadata = load_file(os.fspath(path))[0]
        state = metadata.get("rlib")
        if not isinstance(state, dict) or state.get("class") != type(self).__name__:
            found = state.get("class") if isinstance(state, dict) else "no rlib algorithm"
            raise RLBaseError(f"{path} holds {found}, not a {type(self).__name__}")
        type(self).__init__(self, **state["kwargs"])
        self.current_agent = self.api_class.load(
            os.fspath(path), env=self.spec.vec_env(self.num_envs, self.seed), seed=self.seed,
            **self._functions)
        self.current_iteration = int(state["current_iteration"])
        self.train_episodes = [list(map(float, r)) for r in state["train_episodes"]]
        self.test_scores = [list(map(float, r)) for r in state["test_scores"]]
        self.train_iterations = [int(i) for i in state.get("train_iterations", ())]
        best = state.get("best_test_reward")
        self.best_test_reward = -math.inf if best is None else float(best)
        for key, value in state["folders"].items():
            setattr(self, key, value)
        if verbose:
            print(f"Loaded {type(self).__name__} from {path} ({self.unit}: "
                  f"{self.current_iteration})")
        return self

    def save_plots(self) -> list[str]:
        """The training returns and lengths (every episode at the env step it ended at) and the
        test scores as PNGs in plots/, titled with the algorithm, env and seed."""
        name = type(self).__name__
        seed = "" if self.seed is None else f"seed {self.seed}"
        title = run_title([name], [str(self.spec.env_kwargs["id"])], seed)
        return plot_curves(self.plots_folder, self.unit, self.train_episodes, self.test_scores,
                           name=name, title=title, iterations=self.train_iterations,
                           per_iteration=self.many_episodes_per_iteration,
                           test_episodes=self.num_test_episodes)

    def save_videos(self) -> list[str]:
        """A video of one greedy episode of every model in models/ (saved at the testing
        iterations), as videos/<model name>.mp4; existing videos are kept."""
        paths = []
        for name in sorted(os.listdir(self.models_folder)):
            if not name.endswith(".zip"):
                continue
            path = os.path.join(self.videos_folder, name[:-len(".zip")] + ".mp4")
            if not os.path.exists(path):
                # (the schedules given again: a file holds no function)
                agent = self.api_class.load(os.path.join(self.models_folder, name),
                                            **self._functions)
                self._play(agent, 1, save_video=True, video_path=path)
            paths.append(path)
        return paths
