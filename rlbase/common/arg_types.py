"""Command-line values shared by rlbase's commands (standard library only, so that parsing
and --help stay fast)."""

from __future__ import annotations

import argparse
import math


def parse_count(text: str, low: int) -> int | None:
    """A step count as researchers write it ('2e5', '100000') -> int, or None when the text
    is not a finite number >= low."""
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) and value >= low else None


def timesteps_arg(text: str) -> int:
    """argparse ``type=`` for ``--num_timesteps``: a positive step count, or argparse's
    one-line error (exit status 2)."""
    value = parse_count(text, 1)
    if value is None:
        raise argparse.ArgumentTypeError(f"must be a positive number such as 2e5, got '{text}'")
    return value
