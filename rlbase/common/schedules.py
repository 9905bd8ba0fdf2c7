"""Schedules for values that change during training (learning rate, epsilon, clip range...).

Two families live here:

* Learning-rate shapes named like the a2c/acer ones (``constant``, ``linear``, ``middle_drop``,
  ``double_linear_con``, ``double_middle_drop``). Each shape is a multiplier of the initial
  value, written as a function of the fraction of training *elapsed* ``p`` (0 at start, 1 at
  end), because that is how those shapes were defined. :class:`Scheduler` steps through them;
  :func:`named_schedule` / :func:`get_schedule_fn` turn them into functions of the fraction
  *remaining* (1 at start, 0 at end), the convention ``learn()`` functions use.
* Timestep schedules with ``.value(t)`` (:class:`ConstantSchedule`, :class:`LinearSchedule`,
  :class:`PiecewiseSchedule`), the DQN exploration style.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rlbase.common.errors import RLBaseError

ScheduleFn = Callable[[float], float]


# --- shapes: multipliers of the initial value, as functions of the fraction elapsed p ---------


def constant(p: float) -> float:
    """Always 1: the value never changes."""
    return 1.0


def linear(p: float) -> float:
    """Falls linearly from 1 at the start to 0 at the end."""
    return 1.0 - p


def middle_drop(p: float) -> float:
    """Linear for the first quarter of training (down to 75%), then flat at 7.5%."""
    left = 1.0 - p
    floor = 0.75
    if left < floor:
        return floor * 0.1
    return left


def double_linear_con(p: float) -> float:
    """Linear at twice the speed, then constant at 12.5% once it gets there."""
    left = 1.0 - 2.0 * p
    floor = 0.125
    if left < floor:
        return floor
    return left


def double_middle_drop(p: float) -> float:
    """Linear down to 75%, then 7.5% until 25% of training is left, then 12.5%."""
    left = 1.0 - p
    first, second = 0.75, 0.25
    if left < first:
        # Below the second threshold the shape jumps back *up* to 12.5%: that is the original
        # definition, kept so that published learning-rate settings behave the same.
        if left < second:
            return second * 0.5
        return first * 0.1
    return left


SHAPES: dict[str, ScheduleFn] = {
    "constant": constant,
    "linear": linear,
    "middle_drop": middle_drop,
    "double_linear_con": double_linear_con,
    "double_middle_drop": double_middle_drop,
}


def _shape(name: str) -> ScheduleFn:
    """Look up a shape by name, or raise RLBaseError listing the valid names."""
    try:
        return SHAPES[name]
    except (KeyError, TypeError):
        valid = ", ".join(sorted(SHAPES))
        raise RLBaseError(f"unknown schedule {name!r}; valid schedules: {valid}") from None


# --- functions of the fraction remaining ------------------------------------------------------


def named_schedule(name: str, value: float) -> ScheduleFn:
    """A function of the fraction of training remaining for a named shape.

    :param name: one of ``constant``, ``linear``, ``middle_drop``, ``double_linear_con``,
        ``double_middle_drop``.
    :param value: the value at the start of training.
    :return: ``f(frac_remaining) -> value * shape(1 - frac_remaining)``.
    """
    return NamedSchedule(name, value)


def parse_schedule(text: str) -> NamedSchedule:
    """A schedule written as text: the zoo's ``lin_3e-4`` (linear from 3e-4 to 0) or
    rlbase's ``linear(0.0003)`` (how a saved model records a named schedule)."""
    match = re.fullmatch(r"lin_([-+0-9.eE]+)", text.strip()) or \
        re.fullmatch(r"(\w+)\(([-+0-9.eE]+)\)", text.strip())
    if match is None:
        raise RLBaseError(f"a schedule is written lin_<start> or <shape>(<start>), got {text!r}")
    name, value = ("linear", match.group(1)) if len(match.groups()) == 1 else match.groups()
    try:
        return NamedSchedule(name, float(value))
    except ValueError:
        raise RLBaseError(f"a schedule's start must be a number, got {text!r}") from None


class NamedSchedule:
    """``value * shape(1 - frac_remaining)`` for a named shape, shown as ``linear(0.0003)``
    (in the CLI's start line and in saved hyperparameters)."""

    def __init__(self, name: str, value: float):
        self.shape = _shape(name)
        self.name, self.start = name, float(value)
        self.__name__ = f"{name}_schedule"

    def __call__(self, frac: float) -> float:
        return self.start * self.shape(1.0 - frac)

    def __repr__(self) -> str:
        return f"{self.name}({self.start!r})"  # exact: a saved model reads it back

    def __eq__(self, other: object) -> bool:  # the same shape and start: the same schedule
        return isinstance(other, NamedSchedule) and (self.name, self.start) == \
            (other.name, other.start)

    def __hash__(self) -> int:
        return hash((self.name, self.start))


