"""Baselines' deepq callback, ``callback(lcl, glb)`` returning True to stop, in a learn() whose
own callbacks are ``callback(model, info)`` returning False to stop.

Both take two positional arguments, so the form is told by the parameters' names, the way a
Baselines script spells them (``def callback(lcl, _glb)``): a first parameter named like
``lcl``/``locals`` and a second named like ``glb``/``globals`` (leading or trailing
underscores aside) is Baselines' form. ``baselines_callback(fn)`` declares the form for any
callable (a lambda, a partial, a callable object). A callback with one name of each kind is
refused: it cannot be told which meaning its return value has.

:func:`translate`, registered with the loops (:mod:`rlbase.common.loops.callback_forms`) when
rlbase is imported, adapts the form for the algorithms whose Baselines ancestor took it (DQN,
and QR-DQN on the same loop) and refuses it in one line elsewhere. This module stays light
(rlbase imports it); the adapter, :mod:`rlbase.compat.baselines.deepq_callback`, is imported
when a callback of the form arrives.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from rlbase.common.errors import RLBaseError
from rlbase.common.loops import callback_forms
from rlbase.common.loops.callback_forms import CallbackSite

LOCALS_NAMES = frozenset({"lcl", "lcls", "locals", "local_vars", "loc"})
GLOBALS_NAMES = frozenset({"glb", "glbs", "globals", "global_vars", "gbl", "glob"})

BaselinesFn = Callable[[dict[str, Any], dict[str, Any]], Any]


class BaselinesForm:
    """A callable declared to be a Baselines deepq callback (see :func:`baselines_callback`)."""

    def __init__(self, fn: BaselinesFn):
        if not callable(fn):
            raise RLBaseError(f"baselines_callback takes a callable, got {fn!r}")
        self.fn = fn

    def __call__(self, lcl: dict[str, Any], glb: dict[str, Any]) -> Any:
        return self.fn(lcl, glb)


def baselines_callback(fn: BaselinesFn) -> BaselinesForm:
    """Declare ``fn`` a Baselines deepq callback: called as ``fn(lcl, glb)`` after every env
    step, training stops when it returns a true value."""
    return fn if isinstance(fn, BaselinesForm) else BaselinesForm(fn)


def _first_two_names(fn: Any) -> tuple[str | None, str | None]:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: rlbase's form
        return None, None
    names: list[str | None] = [p.name.strip("_") for p in params
                                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names += [None, None]
    return names[0], names[1]


def is_baselines_form(callback: Any) -> bool:
    """Whether ``callback`` is Baselines' ``callback(lcl, glb)`` (True stops) rather than
    ``callback(model, info)`` (False stops); a callback named half one way, half the other,
    is refused."""
    if isinstance(callback, BaselinesForm):
        return True
    if callback is None:
        return False
    first, second = _first_two_names(callback)
    is_locals, is_globals = first in LOCALS_NAMES, second in GLOBALS_NAMES
    if is_locals != is_globals:
        raise RLBaseError(
            f"callback{_signature(callback)} is named half as Baselines' callback(lcl, glb) "
            f"(True stops) and half as rlbase's callback(model, info) (False stops): name its "
            f"parameters (lcl, glb) or (model, info), or wrap it in baselines_callback(fn)")
    return is_locals


def _signature(fn: Any) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "(...)"


#: the algorithms whose Baselines ancestor (deepq) called ``callback(lcl, glb)``
TAKES_DEEPQ_CALLBACK = ("dqn", "qrdqn")


def translate(callback: Any, site: CallbackSite) -> Any:
    """Baselines' ``callback(lcl, glb)`` adapted to the loops' protocol for DQN and QR-DQN
    (called where deepq called it, with its locals and the algorithm module's globals),
    refused in one line for the other algorithms; any other callback as it is."""
    if not is_baselines_form(callback):
        return callback
    if site.algorithm not in TAKES_DEEPQ_CALLBACK:
        raise RLBaseError("callback(lcl, glb) is Baselines' deepq callback (True stops), "
                          "which only dqn's learn() and qrdqn's take: write "
                          "callback(model, info), which returns False to stop")
    # Lazy: the adapter imports the logger and the vec envs, which `import rlbase` must not.
    from rlbase.compat.baselines.deepq_callback import BaselinesCallback

    module = importlib.import_module(f"rlbase.{site.algorithm}.{site.algorithm}")
    return BaselinesCallback(callback, site.env, site.total_timesteps, vars(module))


def install() -> None:
    """Register :func:`translate` with the loops (rlbase's ``__init__`` does, once)."""
    callback_forms.register(translate)
