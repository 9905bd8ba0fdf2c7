"""RunningMeanStd agrees with numpy over all the batches it has seen."""

from __future__ import annotations

import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.running_mean_std import RunningMeanStd


@pytest.mark.parametrize("shape", [(), (3,), (2, 2)])
def test_matches_numpy_over_concatenated_batches(shape):
    rng = np.random.default_rng(0)
    batches = [rng.normal(5.0, 3.0, size=(n, *shape)) for n in (1, 7, 100, 3)]
    rms = RunningMeanStd(epsilon=1e-12, shape=shape)
    for batch in batches:
        rms.update(batch)
    data = np.concatenate(batches)
    np.testing.assert_allclose(rms.mean, data.mean(axis=0), rtol=1e-9)
    np.testing.assert_allclose(rms.var, data.var(axis=0), rtol=1e-6)
    assert rms.count == pytest.approx(len(data))


def test_stays_accurate_with_large_offset():
    rng = np.random.default_rng(1)
    batches = [1e8 + rng.normal(size=(1000,)) for _ in range(20)]
    rms = RunningMeanStd(epsilon=1e-30)  # the prior pseudo-sample sits at 0, 1e8 away
    for batch in batches:
        rms.update(batch)
    np.testing.assert_allclose(rms.var, np.concatenate(batches).var(), rtol=1e-4)


def test_empty_batch_and_bad_shape():
    rms = RunningMeanStd(shape=(2,))
    rms.update(np.zeros((0, 2)))
    assert rms.count == pytest.approx(1e-4)
    with pytest.raises(RLBaseError, match="does not fit"):
        rms.update(np.zeros((4, 3)))


def test_state_dict_round_trip():
    rms = RunningMeanStd(shape=(3,))
    rms.update(np.random.default_rng(2).normal(size=(10, 3)))
    other = RunningMeanStd(shape=(3,))
    other.load_state_dict(rms.state_dict())
    np.testing.assert_array_equal(other.mean, rms.mean)
    np.testing.assert_array_equal(other.var, rms.var)
    assert other.count == rms.count
    with pytest.raises(RLBaseError, match="expected"):
        RunningMeanStd(shape=(4,)).load_state_dict(rms.state_dict())


class _TwinRanksComm:
    """Stands in for an mpi4py communicator of 2 ranks that both hold the same batch."""

    def Get_size(self) -> int:  # mpi4py's method names
        return 2

    def Allreduce(self, send: np.ndarray, recv: np.ndarray) -> None:
        recv[...] = 2 * send


def test_pooled_update_combines_ranks():
    rng = np.random.default_rng(3)
    batches = [rng.normal(2.0, 4.0, size=(n, 2)) for n in (5, 50)]
    pooled = RunningMeanStd(epsilon=1e-12, shape=(2,), comm=_TwinRanksComm())
    for batch in batches:
        pooled.update(batch)
    # Both ranks' data: every batch twice.
    data = np.concatenate([b for batch in batches for b in (batch, batch)])
    np.testing.assert_allclose(pooled.mean, data.mean(axis=0), rtol=1e-9)
    np.testing.assert_allclose(pooled.var, data.var(axis=0), rtol=1e-9)
    assert pooled.count == pytest.approx(len(data))


def test_an_empty_batch_changes_nothing_alone_or_pooled():
    for comm in (None, _TwinRanksComm()):
        rms = RunningMeanStd(shape=(3,), comm=comm)
        rms.update(np.ones((4, 3)))
        before = rms.state_dict()
        rms.update(np.zeros((0, 3)))  # every rank empty: nothing to pool
        after = rms.state_dict()
        for key in before:
            np.testing.assert_array_equal(after[key], before[key])
        np.testing.assert_array_equal(rms.std, np.sqrt(rms.var))


def test_pooled_update_of_three_wide_samples():
    # 3 features: the squared sums sit at [3:6] of the pooled vector (2 * size, not 2 + size).
    batch = np.random.default_rng(4).normal(size=(6, 3))
    pooled = RunningMeanStd(epsilon=1e-12, shape=(3,), comm=_TwinRanksComm())
    pooled.update(batch)
    np.testing.assert_allclose(pooled.var, np.concatenate([batch, batch]).var(axis=0), rtol=1e-9)


@pytest.mark.parametrize("mean_shape, var_shape", [((4,), (3,)), ((3,), (2,)), ((3,), (4,)),
                                                   ((2,), (3,))])
def test_a_state_of_another_shape_is_refused(mean_shape, var_shape):
    state = {"mean": np.zeros(mean_shape), "var": np.ones(var_shape), "count": np.float64(2)}
    with pytest.raises(RLBaseError, match="expected"):
        RunningMeanStd(shape=(3,)).load_state_dict(state)


def test_a_count_that_is_not_one_number_is_refused():
    state = {"mean": np.zeros(3), "var": np.ones(3), "count": np.array([2.0, 3.0])}
    with pytest.raises(RLBaseError, match="count shape"):
        RunningMeanStd(shape=(3,)).load_state_dict(state)


class _OtherRankEmptyComm(_TwinRanksComm):
    """2 ranks, the other one with an empty batch: the pooled sums are this rank's."""

    def Allreduce(self, send: np.ndarray, recv: np.ndarray) -> None:
        recv[...] = send


def test_a_pooled_update_of_one_sample_counts():
    pooled = RunningMeanStd(epsilon=1e-12, shape=(2,), comm=_OtherRankEmptyComm())
    pooled.update(np.array([[3.0, -1.0]]))
    np.testing.assert_allclose(pooled.mean, [3.0, -1.0])
    assert pooled.count == pytest.approx(1.0)


def test_a_state_with_extra_keys_loads_and_a_narrower_batch_is_refused():
    rms = RunningMeanStd(shape=(3,))
    rms.load_state_dict({"mean": np.ones(3), "var": np.ones(3), "count": np.float64(5),
                         "note": np.zeros(1)})
    assert rms.count == 5.0
    with pytest.raises(RLBaseError, match="does not fit"):
        rms.update(np.zeros((4, 1)))
