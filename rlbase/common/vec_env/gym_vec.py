"""DummyVecEnv and SubprocVecEnv: the Baselines API over ``gymnasium.vector``."""

from __future__ import annotations

import multiprocessing
import signal
import sys
import time
from typing import Any, Callable, Sequence, SupportsFloat, cast

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from rlbase.common.checks import observation_shape_error
from rlbase.common.errors import RLBaseError
from rlbase.common.signals import ignore_stop_signals
from rlbase.common.vec_env.base import Indices, VecEnv, VecStepResult
from rlbase.common.vec_env.reset_rng import ResetNotes


class GymVecEnv(VecEnv):
    """Adapts a gymnasium vector env (same-step autoreset) to the Baselines VecEnv API."""

    def __init__(self, vector_env: SyncVectorEnv | AsyncVectorEnv):
        self.vector_env = vector_env
        super().__init__(vector_env.num_envs, vector_env.single_observation_space,
                         vector_env.single_action_space)
        self._seeds: list[int] | None = None
        self._actions: np.ndarray | None = None

    def seed(self, seed: int | Sequence[int] | None = None) -> None:
        if seed is None:
            self._seeds = None
        elif isinstance(seed, (int, np.integer)):
            self._seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            self._seeds = [int(s) for s in seed]

    def reset(self) -> np.ndarray:
        # gymnasium takes one seed per env as a list (its stub says int).
        obs, _ = self.vector_env.reset(seed=self._seeds)  # type: ignore[arg-type]
        self._seeds = None  # seed once; later resets continue the envs' own RNG streams
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecStepResult:
        obs, rewards, terminated, truncated, info = self.vector_env.step(self._actions)
        return obs, rewards, terminated, truncated, self._split_info(info)

    def _split_info(self, info: dict[str, Any]) -> list[dict[str, Any]]:
        """gymnasium's dict of arrays (with ``_key`` masks) -> one dict per env."""
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if not info:
            return infos
        final_obs_mask = info.get("_final_obs")
        final_info = info.get("final_info")
        for key, value in info.items():
            if key.startswith("_") or key in ("final_obs", "final_info"):
                continue
            mask = info.get("_" + key)
            for i in range(self.num_envs):
                if mask is None or mask[i]:
                    # Nested dicts hold their own masks: split them the same way.
                    infos[i][key] = _split_info_one(value, i) if isinstance(value, dict) \
                        else value[i]
        if final_obs_mask is not None:
            for i in np.flatnonzero(final_obs_mask).tolist():
                if final_info:
                    infos[i].update(_split_info_one(final_info, i))
                infos[i]["final_observation"] = info["final_obs"][i]
        return infos

    def close(self) -> None:
        self.vector_env.close()

    def render(self) -> np.ndarray | None:
        frames = self.vector_env.render()
        return None if frames is None else np.asarray(frames[0])

    @property
    def render_fps(self) -> float | None:
        return (self.vector_env.metadata or {}).get("render_fps")

    def reset_notes(self) -> list[dict[str, Any] | None]:
        """How each env's last reset can be repeated (see ResetNotes): what a checkpoint keeps
        so a resumed run draws the first observations the uninterrupted one drew."""
        return list(self.vector_env.get_attr("last_reset"))

    def replay_resets(self, notes: list[dict[str, Any] | None]) -> None:
        """The next reset repeats each env's noted reset instead of seeding it again (a note
        of None: that env's reset draws on from its own state)."""
        self.vector_env.set_attr("replay_reset", list(notes))
        self._seeds = None

    def env_method(self, name: str, *args: Any, indices: Indices = None,
                   **kwargs: Any) -> list[Any]:
        return self._pick(self.vector_env.call(name, *args, **kwargs), indices)

    def get_attr(self, name: str, indices: Indices = None) -> list[Any]:
        return self._pick(self.vector_env.get_attr(name), indices)

    def set_attr(self, name: str, value: Any, indices: Indices = None) -> None:
        if indices is None:
            self.vector_env.set_attr(name, [value] * self.num_envs)
            return
        values = list(self.vector_env.get_attr(name))  # the others keep theirs
        for i in self._indices(indices):
            values[i] = value
        self.vector_env.set_attr(name, values)

    def env_is_wrapped(self, wrapper_class: type, indices: Indices = None) -> list[bool]:
        # Each env's ResetNotes answers (in its worker process for a SubprocVecEnv).
        return self._pick(self.vector_env.call("rlbase_is_wrapped", wrapper_class), indices)

    def _indices(self, indices: Indices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        chosen = [int(indices)] if isinstance(indices, (int, np.integer)) else \
            [int(i) for i in indices]
        bad = [i for i in chosen if not -self.num_envs <= i < self.num_envs]
        if bad:
            raise RLBaseError(f"env index {bad[0]} out of range for {self.num_envs} envs")
        return chosen

    def _pick(self, values: Sequence[Any], indices: Indices) -> list[Any]:
        return [values[i] for i in self._indices(indices)]


def _split_info_one(info: dict[str, Any], i: int) -> dict[str, Any]:
    out = {}
    for key, value in info.items():
        if key.startswith("_"):
            continue
        mask = info.get("_" + key)
        if mask is None or mask[i]:
            out[key] = _split_info_one(value, i) if isinstance(value, dict) else value[i]
    return out


class DummyVecEnv(GymVecEnv):
    """Steps every env in this process, one after the other (``gymnasium.vector.SyncVectorEnv``)."""

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]]):
        self._sync = SyncVectorEnv([_with_notes(fn) for fn in env_fns],
                                   autoreset_mode=AutoresetMode.SAME_STEP)
        envs = self.envs
        if len({id(env.unwrapped) for env in envs}) < len(envs):
            self._sync.close()
            raise RLBaseError("the env functions given to DummyVecEnv return the same env "
                              "object more than once; each must make a new env (lambda: "
                              "gym.make(...), not lambda: env)")
        super().__init__(self._sync)
        self._episode_steps = np.zeros(self.num_envs, np.int64)

    @property
    def envs(self) -> list[gym.Env]:
        """The envs the env functions made (each runs under a transparent ResetNotes)."""
        return [cast(ResetNotes, env).env for env in self._sync.envs]

    def reset(self) -> np.ndarray:
        self._episode_steps[:] = 0
        try:
            return super().reset()
        except ValueError as exc:  # numpy's 'Output array is the wrong shape' names no env
            raise self._shape_error() or exc from exc

    def step_wait(self) -> VecStepResult:
        self._episode_steps += 1
        try:
            obs, rewards, terminated, truncated, infos = super().step_wait()
        except ValueError as exc:
            raise self._shape_error() or exc from exc
        self._episode_steps[terminated | truncated] = 0
        return obs, rewards, terminated, truncated, infos

    def _shape_error(self) -> RLBaseError | None:
        """After gymnasium failed to stack the observations: the first env whose observation
        does not have its space's shape (checked only then, so stepping costs nothing)."""
        shape = self.observation_space.shape
        if shape is None:  # Dict / Tuple spaces: no single shape to compare
            return None
        observations: list[Any] = list(self._sync._env_obs)  # the obs each env returned
        for i, obs in enumerate(observations):
            if np.shape(obs) != shape:
                return observation_shape_error(self._sync.envs[i], i,
                                               int(self._episode_steps[i]), obs, shape)
        return None


