"""The model classes' callbacks: Stable-Baselines3's protocol (the classes of
rlbase.common.loops.callbacks, whose hooks run at every vector step) and rlbase's plain
``callback(model, info)``, called after every iteration (an update, or an env step for the
off-policy algorithms), which stops training by returning False.

A plain function is told apart by its parameters' names: ``fn(locals, globals)`` (or
``_locals, _globals``, ``lcl, glb``...) is SB3's form, wrapped in :class:`ConvertCallback`
(called after every vector step with the step's locals; False stops); any other is rlbase's
``fn(model, info)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlbase.common.errors import RLBaseError
from rlbase.common.loops.callbacks import (
    BaseCallback,
    CallbackList,
    CheckpointCallback,
    ConvertCallback,
    EvalCallback,
    EventCallback,
    EveryNTimesteps,
    ProgressBarCallback,
    StopTrainingOnMaxEpisodes,
    StopTrainingOnNoModelImprovement,
    StopTrainingOnRewardThreshold,
)
from rlbase.compat.baselines.callback_form import is_baselines_form

__all__ = ["BaseCallback", "CallbackList", "CheckpointCallback", "ConvertCallback",
           "EvalCallback", "EventCallback", "EveryNTimesteps", "ProgressBarCallback",
           "StopTrainingOnMaxEpisodes", "StopTrainingOnNoModelImprovement",
           "StopTrainingOnRewardThreshold", "split_callbacks"]

PlainCallback = Callable[[Any, dict[str, Any]], Any]


def split_callbacks(callback: Any) -> tuple[BaseCallback | None, list[PlainCallback]]:
    """learn()'s ``callback`` (None, a callable, a BaseCallback or a list of those) ->
    (the SB3 callbacks as one, rlbase's plain ``callback(model, info)`` functions)."""
    items = list(callback) if isinstance(callback, (list, tuple)) else \
        [] if callback is None else [callback]
    hooks: list[BaseCallback] = []
    plain: list[PlainCallback] = []
    for item in items:
        if isinstance(item, BaseCallback):
            hooks.append(item)
        elif callable(item):
            if is_baselines_form(item):  # named (locals, globals): SB3's function form
                hooks.append(ConvertCallback(item))
            else:
                plain.append(item)
        else:
            raise RLBaseError(f"callback must be a callable, a BaseCallback or a list of them, "
                              f"got {type(item).__name__}")
    if not hooks:
        return None, plain
    return (hooks[0] if len(hooks) == 1 else CallbackList(hooks)), plain
