"""Command-line and hyperparameter-file values shared by rlbase's commands (the standard
library and rlbase's error only, so that parsing and --help stay fast)."""

from __future__ import annotations

import argparse
import ast
import inspect
import math
import os
from collections.abc import Mapping
from typing import Any

from rlbase.common.errors import RLBaseError

# The largest count a float such as '2e5' holds exactly (2**53): more steps than any run makes.
MAX_COUNT = 2 ** 53


def parse_count(text: str, low: int) -> int | None:
    """A step count as researchers write it ('2e5', '100000') -> int, or None when the text
    is not a finite number from low to MAX_COUNT."""
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) and low <= value <= MAX_COUNT else None


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are the CLI's one line (``rlbase: error: ...``, exit
    status 2, printed by rlbase.run.run_cli) instead of the usage and argparse's own line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise RLBaseError(f"{message} (see {self.prog} --help)")


def positive_finite_float(text: str) -> float:
    """argparse ``type=`` for a factor such as ``--reward_scale``: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got '{text}'")
    return value


def seconds_arg(text: str) -> float:
    """argparse ``type=`` for a time limit such as ``--env_timeout``: seconds > 0, or inf."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0:  # nan fails too
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0 (or inf), got "
                                         f"'{text}'")
    return value


def path_arg(text: str) -> str:
    """argparse ``type=`` for every path flag: ``~`` expanded here, once, because the shell
    leaves it alone after ``=`` (``--log_path=~/logs``), and every output must land in the
    same folder."""
    return os.path.expanduser(text)


def timesteps_arg(text: str) -> int:
    """argparse ``type=`` for ``--num_timesteps``: a positive step count, or argparse's
    one-line error (exit status 2)."""
    value = parse_count(text, 1)
    if value is None:
        raise argparse.ArgumentTypeError(f"must be a positive number such as 2e5, at most "
                                         f"{MAX_COUNT:.3g}, got '{text}'")
    return value


def _policy_literal(node: ast.AST, where: str) -> Any:
    """A policy_kwargs expression: literals, ``dict(...)`` and dotted names (the zoo's
    ``nn.ReLU`` -> the Keras activation name ``'relu'``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id == "dict" and not node.args:
        return {kw.arg: _policy_literal(kw.value, where) for kw in node.keywords if kw.arg}
    if isinstance(node, ast.Dict):
        return {_policy_literal(k, where): _policy_literal(v, where)
                for k, v in zip(node.keys, node.values) if k is not None}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_policy_literal(v, where) for v in node.elts]
    if isinstance(node, ast.Attribute):
        return node.attr.lower()
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise RLBaseError(f"{where}: cannot read {ast.unparse(node)!r} (literals, dict(...) "
                          "and names such as nn.ReLU only)") from None


def parse_policy_kwargs(text: Any, where: str) -> dict[str, Any]:
    """The zoo's ``policy_kwargs`` string (``"dict(net_arch=[64, 64], activation_fn=nn.ReLU)"``)
    or a mapping, as a dict."""
    if isinstance(text, dict):
        return dict(text)
    try:
        tree = ast.parse(str(text).strip(), mode="eval")
    except (SyntaxError, RecursionError, MemoryError):
        raise RLBaseError(f"{where}: policy_kwargs is not a Python dict: {str(text)[:80]!r}") \
            from None
    value = _policy_literal(tree.body, where)
    if not isinstance(value, dict):
        raise RLBaseError(f"{where}: policy_kwargs must be a dict, got {text!r}")
    return value


def check_keyword_types(params: Mapping[str, inspect.Parameter], given: Mapping[str, Any],
                        owner: str, flag: str) -> None:
    """A one-line error for the first keyword in ``given`` whose value's type cannot stand for
    its parameter in ``params`` (see :func:`type_mismatch`): ``flag`` names where it was
    written, ``owner`` whose parameter it is."""
    for key, value in given.items():
        default = getattr(params.get(key), "default", None)
        what = type_mismatch(default, value)
        if what is not None:
            raise RLBaseError(f"{flag.format(key=key)} must be {what} ({owner}'s {key}, "
                              f"default {default!r}), got {value!r}")


def type_mismatch(default: Any, value: Any) -> str | None:
    """What ``value`` should be, when its type cannot stand for a parameter whose default is
    ``default`` (a bool, int, float or str), else None: the check of a keyword given on the
    command line before it reaches a constructor that would fail later, deep inside (an env's
    step, a network's first call). No default, or None, takes anything."""
    # (bool before int: True is an int)
    kinds = ((bool, lambda v: isinstance(v, bool), "True or False"),
             (int, lambda v: isinstance(v, int) and not isinstance(v, bool), "an int"),
             (float, lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
              "a number"),
             (str, lambda v: isinstance(v, str) or callable(v), "a name"))
    for kind, ok, what in kinds:
        if isinstance(default, kind):
            return None if ok(value) else what
    return None
