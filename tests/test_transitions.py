"""terminated vs truncated in learning targets (rlbase.common.buffers.transitions), with exact
values: a truncation bootstraps from the episode's own last observation unless gamma == 1."""

from __future__ import annotations

import numpy as np

from rlbase.common.buffers.transitions import (
    bootstraps_truncation,
    final_observations,
    target_dones,
)

TERMINATED = np.array([True, False, False, True])
TRUNCATED = np.array([False, True, False, True])


def test_only_a_discount_below_one_bootstraps_a_truncation():
    assert bootstraps_truncation(0.99) and bootstraps_truncation(0.0)
    assert not bootstraps_truncation(1.0)


def test_target_dones_stop_at_terminations_and_with_gamma_one_at_truncations():
    discounted = target_dones(TERMINATED, TRUNCATED, 0.99)
    undiscounted = target_dones(TERMINATED, TRUNCATED, 1.0)
    assert discounted.dtype == np.float32 and undiscounted.dtype == np.float32
    np.testing.assert_array_equal(discounted, [1.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(undiscounted, [1.0, 1.0, 0.0, 1.0])
    # 0/1 integers from a caller count as booleans
    np.testing.assert_array_equal(target_dones([0, 1], [1, 0], 0.5), [0.0, 1.0])


def test_final_observations_replace_only_finished_rows_that_have_one():
    new_obs = np.arange(8.0).reshape(4, 2)  # rows 1 and 3 already start new episodes
    done = np.array([False, True, False, True])
    infos = [{}, {"final_observation": np.array([-1.0, -2.0])}, {}, {}]
    out = final_observations(new_obs, done, infos)
    np.testing.assert_array_equal(out, [[0, 1], [-1, -2], [4, 5], [6, 7]])
    np.testing.assert_array_equal(new_obs, np.arange(8.0).reshape(4, 2))  # not modified
    assert final_observations(new_obs, np.zeros(4, bool), infos) is new_obs
