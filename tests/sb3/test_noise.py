"""rlbase.common.noise under SB3's protocol: NormalActionNoise(mean, sigma, dtype),
OrnsteinUhlenbeckActionNoise(mean, sigma, theta, dt, initial_noise, dtype),
VectorizedActionNoise(base_noise, n_envs) with reset(indices)."""

import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.noise import (
    ActionNoise,
    NormalActionNoise,
    OrnsteinUhlenbeckActionNoise,
    VectorizedActionNoise,
)


def test_normal_noise_as_sb3_writes_it():
    np.random.seed(0)
    noise = NormalActionNoise(mean=np.zeros(2), sigma=np.array([0.1, 0.3]))
    draws = np.stack([noise() for _ in range(5000)])
    assert draws.shape == (5000, 2) and draws.dtype == np.float32
    np.testing.assert_allclose(draws.std(axis=0), [0.1, 0.3], rtol=0.05)
    np.random.seed(0)  # numpy's global seed makes it repeat, as SB3's does
    again = NormalActionNoise(mean=np.zeros(2), sigma=np.array([0.1, 0.3]))
    np.testing.assert_array_equal(np.stack([again() for _ in range(5000)]), draws)
    assert NormalActionNoise(np.zeros(1), np.ones(1), dtype=np.float64)().dtype == np.float64


def test_ou_noise_starts_at_initial_noise_and_follows_its_recursion():
    noise = OrnsteinUhlenbeckActionNoise(np.ones(1), 0.2 * np.ones(1), theta=0.5, dt=0.1,
                                         initial_noise=np.array([3.0]), dtype=np.float64,
                                         rng=np.random.default_rng(1))
    eps = np.random.default_rng(1).standard_normal(1)
    expected = 3.0 + 0.5 * (1.0 - 3.0) * 0.1 + 0.2 * np.sqrt(0.1) * eps
    np.testing.assert_allclose(noise(), expected)
    noise.reset()
    np.testing.assert_array_equal(noise.x, [3.0])


def test_vectorized_noise_has_one_independent_process_per_env():
    base = OrnsteinUhlenbeckActionNoise(np.zeros(2), 0.3 * np.ones(2))
    noise = VectorizedActionNoise(base, n_envs=3)
    assert isinstance(noise, ActionNoise)
    draws = np.stack([noise() for _ in range(200)])
    assert draws.shape == (200, 3, 2)
    assert not np.allclose(draws[:, 0], draws[:, 1])  # each env its own numbers
    before = [n.x.copy() for n in noise.noises]
    noise.reset([1])
    np.testing.assert_array_equal(noise.noises[1].x, 0.0)
    np.testing.assert_array_equal(noise.noises[0].x, before[0])
    normal = VectorizedActionNoise(NormalActionNoise(np.zeros(1), np.ones(1)), 2)
    first = normal()
    assert first[0] != first[1]
    with pytest.raises(RLBaseError, match="n_envs must be a positive integer"):
        VectorizedActionNoise(base, 0)
    with pytest.raises(RLBaseError, match="base_noise must be an ActionNoise"):
        VectorizedActionNoise(None, 2)
