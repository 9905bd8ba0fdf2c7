"""Stopping training cleanly on Ctrl-C (SIGINT).

Inside :func:`graceful_interrupt`, the first SIGINT only sets a flag: learn loops poll
:func:`stop_requested` at their safe points (after an update, between env steps), write a
checkpoint when they have a checkpointer, and return the model as it is. The CLI reads the flag
before leaving the block (leaving clears it), saves the model and exits with status 130. A
second SIGINT raises KeyboardInterrupt at once, for a loop that does not poll. Outside the
context (library use without it) SIGINT behaves as Python's default and only
:func:`request_stop` sets the flag.

An algorithm adopts it with one line at each safe point::

    if stop_requested(): break

Env worker processes should ignore SIGINT (see :func:`ignore_sigint`): a terminal's Ctrl-C goes
to the whole process group, and a worker that died of it would fail the step the main process
is about to finish cleanly.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

INTERRUPTED_EXIT_CODE = 130  # the shell's convention: 128 + SIGINT
_state = {"requested": False}


def stop_requested() -> bool:
    """True after a SIGINT inside :func:`graceful_interrupt`."""
    return _state["requested"]


def request_stop() -> None:
    """Ask the running learn loop to stop at its next safe point (what SIGINT does)."""
    _state["requested"] = True


def clear_stop() -> None:
    _state["requested"] = False


def _handler(signum: int, frame: Any) -> None:
    if _state["requested"]:
        raise KeyboardInterrupt
    _state["requested"] = True
    print("rlbase: interrupt received: stopping at the next safe point (Ctrl-C again to abort)",
          file=sys.stderr, flush=True)


@contextlib.contextmanager
def graceful_interrupt() -> Iterator[None]:
    """Turn SIGINT into a stop request for the duration of the block (main thread only;
    elsewhere the block runs with SIGINT left as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    clear_stop()
    previous = signal.signal(signal.SIGINT, _handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        # A request belongs to the training it interrupted: the next learn() runs in full.
        clear_stop()


def ignore_sigint() -> None:
    """Called first thing in an env worker process: leave Ctrl-C to the main process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
