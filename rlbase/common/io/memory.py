"""Up-front memory checks: refuse, in one line with the arithmetic, what cannot fit.

numpy allocates pages lazily, so a replay buffer of ``buffer_size=1e9`` is "built" at once and
the kernel's out-of-memory killer ends the run hours later, when it fills. These checks compare
what a structure will need with the memory available now, before training starts.
"""

from __future__ import annotations

import math
import os

import gymnasium as gym

from rlbase.common import nested
from rlbase.common.errors import RLBaseError


def available_bytes() -> int | None:
    """Memory available to this process now: Linux's MemAvailable (free plus reclaimable
    cache), else the free physical pages; None where neither can be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def human_bytes(nbytes: float) -> str:
    """``44000000000`` -> ``44 GB``: three significant digits in the largest unit below it."""
    value, unit = float(nbytes), "bytes"
    for name in ("KB", "MB", "GB", "TB", "PB"):
        if value < 1000:
            break
        value, unit = value / 1000, name
    return f"{value:.3g} {unit}"


def check_fits(what: str, count: int, unit_bytes: int, unit: str, fix: str) -> None:
    """An RLBaseError when ``count`` x ``unit_bytes`` is more than the available memory.

    what: the structure ("replay buffer"); unit: what is counted ("transitions of ...");
    fix: what to write instead ("lower buffer_size").
    """
    need = int(count) * int(unit_bytes)
    available = available_bytes()
    if available is not None and need > available:
        raise RLBaseError(f"the {what} needs {count:,} {unit} x {unit_bytes:,} bytes = "
                          f"{human_bytes(need)}, more than the {human_bytes(available)} of memory "
                          f"available: {fix}")


def rollout_step_bytes(*spaces: gym.Space | None) -> int:
    """The bytes one rollout step holds at least: each space's leaves (observation, action;
    None: unknown, counted as nothing), and a reward, value, done flag and log-probability
    (4 bytes each)."""
    total = 16
    for space in spaces:
        if space is None:
            continue
        for leaf in nested.leaf_spaces(space):
            dtype = getattr(leaf, "dtype", None)
            itemsize = dtype.itemsize if dtype is not None else 4
            total += math.prod(int(n) for n in getattr(leaf, "shape", None) or ()) * itemsize
    return total


def check_rollout(nsteps: int, num_envs: int, step_bytes: int, where: str) -> None:
    """An RLBaseError when a rollout of ``nsteps`` x ``num_envs`` steps of ``step_bytes`` bytes
    each (observation, action, reward, value, done, log-probability) cannot fit in memory.
    ``where``: what set nsteps (``model file m.zip``), named in the message."""
    check_fits(f"rollout of nsteps={nsteps:,} x {num_envs:,} env(s) ({where})",
               int(nsteps) * int(num_envs), step_bytes, "steps", "lower nsteps")
