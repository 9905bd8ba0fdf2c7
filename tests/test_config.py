"""rlbase.common.config: types, ranges, other spellings and their units, saved values."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import FrozenInstanceError, dataclass
from typing import Any, ClassVar

import pytest

from rlbase.common.config import AlgorithmConfig, OtherName, describe, param, parameter_table
from rlbase.common.errors import RLBaseError
from rlbase.common.schedules import NamedSchedule, parse_schedule


def _per_env(value: Any, given: Any, num_envs: int) -> int:
    return int(value) * num_envs


@dataclass(frozen=True)
class ToyConfig(AlgorithmConfig):
    algorithm: ClassVar[str] = "toy"
    sb3_fixed: ClassVar[dict[str, Any]] = {**AlgorithmConfig.sb3_fixed, "use_sde": False}

    steps: int = param(8, "env steps per update", unit="env steps", low=1, sb3="n_steps",
                       deprecated=[OtherName("steps_per_env", _per_env, "now summed over envs")],
                       architecture=True)
    rate: float | Callable[[float], float] = param(0.1, "a rate", low=0, low_open=True,
                                                   sb3="learning_rate")
    other_rate: float = param(0.2, "another rate", low=0, low_open=True, sb3="learning_rate")
    decay: float = param(0.9, "a decay", low=0, high=1, deprecated=["alpha"])
    clip: float | None = param(None, "a clip (None: none)", low=0, low_open=True)
    kind: str = param("a", "a kind", choices=("a", "b"))
    flag: bool = param(True, "a flag")
    sizes: tuple[int, ...] = param((64, 64), "layer widths")


def test_types_are_checked_and_coerced():
    c = ToyConfig(steps=1e3, rate=1, sizes=[3, 4])
    assert c.steps == 1000 and type(c.steps) is int
    assert c.rate == 1.0 and type(c.rate) is float
    assert c.sizes == (3, 4)
    with pytest.raises(RLBaseError, match="toy: steps must be int, got 2.5"):
        ToyConfig(steps=2.5)
    with pytest.raises(RLBaseError, match="toy: flag must be bool, got 1"):
        ToyConfig(flag=1)
    with pytest.raises(RLBaseError, match="toy: steps must be int, got True"):
        ToyConfig(steps=True)
    with pytest.raises(RLBaseError, match="toy: clip must be float or None, got 'x'"):
        ToyConfig(clip="x")


def test_ranges_and_choices_are_one_line_errors():
    with pytest.raises(RLBaseError, match=r"^toy: steps must be >= 1, got 0$"):
        ToyConfig(steps=0)
    with pytest.raises(RLBaseError, match=r"^toy: rate must be > 0, got 0.0$"):
        ToyConfig(rate=0)
    with pytest.raises(RLBaseError, match=r"^toy: decay must be in \[0, 1\], got 1.5$"):
        ToyConfig(decay=1.5)
    with pytest.raises(RLBaseError, match=r"^toy: kind must be one of 'a', 'b', got 'c'$"):
        ToyConfig(kind="c")
    with pytest.raises(RLBaseError, match="rate must be > 0, got a schedule starting at -1"):
        ToyConfig(rate=lambda frac: -1.0)


def test_frozen():
    with pytest.raises(FrozenInstanceError):
        ToyConfig().steps = 3  # type: ignore[misc]


def test_schedules_from_text_round_trip():
    c = ToyConfig(rate="lin_0.5")
    assert isinstance(c.rate, NamedSchedule)
    assert c.rate(1.0) == 0.5 and c.rate(0.5) == 0.25 and c.rate(0.0) == 0.0
    again = ToyConfig(rate=repr(c.rate))  # what a saved model records: linear(0.5)
    assert again.rate(0.5) == 0.25
    assert parse_schedule("constant(0.3)")(0.1) == pytest.approx(0.3)
    with pytest.raises(RLBaseError, match="rate must be"):
        ToyConfig(rate="fast")


def test_other_spellings_convert_and_deprecated_ones_warn_at_the_callers_line():
    c = ToyConfig.build({"n_steps": 16}, num_envs=4)
    assert c.steps == 16  # SB3's name, same unit
    with pytest.warns(DeprecationWarning, match="'steps_per_env' is deprecated, use 'steps' "
                                                r"\(now summed over envs\)") as record:
        c = ToyConfig.build({"steps_per_env": 16}, num_envs=4)
    assert c.steps == 64
    assert record[0].filename == __file__  # the user's line, not rlbase's
    with pytest.warns(DeprecationWarning, match="'alpha' is deprecated, use 'decay'"):
        assert ToyConfig.build({"alpha": 0.5}).decay == 0.5


def test_one_sb3_name_can_set_two_fields():
    c = ToyConfig.build({"learning_rate": 0.01})
    assert c.rate == 0.01 and c.other_rate == 0.01


def test_unknown_twice_and_fixed_names():
    with pytest.raises(RLBaseError, match="toy has no parameter 'nope'; valid: "):
        ToyConfig.build({"nope": 1})
    with pytest.raises(RLBaseError, match="steps is given twice"):
        ToyConfig.build({"n_steps": 4, "steps": 4})
    ToyConfig.build({"use_sde": False, "device": "cpu"})
    with pytest.raises(RLBaseError, match="use_sde must be False"):
        ToyConfig.build({"use_sde": True})


def test_build_over_a_base_and_split():
    base = ToyConfig(steps=4).to_dict()
    assert ToyConfig.build({"decay": 0.5}, base=base).steps == 4
    mine, rest = ToyConfig.split({"n_steps": 2, "num_layers": 3, "alpha": 0.1})
    assert mine == {"n_steps": 2, "alpha": 0.1} and rest == {"num_layers": 3}


def test_saved_values_convert_old_spellings_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        saved = ToyConfig.from_saved({"alpha": 0.3, "steps": 5, "gone": 1, "rate": "<fn>"},
                                     unusable=("rate",))
    assert saved == {"decay": 0.3, "steps": 5}
    assert ToyConfig.architecture() == ("steps",)


def test_docs_rows():
    rows = {r["name"]: r for r in describe(ToyConfig)}
    assert rows["steps"]["unit"] == "env steps" and rows["steps"]["range"] == ">= 1"
    assert rows["steps"]["sb3"] == "n_steps" and rows["steps"]["deprecated"] == "steps_per_env"
    assert rows["decay"]["range"] == "in [0, 1]" and rows["kind"]["range"] == "'a', 'b'"
    assert "| `rate` | float or a function of the progress remaining | `0.1` |" in \
        parameter_table(ToyConfig)


@pytest.mark.parametrize("alg", ["dqn", "ddpg", "sac"])
def test_gradient_steps_minus_one_is_train_freq_in_every_off_policy_algorithm(alg):
    # One rule (OffPolicyConfig.__post_init__ in rlbase.common.config), SB3's meaning: -1 is one
    # gradient step per env step collected; 0 collects only.
    from rlbase.registry import config_class

    config = config_class(alg)
    assert config.build({"gradient_steps": -1, "train_freq": (4, "step")},
                        num_envs=2).gradient_steps == 8
    assert config.build({"gradient_steps": -1, "train_freq": 3}, num_envs=1).gradient_steps == 3
    assert config.build({"gradient_steps": 0}, num_envs=1).gradient_steps == 0
    with pytest.raises(RLBaseError, match="gradient_steps"):
        config.build({"gradient_steps": -2}, num_envs=1)
