"""TrainSchedule, the off-policy family's one rule for random actions and training phases,
with exact values at every edge (SB3's convention: training after ``num_timesteps >
learning_starts``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.loops.train_schedule import TrainSchedule


def schedule(train_freq=1, gradient_steps=1, learning_starts=0, batch_size=1):
    return TrainSchedule(train_freq, gradient_steps, learning_starts, batch_size)


def test_random_actions_until_learning_starts_env_steps():
    s = schedule(learning_starts=3)
    assert [s.warming_up(t) for t in range(5)] == [True, True, True, False, False]
    assert not schedule(learning_starts=0).warming_up(0)


def test_training_starts_only_past_learning_starts_with_something_stored():
    s = schedule(learning_starts=3)
    assert [s.started(t, stored=t) for t in range(6)] == [False] * 4 + [True] * 2
    assert not s.started(10, stored=0)
    assert schedule().started(1, stored=1) and not schedule().started(0, stored=1)


@pytest.mark.parametrize("train_freq, num_envs, counts", [
    (1, 1, [1, 1, 1, 1, 1, 1]),           # every env step
    (3, 1, [0, 0, 1, 0, 0, 1]),           # every third env step
    (2, 4, [2, 2, 2, 2, 2, 2]),           # train_freq below num_envs: several per vector step
    (8, 4, [0, 1, 0, 1, 0, 1]),           # SB3's (2, "step") with 4 envs: every other one
    (3, 2, [0, 1, 1, 0, 1, 1]),           # multiples of 3 among env steps 1-2, 3-4, 5-6, ...
])
def test_phases_count_the_multiples_of_train_freq_in_each_vector_step(train_freq, num_envs,
                                                                      counts):
    s = schedule(train_freq=train_freq)
    steps = [num_envs * (i + 1) for i in range(len(counts))]
    assert [s.phases(t, num_envs, stored=t) for t in steps] == counts
    # Over a whole run: one phase per train_freq env steps, whatever the number of envs.
    assert sum(s.phases(t, num_envs, stored=t) for t in steps) == steps[-1] // train_freq


def test_no_phase_before_the_start_or_without_gradient_steps():
    s = schedule(train_freq=1, learning_starts=4)
    assert [s.phases(t, 2, stored=t) for t in (2, 4, 6)] == [0, 0, 2]
    assert schedule(gradient_steps=0).phases(10, 1, stored=10) == 0
    assert schedule().phases(10, 1, stored=0) == 0


@pytest.mark.parametrize("field, bad", [("train_freq", 0), ("gradient_steps", -1),
                                        ("learning_starts", -1), ("batch_size", 0),
                                        ("train_freq", True), ("batch_size", 2.0)])
def test_bad_counts_are_refused_by_name(field, bad):
    kwargs = {"train_freq": 1, "gradient_steps": 1, "learning_starts": 0, "batch_size": 1,
              field: bad}
    kind = "a positive integer" if field in ("train_freq", "batch_size") else "an integer >= 0"
    with pytest.raises(RLBaseError, match=rf"^{field} must be {kind}, got {bad!r}$"):
        TrainSchedule(**kwargs)


def test_the_smallest_allowed_counts_and_numpy_integers_are_taken():
    s = TrainSchedule(np.int64(1), 0, 0, np.int32(1))
    assert (s.train_freq, s.gradient_steps, s.learning_starts, s.batch_size) == (1, 0, 0, 1)


def test_a_schedule_cannot_be_changed_after_its_checks():
    with pytest.raises(dataclasses.FrozenInstanceError):
        schedule().train_freq = 0
