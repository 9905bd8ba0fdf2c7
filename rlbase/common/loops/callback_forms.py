"""Callback forms of other libraries, turned into the loops' one protocol before training.

The loops know ``callback(model, info)``, called after every iteration and returning False to
stop, and on a callback object ``before_first_step(model, info)``, called once before the
first env step (False stops before training). The compatibility layer (:mod:`rlbase.compat`)
registers its translators here when rlbase is imported, and every
:class:`~rlbase.common.loops.training_loop.TrainingLoop` passes its callback through them: a
foreign form is adapted, or refused in one line, before training, and the core names none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CallbackSite:
    """Where a callback is about to run: the algorithm, its training env (a VecEnv) and the
    env steps of this learn() call."""

    algorithm: str
    env: Any
    total_timesteps: int


#: translator(callback, site) -> the callback in the loops' protocol (the same object when
#: the form is not the translator's)
Translator = Callable[[Any, CallbackSite], Any]
_translators: list[Translator] = []


def register(translator: Translator) -> None:
    """Add a translator (once), run for every callback a loop receives."""
    if translator not in _translators:
        _translators.append(translator)


def translate(callback: Any, site: CallbackSite) -> Any:
    """``callback`` in the loops' protocol, through every registered translator."""
    for translator in _translators:
        callback = translator(callback, site)
    return callback
