"""Run under ``mpiexec -n 2``: rank 1 fails (``kill``, ``raise`` or ``error_exit`` through the
CLI) while rank 0 waits in a collective call; the job must end instead of hanging."""

import os
import signal
import sys
import time

from mpi4py import MPI

from rlbase.common.mpi_util import abort_on_error, allreduce_mean

comm = MPI.COMM_WORLD
mode = sys.argv[1]
abort_on_error(comm)
if comm.Get_rank() == 1:
    time.sleep(0.5)
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "raise":
        raise RuntimeError("rank 1 failed")
    elif mode == "error_exit":
        from rlbase.run import cli

        sys.argv = ["rlbase.run", "--alg=no_such_algorithm"]
        cli()
allreduce_mean(comm.Get_rank() * 1.0, comm)
print(f"rank {comm.Get_rank()} finished", flush=True)
