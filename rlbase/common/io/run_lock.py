"""One run per output folder: an advisory lock file holding the owner's PID.

Two runs writing one ``--log_path`` (or checkpoint folder) interleave their CSV rows and prune
each other's checkpoints. :func:`lock_folder` takes ``<folder>/.rlbase.lock`` with
``fcntl.flock``; a second run is refused in one line naming the first's PID. The kernel drops
the lock when its process dies (even by SIGKILL), so a stale file of a dead run is simply taken
over. The lock is held until the process exits.

A lock file that cannot be written (a disk already full at start, ``[Errno 28]``) does not stop
the run: the lock is taken all the same where the file could be opened (``flock`` writes no
data), one ``rlbase: warning:`` line says that the PID is missing (or, when not even the file
could be opened, that the folder is not locked), and training goes on.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import IO

from rlbase.common.errors import RLBaseError

LOCK_NAME = ".rlbase.lock"
_held: dict[str, IO[str]] = {}  # folder -> open lock file, kept open for the process's life


def lock_folder(folder: str, flag: str) -> None:
    """Lock ``folder`` (created if missing) for this process; an RLBaseError naming the other
    run's PID when a live process holds it. ``flag`` names the option in the message."""
    import fcntl  # POSIX only; imported here so the module still imports elsewhere

    folder = os.path.abspath(os.path.expanduser(folder))
    if folder in _held:
        return
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, LOCK_NAME)
    try:
        handle = open(path, "a+")  # noqa: SIM115 - held open while the run lives
    except OSError as exc:  # the folder exists (made above) but no file fits: a full disk
        _warn(f"could not create the lock file {path} ({exc}): {flag}={folder} is not locked "
              "against a second run; training goes on")
        return
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        owner = handle.read().strip() or "unknown"
        handle.close()
        raise RLBaseError(f"{flag}={folder} is in use by another rlbase run (PID {owner}): "
                          "wait for it to end, or give this run another folder") from None
    _held[folder] = handle  # locked from here on, whether or not the PID can be written
    fd = handle.fileno()
    try:  # straight to the file: no buffer left holding the PID to fail again at close
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError as exc:
        with contextlib.suppress(OSError):  # no half-written PID
            os.ftruncate(fd, 0)
        _warn(f"could not write this run's PID into {path} ({exc}): {flag}={folder} is locked "
              "all the same (a second run is refused, naming no PID); training goes on")


def _warn(message: str) -> None:
    """One ``rlbase: warning:`` line on stderr (the logger's format; it is not configured yet
    when the CLI takes its locks)."""
    print(f"rlbase: warning: {message}", file=sys.stderr, flush=True)


def release_all() -> None:
    """Release every lock this process holds (tests; a process's exit does it too)."""
    for handle in _held.values():
        with contextlib.suppress(OSError):
            handle.close()
    _held.clear()
