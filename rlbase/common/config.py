"""One typed configuration per algorithm: each parameter declared once, with its type, unit,
default, allowed range, one-line doc and the other names it is accepted under.

An algorithm's ``config.py`` is a frozen dataclass built on :class:`AlgorithmConfig`::

    @dataclass(frozen=True)
    class PPOConfig(AlgorithmConfig):
        nsteps: int = param(2048, "env steps per env per update", unit="env steps per env",
                            low=1, sb3="n_steps", architecture=True)

``learn()`` takes the fields as keyword arguments (their defaults are the fields'), and the
CLI's flags, ``--help``, the docs tables, the classes' names (rlbase's and Stable-Baselines3's),
the range checks, the saved model's metadata and the resume state all read the fields.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import types
import typing
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, ClassVar, TypeVar

from rlbase.common.arg_types import parse_policy_kwargs
from rlbase.common.buffers.her_replay_buffer import her_kwargs
from rlbase.common.errors import RLBaseError
from rlbase.common.precision import PRECISION_DOC, PRECISIONS
from rlbase.common.schedules import SHAPES, parse_schedule

# A conversion of another spelling's value: ``convert(value, given, num_envs)`` -> the field's
# value (``given``: every argument as passed, under any spelling).
Convert = Callable[[Any, Mapping[str, Any], int], Any]

_RLBASE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class OtherName:
    """Another name a field is accepted under: a deprecated rlbase/Baselines spelling (with a
    DeprecationWarning) or Stable-Baselines3's name (silently), converted to the field's unit
    by ``convert`` when the meaning differs."""

    name: str
    convert: Convert | None = None
    note: str = ""

    def value(self, value: Any, given: Mapping[str, Any], num_envs: int) -> Any:
        return self.convert(value, given, num_envs) if self.convert is not None else value


def param(default: Any, doc: str, *, unit: str = "", low: float | None = None,
          high: float | None = None, low_open: bool = False, high_open: bool = False,
          choices: Iterable[Any] | None = None, sb3: str | OtherName | None = None,
          deprecated: Iterable[str | OtherName] = (), architecture: bool = False) -> Any:
    """A config field.

    doc: one line saying what it does; unit: what a number counts (env steps, updates, ...);
    low/high: the allowed range (inclusive unless ``*_open``); choices: the allowed values;
    sb3: Stable-Baselines3's name for it; deprecated: old spellings, still accepted with a
    DeprecationWarning; architecture: it shapes the model's variables, so a saved model's value
    is used when loading it.
    """
    def other(n: str | OtherName) -> OtherName:
        return n if isinstance(n, OtherName) else OtherName(n)

    metadata = {"doc": doc, "unit": unit, "low": low, "high": high, "low_open": low_open,
                "high_open": high_open, "choices": tuple(choices) if choices is not None else None,
                "sb3": other(sb3) if sb3 is not None else None,
                "deprecated": tuple(other(n) for n in deprecated),
                "architecture": architecture}
    return field(default=default, metadata=metadata)


def redefault(config: Any, name: str, default: Any) -> Any:
    """``config``'s field ``name`` (its doc, unit, range and other names) with another default:
    for an algorithm built on another's parameters whose published settings differ (GAIL's
    trust-region step is TRPO's, with Baselines' GAIL settings)."""
    return field(default=default, metadata=config.__dataclass_fields__[name].metadata)


def caller_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside rlbase's package (the user's line)."""
    frame = sys._getframe(1)
    level = 1
    inside = _RLBASE_DIR + os.sep
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(inside):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def warn_deprecated(algorithm: str, old: str, new: str, note: str = "") -> None:
    """The one-line warning a deprecated spelling gets, pointing at the caller's line."""
    extra = f" ({note})" if note else ""
    warnings.warn(f"{algorithm}: '{old}' is deprecated, use '{new}'{extra}", DeprecationWarning,
                  stacklevel=caller_stacklevel())


ConfigT = TypeVar("ConfigT", bound="AlgorithmConfig")


