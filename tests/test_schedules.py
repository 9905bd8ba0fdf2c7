"""Exact values of every schedule, against the a2c/deepq definitions."""

import pytest

from rlbase.common import schedules
from rlbase.common.errors import RLBaseError


@pytest.mark.parametrize(
    ("name", "elapsed", "expected"),
    [
        ("constant", 0.0, 1.0),
        ("constant", 0.9, 1.0),
        ("linear", 0.0, 1.0),
        ("linear", 0.25, 0.75),
        ("linear", 1.0, 0.0),
        ("middle_drop", 0.2, 0.8),
        ("middle_drop", 0.25, 0.75),  # 1 - p == 0.75 is not below the threshold yet
        ("middle_drop", 0.3, 0.075),
        ("middle_drop", 0.99, 0.075),
        ("double_linear_con", 0.0, 1.0),
        ("double_linear_con", 0.25, 0.5),
        ("double_linear_con", 0.45, 0.125),
        ("double_linear_con", 1.0, 0.125),
        ("double_middle_drop", 0.1, 0.9),
        ("double_middle_drop", 0.5, 0.075),
        ("double_middle_drop", 0.8, 0.125),
    ],
)
def test_shapes(name, elapsed, expected):
    assert schedules.SHAPES[name](elapsed) == pytest.approx(expected)
    # named_schedule takes the fraction *remaining* and scales by the initial value.
    assert schedules.named_schedule(name, 2.0)(1.0 - elapsed) == pytest.approx(2.0 * expected)


def test_scheduler_steps_linear():
    sched = schedules.Scheduler(value=1.0, nvalues=4, schedule="linear")
    assert [sched.value() for _ in range(4)] == pytest.approx([1.0, 0.75, 0.5, 0.25])
    assert sched.value_steps(2) == pytest.approx(0.5)
    assert sched.value() == pytest.approx(0.0)


def test_scheduler_middle_drop_and_callable():
    sched = schedules.Scheduler(value=7e-4, nvalues=100, schedule="middle_drop")
    assert sched.value_steps(10) == pytest.approx(7e-4 * 0.9)
    assert sched.value_steps(50) == pytest.approx(7e-4 * 0.075)
    custom = schedules.Scheduler(value=2.0, nvalues=10, schedule=lambda p: p)
    assert custom.value_steps(5) == pytest.approx(1.0)


def test_scheduler_errors():
    with pytest.raises(RLBaseError, match=r"'cosine'.*double_middle_drop"):
        schedules.Scheduler(1.0, 10, "cosine")
    with pytest.raises(RLBaseError, match="nvalues=0"):
        schedules.Scheduler(1.0, 0, "linear")


def test_get_schedule_fn():
    fn = schedules.get_schedule_fn(3e-4)
    assert fn(1.0) == 3e-4 and fn(0.0) == 3e-4
    assert schedules.get_schedule_fn(5)(0.5) == 5.0
    half = schedules.get_schedule_fn(lambda f: f * 0.5)
    assert half(0.5) == 0.25
    with pytest.raises(RLBaseError, match="'fast'"):
        schedules.get_schedule_fn("fast")


def test_named_and_make_schedule():
    lin = schedules.named_schedule("linear", 3e-4)
    assert lin(1.0) == pytest.approx(3e-4)
    assert lin(0.5) == pytest.approx(1.5e-4)
    assert lin(0.0) == pytest.approx(0.0)
    assert schedules.make_schedule("linear", 3e-4)(0.5) == pytest.approx(1.5e-4)
    assert schedules.make_schedule(0.1)(0.3) == 0.1
    assert schedules.make_schedule(lambda f: 2 * f)(0.25) == 0.5
    with pytest.raises(RLBaseError, match="valid schedules: constant, double_linear_con"):
        schedules.named_schedule("step", 1.0)
    with pytest.raises(RLBaseError, match="needs an initial value"):
        schedules.make_schedule("linear")


def test_constant_schedule():
    sched = schedules.ConstantSchedule(0.02)
    assert sched.value(0) == 0.02 and sched.value(10**9) == 0.02


def test_linear_schedule():
    sched = schedules.LinearSchedule(schedule_timesteps=100, final_p=0.02, initial_p=1.0)
    assert sched.value(0) == pytest.approx(1.0)
    assert sched.value(50) == pytest.approx(0.51)
    assert sched.value(100) == pytest.approx(0.02)
    assert sched.value(1000) == pytest.approx(0.02)
    assert schedules.LinearSchedule(10, 0.5).value(5) == pytest.approx(0.75)
    with pytest.raises(RLBaseError, match="schedule_timesteps=0"):
        schedules.LinearSchedule(0, 0.1)


