"""Stopping training cleanly on Ctrl-C (SIGINT) and SIGTERM (kill, docker stop, Slurm).

Inside :func:`graceful_interrupt`, the first SIGINT or SIGTERM only sets a flag: learn loops
poll :func:`stop_requested` at their safe points (after an update, between env steps), write a
checkpoint when they have a checkpointer, and return the model as it is. The CLI saves the
model inside the same block and exits with status 130 (both signals). A later signal while the
stop is under way prints one line and is otherwise ignored, so the save it would cut short is
finished (every rlbase learn loop polls the flag; SIGKILL still ends a process at once). Outside
the context (library use without it) the signals behave as Python's default and only
:func:`request_stop` sets the flag.

Under MPI, mpiexec forwards SIGINT and SIGTERM to every rank; the learn loop's ranks agree to
stop after the same iteration and the CLI ends them together (:class:`StopExit`) without
MPI_Abort.

An algorithm adopts it with one line at each safe point::

    if stop_requested(): break

Env worker processes ignore both signals (see :func:`ignore_stop_signals`): a terminal's Ctrl-C
goes to the whole process group, as Slurm's and ``timeout``'s SIGTERM do, and a worker that died
of it would fail the step the main process is about to finish cleanly.

A stop must not wait on workers that never answer (a simulator stuck in a deadlock): while the
main process waits for its env workers, it polls :func:`stop_requested` every
:data:`POLL_INTERVAL_S`; workers still silent :data:`STOP_GRACE_S` after a stop request are
killed and the wait raises :class:`EnvWaitInterrupted`, which the learn loop treats as the stop
request (it saves the model without the envs). Where nothing catches it, it ends the process
like :class:`StopExit` (status 130) with one line saying that the model was not saved.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

INTERRUPTED_EXIT_CODE = 130  # the shell's convention for Ctrl-C (128 + SIGINT); also SIGTERM's
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_state = {"requested": False, "noted": False, "at_once": False}
#: how often a wait for env workers checks for a stop request (seconds)
POLL_INTERVAL_S = 0.1
#: how long workers may still take to answer after a stop request: a healthy step or reset
#: ends well within it, so a run stops at its loop's safe point as usual; only workers that are
#: stuck are killed (seconds)
STOP_GRACE_S = 2.0


class StopExit(SystemExit):
    """The exit after a requested stop was saved: every MPI rank raises it together, so the
    CLI ends the job normally instead of aborting it (which would kill a rank still writing)."""

    def __init__(self) -> None:
        super().__init__(INTERRUPTED_EXIT_CODE)


class EnvWaitInterrupted(StopExit):
    """A wait for env workers cut short by a stop request: the workers did not answer within
    :data:`STOP_GRACE_S` of it and were killed. The learn loop catches it at the env step and
    stops there as on the stop request (no update on the partial rollout; the model and, with
    checkpoints, a checkpoint are saved). Uncaught, it exits with status 130 like StopExit."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def __str__(self) -> str:
        return self.message


def stop_requested() -> bool:
    """True after a SIGINT or SIGTERM inside :func:`graceful_interrupt`."""
    return _state["requested"]


def request_stop() -> None:
    """Ask the running learn loop to stop at its next safe point (what SIGINT does)."""
    _state["requested"] = True


def wait_or_stop(ready: Callable[[float], bool], timeout: float | None) -> str | None:
    """Wait until ``ready(slice)`` (which may block up to ``slice`` seconds) says yes, polling
    for a stop request between slices: None when ready, 'timeout' after ``timeout`` seconds
    (None: no limit), 'stop' when a stop was requested and ``STOP_GRACE_S`` passed since this
    wait saw it. Never leaves a signal unanswered for longer than a slice plus the grace."""
    start = time.monotonic()
    stop_seen: float | None = None
    while True:
        now = time.monotonic()
        if stop_requested():
            stop_seen = now if stop_seen is None else stop_seen
            if now - stop_seen >= STOP_GRACE_S:
                return "stop"
        if timeout is not None and now - start >= timeout:
            return "timeout"
        step = POLL_INTERVAL_S if timeout is None else \
            max(0.0, min(POLL_INTERVAL_S, start + timeout - now))
        if ready(step):
            return None


def clear_stop() -> None:
    _state.update(requested=False, noted=False, at_once=False)


@contextlib.contextmanager
def stop_at_once() -> Iterator[None]:
    """A block with nothing to save yet (the CLI making its envs): a stop request inside it
    ends the process at once (:class:`StopExit`) instead of waiting for a safe point, which an
    env constructor that never returns would never reach."""
    if stop_requested():
        raise StopExit()
    _state["at_once"] = True
    try:
        yield
    finally:
        _state["at_once"] = False


def _handler(signum: int, frame: Any) -> None:
    name = signal.Signals(signum).name
    if _state["at_once"] and not _state["requested"]:
        _state.update(requested=True, at_once=False)
        print(f"rlbase: {name} received while making the envs: stopping now", file=sys.stderr,
              flush=True)
        print("Stopped before training: nothing to save", flush=True)
        raise StopExit()
    if not _state["requested"]:
        _state["requested"] = True
        print(f"rlbase: {name} received: stopping at the next safe point and saving the model",
              file=sys.stderr, flush=True)
    elif not _state["noted"]:
        # Raising here would cut the checkpoint or model write short: finish it instead.
        _state["noted"] = True
        print(f"rlbase: {name} received again: already stopping, the model is being saved "
              "(SIGKILL ends the process without saving)", file=sys.stderr, flush=True)


@contextlib.contextmanager
def graceful_interrupt() -> Iterator[None]:
    """Turn SIGINT and SIGTERM into a stop request for the duration of the block (main thread
    only; elsewhere the block runs with the signals left as they are)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    clear_stop()
    previous = {sig: signal.signal(sig, _handler) for sig in STOP_SIGNALS}
    try:
        yield
    except StopExit as exc:
        if isinstance(exc, EnvWaitInterrupted):  # no learn loop caught it: say what was lost
            print("rlbase: the model was not saved (the stop came inside an env step that "
                  "never ended; the last checkpoint is kept)", file=sys.stderr, flush=True)
        # The process ends with its model saved: a late signal must not turn that exit into a
        # KeyboardInterrupt or a death by signal.
        previous = dict.fromkeys(STOP_SIGNALS, signal.SIG_IGN)
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        # A request belongs to the training it interrupted: the next learn() runs in full.
        clear_stop()


def ignore_stop_signals() -> None:
    """Called first thing in an env worker process (leave Ctrl-C and SIGTERM to the main
    process, which stops the workers itself after its save), and by the CLI once its run is
    finished and saved."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
