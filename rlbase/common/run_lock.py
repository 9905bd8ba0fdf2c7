"""One run per output folder: an advisory lock file holding the owner's PID.

Two runs writing one ``--log_path`` (or checkpoint folder) interleave their CSV rows and prune
each other's checkpoints. :func:`lock_folder` takes ``<folder>/.rlbase.lock`` with
``fcntl.flock``; a second run is refused in one line naming the first's PID. The kernel drops
the lock when its process dies (even by SIGKILL), so a stale file of a dead run is simply taken
over. The lock is held until the process exits.
"""

from __future__ import annotations

import contextlib
import os
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
    handle = open(path, "a+")  # noqa: SIM115 - held open while the run lives
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        owner = handle.read().strip() or "unknown"
        handle.close()
        raise RLBaseError(f"{flag}={folder} is in use by another rlbase run (PID {owner}): "
                          "wait for it to end, or give this run another folder") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    _held[folder] = handle


def release_all() -> None:
    """Release every lock this process holds (tests; a process's exit does it too)."""
    for handle in _held.values():
        with contextlib.suppress(OSError):
            handle.close()
    _held.clear()
