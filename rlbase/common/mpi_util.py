"""Optional MPI helpers. mpi4py is imported lazily: without it every call acts single-process."""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

from rlbase.common.errors import RLBaseError


def _mpi_env_present() -> bool:
    # Only import mpi4py when launched by mpiexec: importing it initializes MPI, which is slow
    # and prints warnings on machines with no MPI set up.
    keys = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MPI_LOCALRANKID", "PMI_SIZE")
    return any(k in os.environ for k in keys)


def get_comm() -> Any | None:
    """MPI.COMM_WORLD when running under mpiexec with mpi4py installed, else None."""
    if not _mpi_env_present():
        return None
    try:
        from mpi4py import MPI  # optional: the mpi extra
    except ImportError:
        return None
    return MPI.COMM_WORLD


def mpi_rank() -> int:
    comm = get_comm()
    return 0 if comm is None else comm.Get_rank()


def mpi_size() -> int:
    comm = get_comm()
    return 1 if comm is None else comm.Get_size()


def allreduce_mean(x: np.ndarray, comm: Any | None = None) -> np.ndarray:
    """The element-wise mean of ``x`` over all ranks (x itself when single-process)."""
    comm = comm if comm is not None else get_comm()
    x = np.asarray(x, dtype=np.float64)
    if comm is None or comm.Get_size() == 1:
        return x
    out = np.empty_like(x)
    from mpi4py import MPI  # optional: the mpi extra

    comm.Allreduce(x, out, op=MPI.SUM)
    return out / comm.Get_size()


def broadcast(x: np.ndarray, comm: Any | None = None, root: int = 0) -> np.ndarray:
    """Root's copy of ``x`` on every rank."""
    comm = comm if comm is not None else get_comm()
    if comm is None or comm.Get_size() == 1:
        return x
    x = np.ascontiguousarray(x)
    comm.Bcast(x, root=root)
    return x


def any_rank(flag: bool, comm: Any | None = None) -> bool:
    """Whether ``flag`` is true on any rank (``flag`` itself when single-process); every rank
    must call it at the same point."""
    comm = comm if comm is not None else get_comm()
    if comm is None or comm.Get_size() == 1:
        return bool(flag)
    return any(comm.allgather(bool(flag)))


def barrier(comm: Any | None = None) -> None:
    """Wait until every rank reaches this call (nothing when single-process)."""
    comm = comm if comm is not None else get_comm()
    if comm is not None and comm.Get_size() > 1:
        comm.Barrier()


def allreduce_mean_f32(x: np.ndarray, comm: Any) -> np.ndarray:
    """Float32 element-wise mean over ranks (what the in-graph gradient averaging calls)."""
    from mpi4py import MPI  # optional: the mpi extra

    x = np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty_like(x)
    comm.Allreduce(x, out, op=MPI.SUM)
    return out / np.float32(comm.Get_size())


def sync_variables(variables: list, comm: Any | None = None) -> None:
    """Give every rank root's values of ``variables`` (TF variables), so workers start equal."""
    comm = comm if comm is not None else get_comm()
    if comm is None or comm.Get_size() == 1:
        return
    for var in variables:  # a scalar comes back from the broadcast as shape (1,)
        var.assign(np.reshape(broadcast(np.asarray(var.numpy()), comm), var.shape))


def check_synced(variables: list, comm: Any | None = None, what: str = "parameters") -> None:
    """Raise if ranks hold different ``variables`` (compares a checksum of all of them)."""
    comm = comm if comm is not None else get_comm()
    if comm is None or comm.Get_size() == 1:
        return
    checksum = float(sum(np.asarray(v.numpy(), np.float64).sum() for v in variables))
    sums = comm.allgather(checksum)
    if max(sums) - min(sums) > 1e-6 * max(1.0, abs(sums[0])):
        raise RLBaseError(f"MPI workers' {what} diverged: checksums {sums}")


def abort_on_error(comm: Any | None = None) -> None:
    """Make an uncaught exception on any rank end the whole job (MPI_Abort) instead of leaving
    the other ranks blocked forever in their next collective call.

    The CLI installs this under mpiexec. A rank killed outright (SIGKILL, out of memory) is
    handled by mpiexec itself, which ends the job when one of its processes dies.
    """
    comm = comm if comm is not None else get_comm()
    if comm is None or comm.Get_size() == 1:
        return

    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        previous(kind, value, tb)
        print(f"rlbase: rank {comm.Get_rank()} failed ({kind.__name__}): aborting all "
              f"{comm.Get_size()} ranks", file=sys.stderr, flush=True)
        comm.Abort(1)

    sys.excepthook = hook


def abort_job(code: int, comm: Any | None = None) -> None:
    """Under mpiexec, end every rank with ``code`` (a rank leaving alone would leave the others
    waiting forever in their next collective call); single-process, do nothing."""
    comm = comm if comm is not None else get_comm()
    if comm is not None and comm.Get_size() > 1:
        comm.Abort(int(code))