class EnvWorkerError(RuntimeError):
    """An env worker process raised or died; the message names the env index and the cause."""


class SubprocVecEnv(GymVecEnv):
    """Steps each env in its own process (``gymnasium.vector.AsyncVectorEnv``).

    When a worker's env raises, or the worker dies, the call raises :class:`EnvWorkerError`
    naming the env index and the worker's exception (or exit status), and every worker is
    stopped at once: no hang, no orphaned processes. Workers ignore SIGINT and SIGTERM (the
    main process handles them, then stops the workers) and, on Linux, die with the main process
    even if it is SIGKILLed.

    timeout: seconds to wait for the workers' answer to a step or reset (None: forever); a
        worker stuck longer is reported as hung.
    start_method: the multiprocessing start method ('fork', 'spawn', 'forkserver'; None:
        the platform's default); ``context`` is the same setting under gymnasium's name.
    in_series: Baselines' envs per process. Accepted so Baselines code runs; gymnasium's
        AsyncVectorEnv runs one process per env, so it only has to divide the number of envs
        (for fewer processes, use fewer envs or DummyVecEnv).
    Observations cross from the workers through shared memory, so this is also Baselines'
    ``ShmemVecEnv``.
    """

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], context: str | None = None,
                 timeout: float | None = None, in_series: int = 1,
                 start_method: str | None = None):
        if context is not None and start_method is not None and context != start_method:
            raise RLBaseError(f"SubprocVecEnv got context={context!r} and start_method="
                              f"{start_method!r}: they are one setting, give one")
        context = context or start_method
        if isinstance(in_series, bool) or not isinstance(in_series, int) or in_series < 1 \
                or len(env_fns) % in_series:
            raise RLBaseError(f"in_series={in_series!r} must be a positive integer dividing the "
                              f"number of envs ({len(env_fns)})")
        self.timeout = timeout
        fns = [_WorkerEnvFn(fn, i) for i, fn in enumerate(env_fns)]
        try:
            vector_env = AsyncVectorEnv(fns, context=context,
                                        autoreset_mode=AutoresetMode.SAME_STEP)
        except (EOFError, OSError) as exc:  # a worker died while building its env
            raise EnvWorkerError("an env worker died while creating its env (its traceback is "
                                 f"printed above): {type(exc).__name__}: {exc}") from exc
        for process in vector_env.processes:
            # Workers ignore SIGTERM: gymnasium's forced close (a timeout, garbage collection)
            # must SIGKILL them, or it would wait for them forever.
            process.terminate = process.kill  # type: ignore[method-assign]
        self._async = vector_env
        super().__init__(vector_env)

    def reset(self) -> np.ndarray:
        try:
            self._async.reset_async(seed=self._seeds)  # type: ignore[arg-type]  # one per env
            obs, _ = self._async.reset_wait(timeout=self.timeout)
        except Exception as exc:  # noqa: BLE001 - any worker failure is reported the same way
            raise self._fault("reset", exc) from exc
        self._seeds = None
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        try:
            self._async.step_async(actions)
        except Exception as exc:  # noqa: BLE001
            raise self._fault("step", exc) from exc

    def step_wait(self) -> VecStepResult:
        try:
            obs, rewards, terminated, truncated, info = self._async.step_wait(
                timeout=self.timeout)
        except Exception as exc:  # noqa: BLE001
            raise self._fault("step", exc) from exc
        return obs, rewards, terminated, truncated, self._split_info(info)

    def env_method(self, name: str, *args: Any, indices: Indices = None,
                   **kwargs: Any) -> list[Any]:
        """With ``indices``, only those envs' workers run the method (gymnasium's ``call``
        runs it in every worker): HER's compute_reward on env 0 runs once per minibatch."""
        if indices is None:
            return super().env_method(name, *args, **kwargs)
        chosen = self._indices(indices)
        venv = self._async
        try:
            venv._assert_is_running()
            for i in chosen:  # the message gymnasium's call_async sends, to these workers only
                venv.parent_pipes[i].send(("_call", (name, args, kwargs)))
            results, successes = zip(*[venv.parent_pipes[i].recv() for i in chosen])
            venv._raise_if_errors(successes)
        except Exception as exc:  # noqa: BLE001
            raise self._fault(name, exc) from exc
        return list(results)

    def _fault(self, call: str, exc: BaseException) -> EnvWorkerError | RLBaseError:
        """Describe which worker failed and why, then stop every worker."""
        venv = self._async
        if isinstance(exc, multiprocessing.TimeoutError):
            message = f"env workers did not answer {call} within {self.timeout} s (hung)"
        else:
            # gymnasium drops the pipe of a worker whose env raised; a dead one has exited.
            raised = [i for i, pipe in enumerate(venv.parent_pipes) if pipe is None]
            deadline = time.monotonic() + 2.0
            dead: list[tuple[int, int | None]] = []
            while not raised and not dead and time.monotonic() < deadline:
                dead = [(i, p.exitcode) for i, p in enumerate(venv.processes)
                        if not p.is_alive()]
                time.sleep(0.01)
            if raised:
                # gymnasium re-raises ``type(e)(e)``: the worker's own exception is args[0].
                cause = exc.args[0] if exc.args and isinstance(exc.args[0], BaseException) \
                    else exc
                if isinstance(cause, RLBaseError):  # the env broke a rule: one line says which
                    self._shutdown()
                    return cause
                message = (f"env {raised[0]} raised {type(cause).__name__}: {cause} during "
                           f"{call} (in its SubprocVecEnv worker; traceback above)")
            elif dead:
                i, code = dead[0]
                how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
                message = f"the worker process of env {i} died ({how}) during {call}"
            else:
                message = f"an env worker failed during {call}: {type(exc).__name__}: {exc}"
        self._shutdown()
        return EnvWorkerError(message)

    def _shutdown(self) -> None:
        """Terminate every worker and close the pipes (gymnasium's close would wait on the
        pending call of a worker that is gone)."""
        venv = self._async
        for p in venv.processes:
            if p.is_alive():
                p.kill()  # workers ignore SIGTERM
        for p in venv.processes:
            p.join(timeout=2.0)
        for pipe in venv.parent_pipes:
            if pipe is not None:
                pipe.close()
        venv.closed = True

    def close(self) -> None:
        if not self.vector_env.closed:
            try:
                self.vector_env.close(timeout=self.timeout)
            except Exception:  # noqa: BLE001 - a broken worker must not make close() hang
                self._shutdown()