def test_piecewise_schedule():
    sched = schedules.PiecewiseSchedule([(0, 1.0), (100, 0.1), (200, 0.01)], outside_value=0.01)
    assert sched.value(0) == pytest.approx(1.0)
    assert sched.value(50) == pytest.approx(0.55)
    assert sched.value(100) == pytest.approx(0.1)
    assert sched.value(150) == pytest.approx(0.055)
    assert sched.value(200) == pytest.approx(0.01)
    assert sched.value(10_000) == 0.01
    assert sched.value(-5) == 0.01


def test_piecewise_custom_interpolation():
    step = schedules.PiecewiseSchedule([(0, 1.0), (10, 0.0)], interpolation=lambda left, r, a: left)
    assert step.value(9) == 1.0


def test_piecewise_errors():
    with pytest.raises(RLBaseError, match=r"\[10, 0\] must be sorted"):
        schedules.PiecewiseSchedule([(10, 1.0), (0, 0.5)])
    with pytest.raises(RLBaseError, match="empty"):
        schedules.PiecewiseSchedule([])
    sched = schedules.PiecewiseSchedule([(0, 1.0), (10, 0.0)])
    assert sched.value(10) == 0.0
    with pytest.raises(RLBaseError, match=r"timestep 11 is outside.*\[0, 10\]"):
        sched.value(11)
    with pytest.raises(RLBaseError, match="timestep -1"):
        sched.value(-1)


# --- exact values at the edges (each kills mutants tests/mutation/mutate.py found surviving) --


@pytest.mark.parametrize("name, elapsed, expected", [
    ("middle_drop", 0.25, 0.75),           # exactly at the floor: still linear
    ("double_middle_drop", 0.25, 0.75),    # exactly at the first threshold: still linear
    ("double_middle_drop", 0.75, 0.075),   # exactly at the second threshold: the middle value
])
def test_shapes_at_their_thresholds(name, elapsed, expected):
    assert schedules.SHAPES[name](elapsed) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("text, name, start", [
    ("lin_3e-4", "linear", 3e-4), ("  lin_0.5 ", "linear", 0.5),
    ("middle_drop(0.25)", "middle_drop", 0.25), ("constant(-1)", "constant", -1.0),
])
def test_parse_schedule(text, name, start):
    parsed = schedules.parse_schedule(text)
    assert (parsed.name, parsed.start) == (name, start)
    assert parsed(0.5) == schedules.named_schedule(name, start)(0.5)


@pytest.mark.parametrize("text", ["lin_", "linear", "linear(1e)", "lin_1e", "(0.1)"])
def test_parse_schedule_refuses(text):
    with pytest.raises(RLBaseError, match="schedule"):
        schedules.parse_schedule(text)


def test_named_schedules_equal_only_with_the_same_shape_and_start():
    a = schedules.NamedSchedule("linear", 0.5)
    assert a == schedules.NamedSchedule("linear", 0.5) and hash(a) == hash(
        schedules.NamedSchedule("linear", 0.5))
    assert a != schedules.NamedSchedule("linear", 0.25)
    assert a != schedules.NamedSchedule("constant", 0.5)
    assert a != schedules.NamedSchedule("constant", 1.0) and a != "linear(0.5)"
    assert schedules.NamedSchedule("linear", 1.0) != schedules.NamedSchedule("middle_drop", 0.5)


def test_one_step_schedules_and_negative_sizes():
    assert schedules.Scheduler(2.0, 1, "constant").value() == 2.0
    assert schedules.LinearSchedule(1, final_p=0.0).value(1) == 0.0
    with pytest.raises(RLBaseError):
        schedules.Scheduler(1.0, -1, "constant")
    with pytest.raises(RLBaseError):
        schedules.LinearSchedule(-1, final_p=0.0)


def test_piecewise_segment_ends_belong_to_the_next_segment():
    # A step interpolation (always the left value) shows which segment owns t == right_t.
    steps = schedules.PiecewiseSchedule([(0, 1.0), (10, 2.0), (20, 3.0)],
                                        interpolation=lambda left, right, alpha: left)
    assert [steps.value(t) for t in (0, 9, 10, 19, 20)] == [1.0, 1.0, 2.0, 2.0, 3.0]
    # The last endpoint is found by value (a float equal to an int endpoint), not identity.
    assert schedules.PiecewiseSchedule([(0, 1.0), (10, 2.0), (20, 5.0)]).value(20.0) == 5.0
