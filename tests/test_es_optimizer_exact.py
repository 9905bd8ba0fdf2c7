"""ES's update math on tiny inputs, by hand: Adam's first two steps, its defaults, where its
epsilon goes and its saved state; ranks with ties, the shaping's edge cases, the gradient
estimate's divisors and the weight decay's sign (issue 47: each number here is one a wrong
operator or constant in rlbase/es/optimizer.py would change)."""

from __future__ import annotations

import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.es.noise_table import NoiseTable
from rlbase.es.optimizer import (
    Adam,
    ascent_step,
    centered_ranks,
    es_gradient,
    ranks,
    shape_fitness,
)


def test_adam_two_steps_by_hand_with_its_defaults():
    adam = Adam(1, lr=0.1)
    assert (adam.beta1, adam.beta2, adam.epsilon) == (0.9, 0.999, 1e-8)
    # t=1, g=2: m = 0.2, v = 0.004, a = 0.1 sqrt(0.001) / 0.1; step = -a m / (sqrt(v) + 1e-8)
    np.testing.assert_allclose(adam.step(np.array([2.0])), [-0.09999998418861421], rtol=1e-12)
    # t=2, g=-1: m = 0.9*0.2 - 0.1 = 0.08, v = 0.999*0.004 + 0.001 = 0.004996,
    # a = 0.1 sqrt(1 - 0.999^2) / (1 - 0.9^2) = 0.0235316725...
    np.testing.assert_allclose(adam.step(np.array([-1.0])), [-0.02663370019795853], rtol=1e-12)
    np.testing.assert_allclose(adam.m, [0.08], rtol=1e-12)
    np.testing.assert_allclose(adam.v, [0.004996], rtol=1e-12)
    assert adam.t == 2


def test_adam_epsilon_is_added_outside_the_root_of_the_uncorrected_v():
    # lr=1, eps=1, g=1: m = 0.1, v = 0.001, a = sqrt(0.001) / 0.1;
    # step = -a * 0.1 / (sqrt(0.001) + 1) = -0.0306534300...
    adam = Adam(1, lr=1.0, epsilon=1.0)
    np.testing.assert_allclose(adam.step(np.array([1.0])), [-0.030653430031715504], rtol=1e-12)
    # g=1e-4 with the default 1e-8: sqrt(v) = sqrt(0.001) 1e-4, so the step is
    # -0.1 * 3.1623e-6 / (3.1623e-6 + 1e-8) = -0.0996847...
    np.testing.assert_allclose(Adam(1, lr=0.1).step(np.array([1e-4])), [-0.09968476908167397],
                               rtol=1e-9)


def test_adam_other_betas_by_hand():
    # beta1=0.4, beta2=0.36 (where 1 % beta is not 1 - beta), lr=1, eps=0, g=1 then g=3:
    # t=1: m = 0.6, v = 0.64, a = sqrt(0.64) / 0.6; step = -a 0.6 / 0.8 = -1
    # t=2: m = 0.24 + 1.8 = 2.04, v = 0.2304 + 5.76 = 5.9904,
    #      a = sqrt(1 - 0.1296) / (1 - 0.16); step = -a 2.04 / sqrt(5.9904) = -0.92572589...
    adam = Adam(1, lr=1.0, beta1=0.4, beta2=0.36, epsilon=0.0)
    np.testing.assert_allclose(adam.step(np.array([1.0])), [-1.0], rtol=1e-12)
    np.testing.assert_allclose(adam.step(np.array([3.0])), [-0.9257258926901633], rtol=1e-12)


def test_adam_state_round_trip_and_a_wrong_size():
    adam = Adam(2, lr=0.1)
    adam.step(np.array([1.0, -3.0]))
    state = adam.state_dict()
    assert state["t"] == 1 and state["t"].dtype == np.int64
    other = Adam(2, lr=0.1)
    other.load_state_dict(state)
    np.testing.assert_array_equal(other.m, adam.m)
    np.testing.assert_array_equal(other.v, adam.v)
    assert other.t == 1
    g = np.array([0.5, 2.0])
    np.testing.assert_array_equal(other.step(g), adam.step(g))
    # the saved copy is not the live array
    state["m"][0] = 99.0
    assert adam.m[0] != 99.0
    with pytest.raises(RLBaseError, match="saved Adam state has 3 entries, the policy has 2 "
                                          "parameters"):
        other.load_state_dict({"m": np.zeros(3), "v": np.zeros(2), "t": 1})
    with pytest.raises(RLBaseError, match="saved Adam state has 2 entries, the policy has 2"):
        other.load_state_dict({"m": np.zeros(2), "v": np.zeros(3), "t": 1})
    # smaller arrays too, not only larger ones
    with pytest.raises(RLBaseError, match="saved Adam state has 1 entries, the policy has 2"):
        other.load_state_dict({"m": np.zeros(1), "v": np.zeros(2), "t": 1})
    with pytest.raises(RLBaseError, match="saved Adam state has 2 entries, the policy has 2"):
        other.load_state_dict({"m": np.zeros(2), "v": np.zeros(1), "t": 1})