def get_schedule_fn(value: float | ScheduleFn) -> ScheduleFn:
    """Turn a number or a callable into a function of the fraction of training remaining.

    :param value: a number (a constant schedule) or a callable of the fraction remaining.
    """
    if callable(value):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RLBaseError(
            f"schedule value {value!r} is not allowed; pass a number or a callable of the "
            "fraction of training remaining"
        )
    fixed = float(value)

    def schedule(frac: float) -> float:
        return fixed

    return schedule


def make_schedule(value_or_fn: float | ScheduleFn | str, value: float | None = None) -> ScheduleFn:
    """One entry point for every way a user can give a schedule.

    :param value_or_fn: a number, a callable of the fraction remaining, or a shape name.
    :param value: the initial value, required when ``value_or_fn`` is a shape name.
    """
    if isinstance(value_or_fn, str):
        if value is None:
            raise RLBaseError(f"schedule {value_or_fn!r} needs an initial value; got value=None")
        return named_schedule(value_or_fn, value)
    return get_schedule_fn(value_or_fn)


class Scheduler:
    """Steps a named shape (or a callable of the fraction elapsed) through ``nvalues`` steps.

    :param value: the initial value.
    :param nvalues: the number of steps the schedule spans.
    :param schedule: a shape name or a callable of the fraction elapsed returning a multiplier.
    """

    def __init__(self, value: float, nvalues: int, schedule: str | ScheduleFn) -> None:
        if nvalues <= 0:
            raise RLBaseError(f"Scheduler nvalues={nvalues!r} must be a positive integer")
        self.v = float(value)
        self.nvalues = nvalues
        self.schedule = schedule if callable(schedule) else _shape(schedule)
        self.n = 0

    def value(self) -> float:
        """The current value; advances the schedule by one step."""
        current = self.value_steps(self.n)
        self.n += 1
        return current

    def value_steps(self, steps: float) -> float:
        """The value after ``steps`` steps, without advancing the schedule."""
        return self.v * self.schedule(steps / self.nvalues)


# --- timestep schedules -----------------------------------------------------------------------


class ConstantSchedule:
    """The same value at every timestep.

    :param value: the value returned by :meth:`value`.
    """

    def __init__(self, value: float) -> None:
        self._v = value

    def value(self, t: float) -> float:
        """The value at timestep ``t`` (always the same)."""
        return self._v


def linear_interpolation(left: float, right: float, alpha: float) -> float:
    """Blend from ``left`` (alpha=0) to ``right`` (alpha=1)."""
    return left + alpha * (right - left)


class PiecewiseSchedule:
    """A schedule through ``(timestep, value)`` points, interpolated between them.

    :param endpoints: ``(t, value)`` pairs with non-decreasing ``t``.
    :param interpolation: ``f(left, right, alpha)`` used between two endpoints.
    :param outside_value: the value before the first or after the last endpoint; ``None`` makes
        a query outside the range an error.
    """

    def __init__(
        self,
        endpoints: Sequence[tuple[float, float]],
        interpolation: Callable[[float, float, float], float] = linear_interpolation,
        outside_value: float | None = None,
    ) -> None:
        points = [(t, v) for t, v in endpoints]
        if not points:
            raise RLBaseError("PiecewiseSchedule endpoints=[] is empty; give (t, value) pairs")
        times = [t for t, _ in points]
        if times != sorted(times):
            raise RLBaseError(f"PiecewiseSchedule endpoint times {times} must be sorted ascending")
        self._endpoints = points
        self._interpolation = interpolation
        self._outside_value = outside_value

    def value(self, t: float) -> float:
        """The value at timestep ``t``."""
        pairs = zip(self._endpoints[:-1], self._endpoints[1:], strict=True)
        for (left_t, left), (right_t, right) in pairs:
            if left_t <= t < right_t:
                return self._interpolation(left, right, (t - left_t) / (right_t - left_t))
        # The last endpoint itself belongs to the schedule (a single point is a valid schedule).
        last_t, last = self._endpoints[-1]
        if t == last_t:
            return last
        if self._outside_value is None:
            first_t = self._endpoints[0][0]
            raise RLBaseError(
                f"timestep {t!r} is outside the schedule's range [{first_t}, {last_t}] and "
                "no outside_value was given"
            )
        return self._outside_value


class LinearSchedule:
    """Linear from ``initial_p`` to ``final_p`` over ``schedule_timesteps``, then ``final_p``.

    :param schedule_timesteps: the number of timesteps the change takes.
    :param final_p: the value from ``schedule_timesteps`` on.
    :param initial_p: the value at timestep 0.
    """

    def __init__(self, schedule_timesteps: int, final_p: float, initial_p: float = 1.0) -> None:
        if schedule_timesteps <= 0:
            raise RLBaseError(
                f"LinearSchedule schedule_timesteps={schedule_timesteps!r} must be positive"
            )
        self.schedule_timesteps = schedule_timesteps
        self.final_p = final_p
        self.initial_p = initial_p

    def value(self, t: float) -> float:
        """The value at timestep ``t``."""
        fraction = min(float(t) / self.schedule_timesteps, 1.0)
        return self.initial_p + fraction * (self.final_p - self.initial_p)
