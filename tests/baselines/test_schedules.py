"""Port of baselines/common/tests/test_schedules.py: rlbase.common.schedules' timestep
schedules give Baselines' values (same points, same expectations)."""

import numpy as np

from rlbase.common.schedules import ConstantSchedule, PiecewiseSchedule


def test_piecewise_schedule():
    schedule = PiecewiseSchedule([(-5, 100), (5, 200), (10, 50), (100, 50), (200, -50)],
                                 outside_value=500)
    expected = {-10: 500, 0: 150, 5: 200, 9: 80, 50: 50, 80: 50, 150: 0, 175: -25, 201: 500,
                500: 500, 200 - 1e-10: -50}
    for t, value in expected.items():
        assert np.isclose(schedule.value(t), value), (t, schedule.value(t), value)


def test_constant_schedule():
    schedule = ConstantSchedule(5)
    for t in range(-100, 100):
        assert np.isclose(schedule.value(t), 5)
