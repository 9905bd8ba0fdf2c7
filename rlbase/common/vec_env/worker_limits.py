"""Limits on a SubprocVecEnv's worker processes: how long a step may take before the worker
counts as hung, how long closing waits, and how many workers a machine can run."""

from __future__ import annotations

import math
import os

from rlbase.common.errors import RLBaseError

#: The default for how long the workers may take to answer a step or reset: 10 minutes. Slow
#: simulators take seconds to tens of seconds for one call (a robotics scene loaded at reset, a
#: game booting, a physics step with many contacts, a shared machine swapping), so the limit is
#: far above any call we know of: a worker silent for 10 minutes is stuck, not slow. Set
#: $RLBASE_ENV_TIMEOUT (seconds; 'inf' waits forever) or ``SubprocVecEnv(timeout=...)``.
DEFAULT_ENV_TIMEOUT_S = 600.0
ENV_TIMEOUT_VARIABLE = "RLBASE_ENV_TIMEOUT"
#: At most this many worker processes per CPU: each is a Python interpreter with the env
#: imported (tens of MB at least); 64 per CPU is far past any speed-up, and a count such as
#: --num_env=100000 would fork until the machine stops answering, SIGTERM included.
MAX_WORKERS_PER_CPU = 64
#: How long closing waits for workers to finish a pending call, and then to close their envs,
#: before killing them (seconds): close() never waits on a hung worker.
CLOSE_WAIT_S = 5.0


def env_timeout(timeout: float | None = None) -> float | None:
    """The step/reset timeout in seconds: ``timeout`` when given, else $RLBASE_ENV_TIMEOUT,
    else :data:`DEFAULT_ENV_TIMEOUT_S`; None for no limit (``inf``). An RLBaseError for a value
    that is not a positive number."""
    source = "timeout"
    if timeout is None:
        text = os.environ.get(ENV_TIMEOUT_VARIABLE, "").strip()
        if not text:
            return DEFAULT_ENV_TIMEOUT_S
        source = f"${ENV_TIMEOUT_VARIABLE}"
        try:
            timeout = float(text)
        except ValueError:
            raise RLBaseError(f"{source}={text!r} is not a number of seconds (e.g. 600, or inf "
                              "to wait forever)") from None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or \
            math.isnan(timeout) or timeout <= 0:
        raise RLBaseError(f"{source}={timeout!r} must be a positive number of seconds (inf to "
                          "wait forever)")
    return None if math.isinf(timeout) else float(timeout)


def check_worker_count(count: int) -> None:
    """One line refusing more worker processes than :data:`MAX_WORKERS_PER_CPU` per CPU."""
    cpus = os.cpu_count() or 1
    limit = MAX_WORKERS_PER_CPU * cpus
    if count > limit:
        raise RLBaseError(f"{count:,} envs in subprocess workers is one process each, more than "
                          f"{limit:,} ({MAX_WORKERS_PER_CPU} per CPU, {cpus} CPUs): use fewer "
                          "envs, or vec_env='dummy' to step them all in this process")