def _type_name(hint: Any) -> str:
    if hint is type(None):
        return "None"
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(hint))
    if origin is typing.Literal:
        return " or ".join(repr(a) for a in typing.get_args(hint))
    if origin is Callable:
        return "a function of the progress remaining"
    if origin is tuple:
        return "a tuple of " + _type_name(typing.get_args(hint)[0])
    return getattr(hint, "__name__", str(hint))


class _Mismatch(Exception):
    pass


def _coerce(value: Any, hint: Any) -> Any:
    """``value`` as type ``hint`` (an int for a float, 1e5 for an int, a list for a tuple),
    or :class:`_Mismatch`."""
    if hint is Any:
        return value
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        for member in typing.get_args(hint):
            try:
                return _coerce(value, member)
            except _Mismatch:
                continue
        raise _Mismatch
    if origin is typing.Literal:
        if value in typing.get_args(hint):
            return value
        raise _Mismatch
    if origin is Callable or hint is Callable:
        if isinstance(value, str):  # the zoo's "lin_3e-4", or a saved "linear(0.0003)"
            try:
                return parse_schedule(value)
            except RLBaseError:
                raise _Mismatch from None
        if callable(value) and not isinstance(value, type):
            return value
        raise _Mismatch
    if origin is tuple:
        if not isinstance(value, (tuple, list)):
            raise _Mismatch
        (item,) = typing.get_args(hint)[:1]
        return tuple(_coerce(v, item) for v in value)
    if hint is int:
        if isinstance(value, bool):
            raise _Mismatch
        if isinstance(value, Integral):  # exactly (through a float, 2**63 - 1 became 2**63)
            return int(value)
        if isinstance(value, Real) and float(value).is_integer():
            return int(float(value))
        raise _Mismatch
    if hint is float:
        if isinstance(value, Real) and not isinstance(value, bool):
            return float(value)
        raise _Mismatch
    if isinstance(hint, type) and isinstance(value, hint):  # bool, str, None, dict, ...
        return value
    raise _Mismatch


def sb3_constant_lr(learning_rate: Any, given: Mapping[str, Any], num_envs: int) -> str:
    """SB3's ``learning_rate``, a number, is constant: the ``lrschedule`` it sets (a
    function is a schedule of its own, which ``lrschedule`` does not touch)."""
    return "constant"


def learning_rate_field(default: float, optimizer: str, *, sb3: bool = True) -> Any:
    """An ``lr`` field: the ``optimizer``'s learning rate, a number or a function of the
    fraction of training remaining (SB3's ``learning_rate`` unless ``sb3=False``)."""
    return param(default, f"{optimizer} learning rate, or a function of the fraction of "
                 "training remaining (1 -> 0)", low=0, low_open=True,
                 sb3="learning_rate" if sb3 else None)


def lr_decay_field(*, sb3: bool = True) -> Any:
    """An ``lrschedule`` field: how a float lr decays (SB3's number ``learning_rate`` sets it
    constant unless ``sb3=False``)."""
    return param("linear", "how a float lr decays over training", choices=tuple(SHAPES),
                 sb3=OtherName("learning_rate", sb3_constant_lr) if sb3 else None)


#: Stable-Baselines3 options of every on-policy algorithm that rlbase has only one value of
SB3_ON_POLICY_FIXED: dict[str, Any] = {"use_sde": False, "sde_sample_freq": -1,
                                       "rollout_buffer_class": None,
                                       "rollout_buffer_kwargs": None}
#: ... and of every off-policy one (one-step returns)
SB3_OFF_POLICY_FIXED: dict[str, Any] = {"n_steps": 1, "optimize_memory_usage": False}


