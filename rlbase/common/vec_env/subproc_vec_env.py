"""SubprocVecEnv: each env in its own worker process (``gymnasium.vector.AsyncVectorEnv``),
with worker failures, hangs and stop requests reported in one line."""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import multiprocessing.connection
import signal
import sys
import time
from typing import Any, Callable, Iterator, Sequence, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode
from gymnasium.vector.async_vector_env import AsyncState

from rlbase.common.envs.checks import observation_shape_error
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.signals import EnvWaitInterrupted, ignore_stop_signals, wait_or_stop
from rlbase.common.vec_env.base import Indices, VecStepResult
from rlbase.common.vec_env.gym_vec import GymVecEnv
from rlbase.common.vec_env.reset_rng import ResetNotes
from rlbase.common.vec_env.worker_limits import (
    CLOSE_WAIT_S,
    ENV_TIMEOUT_VARIABLE,
    check_worker_count,
    env_timeout,
)


class EnvWorkerError(RuntimeError):
    """An env worker process raised, died or hung; the message names the env index and the
    cause."""


class SubprocVecEnv(GymVecEnv):
    """Steps each env in its own process (``gymnasium.vector.AsyncVectorEnv``).

    When a worker's env raises, or the worker dies, the call raises :class:`EnvWorkerError`
    naming the env index and the worker's exception (or exit status), and every worker is
    stopped at once: no hang, no orphaned processes. Workers ignore SIGINT and SIGTERM (the
    main process handles them, then stops the workers) and, on Linux, die with the main process
    even if it is SIGKILLed.

    timeout: seconds to wait for the workers' answer to a step, a reset or a method call
        (None: $RLBASE_ENV_TIMEOUT, else 600; ``math.inf``: forever); a worker stuck longer is
        reported as hung, in one line naming its env, and every worker is stopped. A stop
        request (SIGINT/SIGTERM) is answered within seconds even while a worker hangs: see
        :class:`~rlbase.common.loops.signals.EnvWaitInterrupted`.
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
        check_worker_count(len(env_fns))
        self.timeout = env_timeout(timeout)
        fns = [_WorkerEnvFn(fn, i) for i, fn in enumerate(env_fns)]
        before = set(multiprocessing.active_children())
        try:
            vector_env = AsyncVectorEnv(fns, context=context,
                                        autoreset_mode=AutoresetMode.SAME_STEP)
        except BaseException as exc:
            # Workers ignore SIGTERM: those started here are killed, or the interpreter's exit
            # would wait for them (one still building its env never ends by itself).
            for process in set(multiprocessing.active_children()) - before:
                process.kill()
            if isinstance(exc, (EOFError, OSError)):  # a worker died while building its env
                raise EnvWorkerError("an env worker died while creating its env (its traceback "
                                     f"is printed above): {type(exc).__name__}: {exc}") from exc
            raise
        for process in vector_env.processes:
            # Workers ignore SIGTERM: gymnasium's forced close (a timeout, garbage collection)
            # must SIGKILL them, or it would wait for them forever.
            process.terminate = process.kill  # type: ignore[method-assign]
        self._async = vector_env
        self.env_id: str | None = fns[0].env_id  # env 0 was built here to read its spaces
        super().__init__(vector_env)

    @contextlib.contextmanager
    def _reported(self, call: str) -> Iterator[None]:
        """Any failure of a worker during ``call`` raises what :meth:`_fault` makes of it."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - any worker failure is reported the same way
            raise self._fault(call, exc) from exc

    def reset(self) -> np.ndarray:
        with self._reported("reset"):
            self._async.reset_async(seed=self._seeds)  # type: ignore[arg-type]  # one per env
        self._await("reset", AsyncState.WAITING_RESET)
        with self._reported("reset"):
            obs, info = self._async.reset_wait()
        self._seeds = None
        self._note_reset_infos(info)
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        with self._reported("step"):
            self._async.step_async(actions)

    def step_wait(self) -> VecStepResult:
        self._await("step", AsyncState.WAITING_STEP)
        with self._reported("step"):
            obs, rewards, terminated, truncated, info = self._async.step_wait()
        return obs, rewards, terminated, truncated, self._split_info(info)

    def _call_all(self, name: str, *args: Any, **kwargs: Any) -> Sequence[Any]:
        with self._reported(name):
            self._async.call_async(name, *args, **kwargs)
        self._await(name, AsyncState.WAITING_CALL)
        with self._reported(name):
            return self._async.call_wait()

    def _set_all(self, name: str, values: list[Any]) -> None:
        """gymnasium's set_attr, with the answers awaited like a step's (its own wait has no
        timeout: a hung worker would hang the caller)."""
        venv = self._async
        with self._reported(f"set_attr({name!r})"):
            venv._assert_is_running()
            if venv._state != AsyncState.DEFAULT:
                raise RuntimeError(f"set_attr while a call to {venv._state.value} is pending")
            if len(values) != self.num_envs:
                raise ValueError(f"set_attr needs one value per env ({self.num_envs}), got "
                                 f"{len(values)}")
            for pipe, value in zip(venv.parent_pipes, values):
                pipe.send(("_setattr", (name, value)))
        self._await(f"set_attr({name!r})", venv._state,
                    {pipe: i for i, pipe in enumerate(venv.parent_pipes)})
        with self._reported(f"set_attr({name!r})"):
            _, successes = zip(*[pipe.recv() for pipe in venv.parent_pipes])
            venv._raise_if_errors(successes)

    def _await(self, call: str, state: AsyncState,
               pipes: dict[Any, int] | None = None) -> None:
        """Wait until every worker's answer to ``call`` is in its pipe (gymnasium's own wait
        then reads them without blocking), polling for a stop request meanwhile.

        gymnasium's ``step_wait(timeout=...)`` cannot be polled: on a timeout it forgets the
        pending call, and the next wait raises NoAsyncCallError. So the pipes are watched here
        with ``multiprocessing.connection.wait``. Workers silent past ``self.timeout`` raise an
        EnvWorkerError naming the first of them; workers silent ``STOP_GRACE_S`` after a stop
        request raise EnvWaitInterrupted. Either way every worker is killed first.
        """
        if pipes is None:
            if self._async.closed or self._async._state != state:
                return  # nothing pending: gymnasium's wait raises its own error
            pipes = self._live_pipes()
        pending = dict(pipes)

        def ready(wait_s: float) -> bool:
            for conn in multiprocessing.connection.wait(list(pending), timeout=wait_s):
                pending.pop(conn, None)
            return not pending

        outcome = wait_or_stop(ready, self.timeout)
        if outcome is None:
            return
        silent = sorted(pending.values())
        self._shutdown()
        if outcome == "stop":
            message = (f"{self._name_envs(silent)} still busy with {call} when asked to stop: "
                       "killed every env worker")
            print(f"rlbase: {message}", file=sys.stderr, flush=True)
            raise EnvWaitInterrupted(message)
        raise EnvWorkerError(f"{self._name_envs(silent)} did not answer {call} within "
                             f"{self.timeout} s (hung): every env worker was stopped; a slower "
                             f"env needs a longer timeout (${ENV_TIMEOUT_VARIABLE} or "
                             "SubprocVecEnv(timeout=...), in seconds)")

    def _name_envs(self, indices: list[int]) -> str:
        """'env 1 (CartPole-v1, worker PID 4321)', or 'envs 0, 1 (CartPole-v1)'."""
        what = [self.env_id] if self.env_id else []
        if len(indices) == 1:
            pid = self._async.processes[indices[0]].pid
            return f"env {indices[0]} ({', '.join([*what, f'worker PID {pid}'])})"
        listed = ", ".join(map(str, indices[:8])) + (", ..." if len(indices) > 8 else "")
        return f"envs {listed}" + (f" ({what[0]})" if what else "")

    def reset_notes(self) -> list[dict[str, Any] | None]:
        """As GymVecEnv's; after the workers were stopped (a hang, a stop request), no note:
        a checkpoint written then still holds the rest, and its resumed envs reset anew."""
        if self._async.closed:
            return [None] * self.num_envs
        return super().reset_notes()

    def env_method(self, name: str, *args: Any, indices: Indices = None,
                   **kwargs: Any) -> list[Any]:
        """With ``indices``, only those envs' workers run the method (gymnasium's ``call``
        runs it in every worker): HER's compute_reward on env 0 runs once per minibatch."""
        if indices is None:
            return super().env_method(name, *args, **kwargs)
        chosen = self._indices(indices)
        venv = self._async
        with self._reported(name):
            venv._assert_is_running()
            for i in chosen:  # the message gymnasium's call_async sends, to these workers only
                venv.parent_pipes[i].send(("_call", (name, args, kwargs)))
        self._await(name, venv._state, {venv.parent_pipes[i]: i for i in chosen})
        with self._reported(name):
            results, successes = zip(*[venv.parent_pipes[i].recv() for i in chosen])
            venv._raise_if_errors(successes)
        return list(results)

    def _fault(self, call: str, exc: BaseException) -> EnvWorkerError | RLBaseError:
        """Describe which worker failed and why, then stop every worker."""
        venv = self._async
        if isinstance(exc, multiprocessing.TimeoutError):  # (waits go through _await now)
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
        """Close every env in its worker; workers that do not answer within CLOSE_WAIT_S
        (a pending call, or the env's close) are killed instead of waited on."""
        venv = self._async
        if venv.closed:
            return
        try:
            if venv._state != AsyncState.DEFAULT:  # a call was left pending: read its answer
                if not self._answered(CLOSE_WAIT_S):
                    self._shutdown()
                    return
                getattr(venv, f"{venv._state.value}_wait")()
            for pipe in self._live_pipes():
                pipe.send(("close", None))
            if not self._answered(CLOSE_WAIT_S):
                self._shutdown()
                return
            for pipe in self._live_pipes():
                pipe.recv()
            end = time.monotonic() + CLOSE_WAIT_S  # each worker closes its env after answering
            for process in venv.processes:
                process.join(timeout=max(0.0, end - time.monotonic()))
        except Exception:  # noqa: BLE001 - a broken worker must not make close() hang or fail
            pass
        self._shutdown()  # kills only the workers still alive

    def _answered(self, timeout: float) -> bool:
        """Whether every live worker's pipe has its answer within ``timeout`` seconds."""
        pending = list(self._live_pipes())
        end = time.monotonic() + timeout
        while pending:
            left = end - time.monotonic()
            if left <= 0:
                return False
            ready = multiprocessing.connection.wait(pending, timeout=left)
            pending = [p for p in pending if p not in ready]
        return True

    def _live_pipes(self) -> dict[Any, int]:
        """The pipes of the workers still answering, each to its env index."""
        return {pipe: i for i, pipe in enumerate(self._async.parent_pipes)
                if pipe is not None and not pipe.closed}


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


class _WorkerEnvFn:
    """Builds the env inside a worker after making the worker ignore SIGINT and SIGTERM and
    (Linux) die with its parent."""

    def __init__(self, fn: Callable[[], gym.Env], index: int):
        self.fn, self.index = fn, index
        self.env_id: str | None = None  # read from the env built in the main process

    def __call__(self) -> gym.Env:
        if multiprocessing.parent_process() is None:
            # gymnasium also builds env 0 in the main process to read its spaces: the main
            # process keeps its signal handlers and its own parent's lifetime.
            env = self.fn()
            self.env_id = env.spec.id if env.spec is not None else type(env.unwrapped).__name__
            return _ShapeCheck(ResetNotes(env), self.index)
        ignore_stop_signals()
        if sys.platform.startswith("linux"):
            try:
                ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # DEATHSIG
            except (OSError, AttributeError):
                pass
        return _ShapeCheck(ResetNotes(self.fn()), self.index)


ShmemVecEnv = SubprocVecEnv  # Baselines' name: rlbase's SubprocVecEnv already uses shared memory
