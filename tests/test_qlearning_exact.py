"""Tabular Q-learning's model on tiny tables, by hand: the update's target, lr and order, the
ties, the epsilon-greedy draws against a plain numpy copy of them, the action offset, the
table's size limit, loading and resuming refusals (issue 47: each number here is one a wrong
operator or constant in rlbase/qlearning/model.py would change)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.qlearning.config import QLearningConfig
from rlbase.qlearning.model import MAX_TABLE_ENTRIES, Model, build_model


def _model(n_states=3, n_actions=2, seed=0, epsilon=0.0, start=0):
    return Model(gym.spaces.Discrete(n_states), gym.spaces.Discrete(n_actions, start=start),
                 QLearningConfig(seed=seed), epsilon=epsilon)


def test_update_by_hand_in_order():
    model = _model()
    model.q_table[:] = [[1.0, 2.0], [4.0, -1.0], [0.0, 0.0]]
    # 1) (0, 1, r=1, s'=1): target 1 + 0.5 * max(4, -1) = 3; Q = 2 + 0.25 * (3 - 2) = 2.25
    # 2) (1, 0, r=2, s'=0, done): target 2; Q = 4 + 0.25 * (2 - 4) = 3.5
    # 3) (0, 0, r=0, s'=0): target 0 + 0.5 * max(1, 2.25) = 1.125 (sees update 1);
    #    Q = 1 + 0.25 * 0.125 = 1.03125
    model.update(np.array([0, 1, 0]), np.array([1, 0, 0]), np.array([1.0, 2.0, 0.0]),
                 np.array([1, 0, 0]), np.array([False, True, False]), lr=0.25, gamma=0.5)
    np.testing.assert_array_equal(model.q_table, [[1.03125, 2.25], [3.5, -1.0], [0.0, 0.0]])


def test_update_with_negative_values_takes_the_maximum_not_the_magnitude():
    model = _model()
    model.q_table[1] = [-3.0, -2.0]
    # target -1 + 1 * max(-3, -2) = -3; lr 1 copies it
    model.update([0], [1], [-1.0], [1], [False], lr=1.0, gamma=1.0)
    assert model.q_table[0, 1] == -3.0


def test_greedy_breaks_ties_with_the_generator_and_never_picks_a_worse_action():
    model = _model(n_states=2, n_actions=3, seed=5)
    model.q_table[:] = [[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    rows = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    rng = np.random.default_rng(5)
    best = np.array([[1, 1, 0], [1, 1, 1]] * 4, np.float64)
    expected = (rng.random((8, 3)) * best).argmax(axis=1)
    np.testing.assert_array_equal(model.greedy(rows), expected)
    # over many draws both tied actions appear in row 0, never the worse one
    picks = model.greedy(np.zeros(200, np.int64))
    assert set(picks.tolist()) == {0, 1}


def test_act_explores_with_the_given_rate_against_numpy_draws():
    model = _model(n_states=1, n_actions=4, seed=3)
    model.q_table[0] = [0.0, 0.0, 9.0, 0.0]
    rng = np.random.default_rng(3)
    rng.random((6, 4))  # greedy's tie-breaking draws (no tie here: action 2)
    explore = rng.random(6) < 0.5
    random_actions = rng.integers(0, 4, 6)
    expected = np.where(explore, random_actions, 2)
    assert explore.any() and not explore.all()
    np.testing.assert_array_equal(model.act(np.zeros(6, np.int64), 0.5), expected)
    # epsilon 0: greedy only; epsilon 1: the uniform draw for every row
    assert (_model(1, 4, seed=1).act(np.zeros(50, np.int64), 0.0) == 0).sum() > 0
    greedy_only = _model(1, 4, seed=1)
    greedy_only.q_table[0, 3] = 1.0
    assert (greedy_only.act(np.zeros(50, np.int64), 0.0) == 3).all()
    everywhere = _model(1, 4, seed=1)
    everywhere.q_table[0, 3] = 1.0
    assert set(everywhere.act(np.zeros(200, np.int64), 1.0).tolist()) == {0, 1, 2, 3}


def test_step_adds_the_action_start_and_returns_the_greedy_value():
    model = _model(n_states=2, n_actions=3, start=-1, epsilon=0.0)
    model.q_table[:] = [[0.0, 5.0, 5.0], [-2.0, -4.0, -3.0]]
    actions, values, state, extra = model.step(np.array([0, 1]), state="s",
                                               deterministic=True)
    np.testing.assert_array_equal(actions, [0, -1])  # lowest of the tie, then index 0; - 1
    np.testing.assert_array_equal(values, [5.0, -2.0])
    assert state == "s" and extra is None
    actions, values, _, _ = model.step(np.array([1, 1]))
    np.testing.assert_array_equal(actions, [-1, -1])
    np.testing.assert_array_equal(values, [-2.0, -2.0])


def test_action_probabilities_share_one_minus_epsilon_among_the_tied_best():
    model = _model(n_states=2, n_actions=4, epsilon=0.2)
    model.q_table[:] = [[3.0, 3.0, 3.0, 1.0], [-1.0, -5.0, -5.0, -5.0]]
    probs = model.action_probabilities(np.array([0, 1]), None, None)[0]
    # 0.2 / 4 = 0.05 each, plus 0.8 / 3 to each of three ties, plus 0.8 to the single best
    np.testing.assert_allclose(probs, [[0.05 + 0.8 / 3] * 3 + [0.05], [0.85, 0.05, 0.05, 0.05]],
                               rtol=1e-12)


def test_the_table_size_limit_is_inclusive():
    assert MAX_TABLE_ENTRIES == 50_000_000
    # np.zeros of 400 MB is not touched, so cheap
    big = Model(gym.spaces.Discrete(25_000_000), gym.spaces.Discrete(2))
    assert big.q_table.shape == (25_000_000, 2)
    del big
    with pytest.raises(RLBaseError, match="would have 50000001 entries \\(at most 50000000\\)"):
        Model(gym.spaces.Discrete(50_000_001), gym.spaces.Discrete(1))
    # states times actions, not one divided by the other
    with pytest.raises(RLBaseError, match="would have 50000002 entries"):
        Model(gym.spaces.Discrete(25_000_001), gym.spaces.Discrete(2))


def test_loading_a_table_checks_its_shape_and_copies_it():
    model = _model()
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    model.load_parameter_arrays({"q_table": table}, "f.zip")
    assert model.q_table.dtype == np.float64
    table[0, 0] = 99.0
    assert model.q_table[0, 0] == 0.0
    assert model.parameter_arrays()["q_table"] is model.q_table
    with pytest.raises(RLBaseError, match="model file f.zip: its Q-table has shape \\(2, 2\\), "
                                          "this env needs \\(3, 2\\) \\(grid_size=20\\)"):
        model.load_parameter_arrays({"q_table": np.zeros((2, 2))}, "f.zip")
    with pytest.raises(RLBaseError, match="its Q-table has shape \\(4, 2\\)"):  # larger too
        model.load_parameter_arrays({"q_table": np.zeros((4, 2))}, "f.zip")
    with pytest.raises(RLBaseError, match="its Q-table has shape None"):
        model.load_parameter_arrays({}, "f.zip")


def test_resume_state_holds_epsilon_and_the_generator():
    model = _model(epsilon=0.3, seed=4)
    model.rng.random(3)
    meta, _ = model.resume_state()
    assert meta["epsilon"] == 0.3
    other = _model(epsilon=1.0, seed=9)
    other.restore_resume_state(meta, {})
    assert other.epsilon == 0.3
    assert other.rng.random() == model.rng.random()
    for missing in ("epsilon", "rng"):
        with pytest.raises(RLBaseError, match="lacks Q-learning's exploration rate or "
                                              "generator"):
            other.restore_resume_state({k: v for k, v in meta.items() if k != missing}, {})


def test_build_model_starts_at_the_initial_rate_and_refuses_network_arguments():
    space = gym.spaces.Discrete(2)
    model = build_model(space, space, 1, None, {}, QLearningConfig(exploration_initial_eps=0.4))
    assert model.epsilon == 0.4 and model.num_envs == 1
    direct = Model(space, space)
    assert direct.epsilon == 0.0 and direct.num_envs == 1  # greedy, one env unless told
    with pytest.raises(RLBaseError, match="qlearning has no network, so no network arguments: "
                                          "got a, b$"):
        build_model(space, space, 1, None, {"b": 1, "a": 2}, QLearningConfig())
    with pytest.raises(RLBaseError, match="qlearning needs a Discrete action space, got "
                                          "Box.*for Box actions use a2c, ppo or ddpg"):
        Model(space, gym.spaces.Box(-1, 1, (1,)))