@dataclass(frozen=True)
class AlgorithmConfig:
    """The parameters every algorithm shares; an algorithm's config adds its own."""

    #: the algorithm's name (rlbase.<algorithm>)
    algorithm: ClassVar[str] = ""
    #: Stable-Baselines3 names accepted only with the one value rlbase always uses
    sb3_fixed: ClassVar[dict[str, Any]] = {"device": ("auto", "cpu", "cuda", "gpu"),
                                           "stats_window_size": 100}
    #: why precision='mixed_bfloat16' is refused ('': it is supported)
    mixed_precision_refused: ClassVar[str] = ""
    #: what measurements showed going wrong with precision='mixed_bfloat16' ('': nothing);
    #: accepted, with a warning saying so
    mixed_precision_caution: ClassVar[str] = ""

    seed: int | None = param(None, "seeds python, numpy, TensorFlow and the envs (None: "
                             "unseeded)")
    eval_freq: int = param(0, "evaluate on eval_env every this many env steps (0: at every log "
                           "row when eval_env is given); logged as eval/mean_reward, the best "
                           "model written to <log dir>/best_model.zip", unit="env steps", low=0)
    eval_episodes: int = param(5, "episodes per evaluation", unit="episodes", low=1)
    checkpoint_interval: int = param(0, "write a resumable checkpoint every this many env steps "
                                     "(0: never; under MPI rank 0 writes)", unit="env steps",
                                     low=0)
    precision: str = param("float32", PRECISION_DOC, choices=PRECISIONS)

    # -- checks ----------------------------------------------------------------------------------
    def __post_init__(self) -> None:
        hints = type(self).type_hints()
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            try:
                coerced = _coerce(value, hints[f.name])
            except _Mismatch:
                raise RLBaseError(f"{self.algorithm}: {f.name} must be "
                                  f"{_type_name(hints[f.name])}, got {value!r}") from None
            if coerced is not value:
                object.__setattr__(self, f.name, coerced)
            self._check_range(f, coerced)
        if self.precision != "float32" and self.mixed_precision_refused:
            raise RLBaseError(f"{self.algorithm}: precision={self.precision!r} is not supported "
                              f"({self.mixed_precision_refused}); use precision='float32'")
        self.check()

    def check(self) -> None:
        """Checks across fields (an algorithm's config overrides this)."""

    def _check_range(self, f: dataclasses.Field, value: Any) -> None:
        meta = f.metadata
        choices = meta.get("choices")
        if choices is not None and value not in choices:
            raise RLBaseError(f"{self.algorithm}: {f.name} must be one of "
                              f"{', '.join(repr(c) for c in choices)}, got {value!r}")
        number = value(1.0) if callable(value) else value
        if isinstance(number, bool) or not isinstance(number, Real):
            return
        low, high = meta.get("low"), meta.get("high")
        too_low = low is not None and (number <= low if meta.get("low_open") else number < low)
        too_high = high is not None and (number >= high if meta.get("high_open")
                                         else number > high)
        if too_low or too_high:
            got = f"a schedule starting at {number!r}" if callable(value) else repr(value)
            raise RLBaseError(f"{self.algorithm}: {f.name} must be {range_text(f)}, got {got}")

    # -- the fields ------------------------------------------------------------------------------
    @classmethod
    def type_hints(cls) -> dict[str, Any]:
        cached = cls.__dict__.get("_hints")
        if cached is None:
            # Each class's annotations in its own module's names: a config built on another
            # module's fields (SAC's and TQC's on rlbase.common.families) needs no imports of
            # the types those fields name.
            cached = typing.get_type_hints(cls)
            type.__setattr__(cls, "_hints", cached)
        return cached

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def architecture(cls) -> tuple[str, ...]:
        """Fields that shape the variables: a saved model's values win when loading it."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get("architecture"))

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        return {f.name: f.default for f in dataclasses.fields(cls)}

    @classmethod
    def _spellings(cls) -> list[tuple[str, OtherName, bool]]:
        out = []
        for f in dataclasses.fields(cls):
            for rule in f.metadata.get("deprecated", ()):
                out.append((f.name, rule, True))
            sb3 = f.metadata.get("sb3")
            if sb3 is not None and sb3.name != f.name:
                out.append((f.name, sb3, False))
        return out

    @classmethod
    def _targets(cls, spelling: str) -> list[tuple[str, OtherName, bool]]:
        return [s for s in cls._spellings() if s[1].name == spelling]

    @classmethod
    def rules_of(cls, spelling: str) -> list[tuple[str, OtherName]]:
        """The fields another spelling sets, each with the rule that converts it."""
        return [(name, rule) for name, rule, _ in cls._targets(spelling)]

    @classmethod
    def fields_of(cls, spelling: str) -> list[str]:
        """The fields another spelling sets (none for a field's own name)."""
        return [name for name, _, _ in cls._targets(spelling)]

    @classmethod
    def _own_name(cls, name: str, value: Any, given: Mapping[str, Any], num_envs: int) -> Any:
        """``value`` of field ``name`` with its SB3 rule applied when SB3 uses the field's own
        name with a conversion (SB3's forms, e.g. ``train_freq=(4, "step")``, converted;
        rlbase's pass unchanged)."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        sb3 = fields[name].metadata.get("sb3") if name in fields else None
        if sb3 is None or sb3.name != name or sb3.convert is None:
            return value
        try:
            return sb3.value(value, given, num_envs)
        except RLBaseError as exc:
            raise RLBaseError(f"{cls.algorithm}: {name}={value!r}: {exc}") from None

    @classmethod
    def accepts(cls, name: str) -> bool:
        """Whether ``name`` is a field, another spelling of one, or an SB3 fixed option."""
        return name in cls.field_names() or bool(cls._targets(name)) or name in cls.sb3_fixed

    @classmethod
    def accepted_names(cls) -> list[str]:
        return sorted(set(cls.field_names()) | {s[1].name for s in cls._spellings()}
                      | set(cls.sb3_fixed))

    # -- building --------------------------------------------------------------------------------
    @classmethod
    def build(cls: type[ConfigT], given: Mapping[str, Any], num_envs: int = 1, *,
              base: Mapping[str, Any] | None = None, warn: bool = True) -> ConfigT:
        """The config from ``given`` (fields under any accepted spelling, converted to the
        field's unit for ``num_envs`` envs) over ``base`` (field values, e.g. learn()'s own or
        a saved model's). An unknown name, a name given twice, a bad type or an out-of-range
        value is a one-line error."""
        context = cls._context(given, base)
        values = {k: cls._own_name(k, v, context, num_envs) for k, v in (base or {}).items()}
        names = set(cls.field_names())
        set_by: dict[str, str] = {}
        for spelling, value in given.items():
            if spelling in names:
                targets = [(spelling, cls._own_name(spelling, value, context, num_envs))]
            elif cls._targets(spelling):
                targets = []
                for name, rule, deprecated in cls._targets(spelling):
                    if deprecated and warn:
                        warn_deprecated(cls.algorithm, spelling, name, rule.note)
                    try:
                        targets.append((name, rule.value(value, context, num_envs)))
                    except (RLBaseError, ValueError, TypeError, ZeroDivisionError) as exc:
                        # a conversion's arithmetic on a bad value (n_steps='abc') is the
                        # user's mistake, said in one line
                        raise RLBaseError(f"{cls.algorithm}: {spelling}={value!r}: {exc}") \
                            from None
            elif spelling in cls.sb3_fixed:
                allowed = cls.sb3_fixed[spelling]
                allowed = allowed if isinstance(allowed, tuple) else (allowed,)
                if value not in allowed:
                    raise RLBaseError(f"{cls.algorithm}: {spelling} must be "
                                      f"{' or '.join(repr(a) for a in allowed)} (what rlbase "
                                      f"does), got {value!r}")
                continue
            else:
                raise RLBaseError(f"{cls.algorithm} has no parameter {spelling!r}; valid: "
                                  f"{', '.join(cls.accepted_names())}")
            for name, converted in targets:
                if name in set_by:
                    raise RLBaseError(f"{cls.algorithm}: {name} is given twice (as "
                                      f"{set_by[name]} and {spelling})")
                set_by[name] = spelling
                values[name] = converted
        unknown = set(values) - names
        if unknown:
            raise RLBaseError(f"{cls.algorithm} has no parameter "
                              f"{', '.join(repr(u) for u in sorted(unknown))}")
        config = cls(**values)
        if warn and config.precision != "float32" and cls.mixed_precision_caution:
            warnings.warn(f"{cls.algorithm}: precision={config.precision!r} "
                          f"{cls.mixed_precision_caution}; precision='float32' is the safe "
                          "choice (rlbase/docs/precision.md)", UserWarning,
                          stacklevel=caller_stacklevel())
        return config

    @classmethod
    def _context(cls, given: Mapping[str, Any], base: Mapping[str, Any] | None
                 ) -> dict[str, Any]:
        """What a spelling's conversion reads the other settings from: the field values of
        ``base`` (learn()'s keywords, a hyperparameter row), under what ``given`` sets, plain
        renames (SB3's ``n_steps``) also under the field's own name, so that ``batch_size=16``
        is converted against the ``nsteps`` actually used, whichever way it was passed."""
        context = dict(base or {})
        for spelling, value in given.items():
            context[spelling] = value
            for name, rule, _ in cls._targets(spelling):
                if rule.convert is None:
                    context[name] = value
        return context

    @classmethod
    def split(cls, kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """``kwargs`` into (the config's names under any spelling, the rest)."""
        mine = {k: v for k, v in kwargs.items() if cls.accepts(k)}
        return mine, {k: v for k, v in kwargs.items() if k not in mine}

    @classmethod
    def from_saved(cls: type[ConfigT], saved: Mapping[str, Any],
                   unusable: Iterable[str] = ()) -> dict[str, Any]:
        """A saved model's field values (older files' spellings converted silently; values
        that could not be saved, such as functions, and names no longer used are left out)."""
        unusable = set(unusable)
        names = set(cls.field_names())
        out: dict[str, Any] = {}
        for key, value in saved.items():
            if key in unusable:
                continue
            if key in names:
                out[key] = value
                continue
            for name, rule, _ in cls._targets(key):
                if name not in saved:
                    out[name] = rule.value(value, saved, 1)
        return out

    def replace(self: ConfigT, **changes: Any) -> ConfigT:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def range_text(f: dataclasses.Field) -> str:
    """The allowed range as text: ``> 0``, ``>= 1``, ``in [0, 1]``, ``in (0, 1]`` ('' if any)."""
    meta = f.metadata
    low, high = meta.get("low"), meta.get("high")
    if low is None and high is None:
        return ""
    if high is None:
        return f"{'>' if meta.get('low_open') else '>='} {low:g}"
    if low is None:
        return f"{'<' if meta.get('high_open') else '<='} {high:g}"
    left, right = "(" if meta.get("low_open") else "[", ")" if meta.get("high_open") else "]"
    return f"in {left}{low:g}, {high:g}{right}"


def describe(config: type[AlgorithmConfig]) -> list[dict[str, str]]:
    """Each field as text: name, type, default, unit, range, other names, doc."""
    hints = config.type_hints()
    rows = []
    for f in dataclasses.fields(config):
        meta = f.metadata
        choices = meta.get("choices")
        allowed = ", ".join(repr(c) for c in choices) if choices else range_text(f)
        sb3 = meta.get("sb3")
        rows.append({"name": f.name, "type": _type_name(hints[f.name]),
                     "default": repr(f.default), "unit": meta.get("unit", ""),
                     "range": allowed, "sb3": sb3.name if sb3 is not None else "",
                     "deprecated": ", ".join(r.name for r in meta.get("deprecated", ())),
                     "doc": meta.get("doc", "")})
    return rows


def parameter_table(config: type[AlgorithmConfig]) -> str:
    """The docs' table of a config's fields."""
    rows = ["| parameter | type | default | unit | allowed | SB3 name | meaning |",
            "|---|---|---|---|---|---|---|"]
    for r in describe(config):
        meaning = r["doc"] + (f" (deprecated: {r['deprecated']})" if r["deprecated"] else "")
        cells = [f"`{r['name']}`", r["type"], f"`{r['default']}`", r["unit"], r["range"],
                 f"`{r['sb3']}`" if r["sb3"] else "", meaning]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


def _replay_buffer_class(value: Any, given: Mapping[str, Any], num_envs: int) -> Any:
    """SB3's ``replay_buffer_class=HerReplayBuffer`` (rlbase's class, or SB3's by name) ->
    ``'her'``; rlbase's names pass unchanged."""
    if isinstance(value, type):
        if value.__name__ == "HerReplayBuffer":
            return "her"
        raise RLBaseError(f"replay_buffer_class must be HerReplayBuffer, 'her' or None, got "
                          f"{value.__name__}")
    if isinstance(value, str) and value.lower() in ("her", "herreplaybuffer"):
        return "her"
    return value


def _replay_buffer_kwargs(value: Any, given: Mapping[str, Any], num_envs: int) -> Any:
    """The zoo's and the CLI's text form ``"dict(n_sampled_goal=4)"`` (or a dict literal) ->
    a dict; a mapping passes unchanged."""
    if isinstance(value, str):
        return parse_policy_kwargs(value, "replay_buffer_kwargs")
    return value


def sb3_train_freq(value: Any, given: Mapping[str, Any], num_envs: int) -> Any:
    """SB3's forms of ``train_freq``: ``(n, "step")`` is n vector steps, ``n * num_envs`` env
    steps; a plain int is taken as rlbase's env steps (summed over envs); ``"episode"`` units
    are refused."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2 or value[1] != "step":
            raise RLBaseError("rlbase counts train_freq in env steps; give n or (n, 'step')")
        return int(value[0]) * num_envs
    return value


#: the ``sb3=`` rule of an off-policy config's ``train_freq`` field
SB3_TRAIN_FREQ = OtherName("train_freq", sb3_train_freq, "(n, 'step') -> n * num_envs")
GRADIENT_STEPS_DOC = ("gradient steps per training phase, run in one compiled call with the "
                      "next step's acting (0: no training; -1, as in SB3: one per env step "
                      "collected, so train_freq)")


@dataclass(frozen=True)
class OffPolicyConfig(AlgorithmConfig):
    """The parameters every off-policy algorithm (DQN, SAC, DDPG/TD3) shares: the replay
    buffer's class; and what each of their ``train_freq`` / ``gradient_steps`` fields means
    (SB3_TRAIN_FREQ, GRADIENT_STEPS_DOC; SB3's ``gradient_steps=-1`` resolved here)."""

    sb3_fixed: ClassVar[dict[str, Any]] = {**AlgorithmConfig.sb3_fixed, **SB3_OFF_POLICY_FIXED}

    replay_buffer_class: str | None = param(
        None, "'her': Hindsight Experience Replay (rlbase.HerReplayBuffer, for goal envs; "
        "--her on the command line); None: the plain replay buffer",
        choices=(None, "her"),
        sb3=OtherName("replay_buffer_class", _replay_buffer_class, "HerReplayBuffer -> 'her'"))
    replay_buffer_kwargs: dict | None = param(
        None, "the HER buffer's arguments: n_sampled_goal (4), goal_selection_strategy "
        "('future', 'final' or 'episode') and copy_info_dict (False), as SB3's",
        sb3=OtherName("replay_buffer_kwargs", _replay_buffer_kwargs, "dict(...) text -> dict"))

    def __post_init__(self) -> None:
        super().__post_init__()
        # SB3's gradient_steps=-1: one gradient step per env step collected, so train_freq
        # (both fields are each subclass's, with its own default)
        if getattr(self, "gradient_steps", None) == -1:
            object.__setattr__(self, "gradient_steps", self.__dict__["train_freq"])

    def check(self) -> None:
        super().check()
        kwargs = self.replay_buffer_kwargs
        if self.replay_buffer_class is None:
            if kwargs:
                raise RLBaseError(f"{self.algorithm}: replay_buffer_kwargs must be None without "
                                  f"replay_buffer_class='her' (the plain buffer takes none), "
                                  f"got {kwargs!r}")
            return
        object.__setattr__(self, "replay_buffer_kwargs", her_kwargs(kwargs))