class _ShapeCheck(gym.Wrapper):
    """In a SubprocVecEnv worker: an observation whose shape is not its space's is named (env,
    step, both shapes) before gymnasium's copy into shared memory fails without saying which."""

    def __init__(self, env: gym.Env, index: int):
        super().__init__(env)
        self.index, self.steps, self.shape = index, 0, env.observation_space.shape

    @property
    def spec(self) -> Any:  # type: ignore[override]  # read-only here, on purpose
        """The wrapped env's: a transparent check, not part of what ``gym.make(spec)``
        re-makes (ES re-makes a SubprocVecEnv's envs from their specs)."""
        return self.env.spec

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self.steps = 0
        obs, info = self.env.reset(**kwargs)
        self._check(obs)
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        self.steps += 1
        result = self.env.step(action)
        self._check(result[0])
        return result

    def _check(self, obs: Any) -> None:
        if self.shape is not None and np.shape(obs) != self.shape:
            raise observation_shape_error(self.env, self.index, self.steps, obs, self.shape)


def _with_notes(fn: Callable[[], gym.Env]) -> Callable[[], gym.Env]:
    return lambda: ResetNotes(fn())


class _WorkerEnvFn:
    """Builds the env inside a worker after making the worker ignore SIGINT and SIGTERM and
    (Linux) die with its parent."""

    def __init__(self, fn: Callable[[], gym.Env], index: int):
        self.fn, self.index = fn, index

    def __call__(self) -> gym.Env:
        if multiprocessing.parent_process() is None:
            # gymnasium also builds env 0 in the main process to read its spaces: the main
            # process keeps its signal handlers and its own parent's lifetime.
            return _ShapeCheck(ResetNotes(self.fn()), self.index)
        ignore_stop_signals()
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # DEATHSIG
            except (OSError, AttributeError):
                pass
        return _ShapeCheck(ResetNotes(self.fn()), self.index)


ShmemVecEnv = SubprocVecEnv  # Baselines' name: rlbase's SubprocVecEnv already uses shared memory
