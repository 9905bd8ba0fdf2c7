"""Optional MPI helpers. mpi4py is imported lazily: without it every call acts single-process."""

from __future__ import annotations

import os
from typing import Any

import numpy as np


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
        from mpi4py import MPI
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
    from mpi4py import MPI

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