def test_weight_decay_adds_l2coeff_theta_to_the_minimized_gradient():
    # grad to minimize = -(1) + 0.5 * 4 = 1 > 0: first Adam step is -lr * sign = -0.1
    delta = ascent_step(Adam(1, lr=0.1), np.array([4.0]), np.array([1.0]), l2coeff=0.5)
    np.testing.assert_allclose(delta, [-0.1], rtol=1e-6)
    # l2coeff=0.1: -(1) + 0.4 < 0: a step up
    delta = ascent_step(Adam(1, lr=0.1), np.array([4.0]), np.array([1.0]), l2coeff=0.1)
    np.testing.assert_allclose(delta, [0.1], rtol=1e-6)


def test_ranks_ties_and_sizes():
    np.testing.assert_array_equal(ranks(np.array([2.0, 2.0, 2.0])), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(ranks(np.array([9.0, 1.0, 9.0, 4.0])), [2.5, 0.0, 2.5, 1.0])
    np.testing.assert_array_equal(centered_ranks(np.array([3.0, 1.0])), [0.5, -0.5])
    np.testing.assert_array_equal(centered_ranks(np.array([7.0])), [0.0])
    assert centered_ranks(np.zeros((0,))).shape == (0,)


def test_shape_fitness_edge_cases():
    # std 0.5: (x - 0.5) / 0.5
    np.testing.assert_array_equal(shape_fitness(np.array([0.0, 1.0]), "normalize"), [-1.0, 1.0])
    # std 2: (x - 2) / 2
    np.testing.assert_array_equal(shape_fitness(np.array([0.0, 4.0]), "normalize"), [-1.0, 1.0])
    # equal returns: zero, not 0/0
    np.testing.assert_array_equal(shape_fitness(np.array([3.0, 3.0]), "normalize"), [0.0, 0.0])
    np.testing.assert_array_equal(shape_fitness(np.array([3.0, 1.0, 2.0]), "centered_rank"),
                                  [0.5, -0.5, 0.0])
    # a name built at run time (a parsed command line) is equal, not the same object
    built = "".join(["centered", "_rank"])
    np.testing.assert_array_equal(shape_fitness(np.array([3.0, 1.0, 2.0]), built),
                                  [0.5, -0.5, 0.0])
    built = "".join(["norm", "alize"])
    np.testing.assert_array_equal(shape_fitness(np.array([0.0, 1.0]), built), [-1.0, 1.0])
    built = "".join(["no", "ne"])
    np.testing.assert_array_equal(shape_fitness(np.array([0.0, 1.0]), built), [0.0, 1.0])
    with pytest.raises(RLBaseError, match="unknown fitness_shaping 'x'; use one of "
                                          "centered_rank, normalize, none$"):
        shape_fitness(np.array([1.0]), "x")
    with pytest.raises(RLBaseError, match="unknown fitness_shaping 'best'"):  # before "none"
        shape_fitness(np.array([1.0]), "best")


def test_es_gradient_divides_by_pairs_and_by_two():
    table = NoiseTable(0, 6)
    table.noise = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], np.float32)
    # three pairs at 0, 1, 4 (dim 2): weights 3-1=2, 0-0=0, 1-2=-1;
    # sum = 2*[1, 2] + 0*[2, 3] - 1*[5, 6] = [-3, -2]; / (2 * 3)
    grad = es_gradient(table, np.array([0, 1, 4]),
                       np.array([[3.0, 1.0], [0.0, 0.0], [1.0, 2.0]]), 2, True)
    np.testing.assert_allclose(grad, [-0.5, -1 / 3], rtol=1e-12)
    # one-sided: 1*[1, 2] + 2*[2, 3] - 1*[5, 6] = [0, 2]; / 3
    grad = es_gradient(table, np.array([0, 1, 4]), np.array([1.0, 2.0, -1.0]), 2, False)
    np.testing.assert_allclose(grad, [0.0, 2 / 3], rtol=1e-12)
