"""The HER buffer's exact values (issue 47, mutation testing): its episode bookkeeping step by
step (starts, lengths, sampleable count, wrap-around, truncations), which transitions are
relabelled and with which goal for each strategy under a fixed seed (against numpy draws with
bounds written out by hand), the recomputed rewards, the argument checks and refusals, the
saved infos and the checkpoint state."""

from __future__ import annotations

import copy
from enum import Enum
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.buffers.her_replay_buffer import (
    GoalSelectionStrategy,
    HerReplayBuffer,
    _jsonable,
    check_goal_space,
    goal_reward_fn,
    goal_strategy,
    her_buffer,
    her_kwargs,
    her_vec_normalize,
)
from rlbase.common.errors import RLBaseError
from rlbase.common.io.checkpoint import object_state, restore_object_state
from rlbase.common.vec_env import DummyVecEnv
from rlbase.envs import BitFlippingEnv

ONE_LINE = r"^[^\n]+$"
BOX = gym.spaces.Box(-1e6, 1e6, (3,), np.float32)
SPACE = gym.spaces.Dict({"observation": BOX, "achieved_goal": BOX, "desired_goal": BOX})
NO_GOAL = np.full(3, -1.0, np.float32)


def exact_match(achieved: np.ndarray, desired: np.ndarray, infos: Any) -> np.ndarray:
    """A goal env's reward: 0 where the goal is reached, -1 elsewhere (one row per goal)."""
    return np.where(np.all(achieved == desired, axis=-1), 0.0, -1.0)


def buffer_of(size: int, num_envs: int = 1, strategy: str = "future", n: int = 4,
              **kwargs: Any) -> HerReplayBuffer:
    buffer = HerReplayBuffer(size, SPACE, num_envs, n_sampled_goal=n,
                             goal_selection_strategy=strategy, **kwargs)
    buffer._reward_fn = exact_match
    return buffer


def step(buffer: HerReplayBuffer, achieved: list[list[float]], terminated: list[float],
         truncated: list[bool], infos: list[dict[str, Any]] | None = None) -> None:
    """One vector step: env e goes from achieved goal ``achieved[e]`` to ``achieved[e]`` with
    its last entry plus one; its action and reward are 10 + its flat slot, its desired goal
    [-1, -1, -1]."""
    n = buffer.num_envs
    before = np.asarray(achieved, np.float32)
    after = before + np.array([0, 0, 1], np.float32)
    desired = np.tile(NO_GOAL, (n, 1))
    slots = buffer.pos + np.arange(n)
    buffer.add({"observation": before, "achieved_goal": before, "desired_goal": desired},
               10 + slots, (10 + slots).astype(np.float32),
               {"observation": after, "achieved_goal": after, "desired_goal": desired},
               np.asarray(terminated, np.float32), np.asarray(truncated, bool), infos)


# -- names and arguments ----------------------------------------------------------------------
class Foreign(Enum):
    """Another library's strategy enum (SB3's): matched by name, its values ignored."""

    FUTURE = "a"
    EPISODE = "b"
    RANDOM = "c"


def test_strategy_by_name_in_any_case_or_by_a_foreign_enums_name():
    assert [(m.name, m.value) for m in GoalSelectionStrategy] == \
        [("FUTURE", 0), ("FINAL", 1), ("EPISODE", 2)]  # SB3's values
    assert goal_strategy("Future") is GoalSelectionStrategy.FUTURE
    assert goal_strategy("final") is GoalSelectionStrategy.FINAL
    assert goal_strategy(Foreign.EPISODE) is GoalSelectionStrategy.EPISODE
    assert goal_strategy(GoalSelectionStrategy.FINAL) is GoalSelectionStrategy.FINAL
    for bad in (5, None, "random", Foreign.RANDOM):
        with pytest.raises(RLBaseError, match=r"^goal_selection_strategy must be 'future', "
                                              r"'final' or 'episode', got [^\n]+$"):
            goal_strategy(bad)


def test_her_kwargs_exact():
    assert her_kwargs(None) == her_kwargs({}) == {}
    # the fixed SB3 argument is dropped, and the loop goes on to the next one
    out = her_kwargs({"handle_timeout_termination": True, "n_sampled_goal": np.int64(2),
                      "copy_info_dict": True, "goal_selection_strategy": Foreign.FUTURE})
    assert out == {"n_sampled_goal": 2, "copy_info_dict": True,
                   "goal_selection_strategy": "future"}
    assert type(out["n_sampled_goal"]) is int
    assert her_kwargs({"n_sampled_goal": 0}) == {"n_sampled_goal": 0}  # no relabelling
    assert her_kwargs({"handle_timeout_termination": np.bool_(True)}) == {}  # equal to True
    assert her_kwargs({"copy_info_dict": False}) == {"copy_info_dict": False}


@pytest.mark.parametrize("kwargs, message", [
    ({"n_sampled_goal": -1}, "n_sampled_goal must be an integer >= 0, got -1"),
    ({"n_sampled_goal": True}, "n_sampled_goal must be an integer >= 0, got True"),
    ({"n_sampled_goal": 2.0}, "n_sampled_goal must be an integer >= 0, got 2.0"),
    ({"copy_info_dict": 1}, "copy_info_dict must be True or False, got 1"),
    ({"handle_timeout_termination": False}, "handle_timeout_termination must be True"),
    ({"handle_timeout_termination": 2}, "handle_timeout_termination must be True"),
    ({"online_sampling": True}, "HerReplayBuffer has no parameter 'online_sampling'; valid: "
                                "n_sampled_goal, goal_selection_strategy, copy_info_dict"),
])
def test_her_kwargs_refusals_name_the_value(kwargs, message):
    with pytest.raises(RLBaseError, match=ONE_LINE) as err:
        her_kwargs(kwargs)
    assert message in str(err.value)


def test_goal_space_checks():
    check_goal_space(SPACE)
    check_goal_space(gym.spaces.Dict({**SPACE.spaces, "extra": BOX}))  # more keys: fine
    nested = gym.spaces.Dict({"a": BOX})
    check_goal_space(gym.spaces.Dict({**SPACE.spaces, "observation": nested}))
    refused = [BOX, gym.spaces.Dict({"observation": BOX, "achieved_goal": BOX}),
               gym.spaces.Dict({**SPACE.spaces, "achieved_goal": nested}),
               gym.spaces.Dict({**SPACE.spaces, "desired_goal": nested})]
    for space in refused:
        with pytest.raises(RLBaseError, match=ONE_LINE):
            check_goal_space(space)


class NoReward(BitFlippingEnv):
    """A goal env whose compute_reward is missing."""

    def __getattribute__(self, name: str) -> Any:
        if name == "compute_reward":
            raise AttributeError(name)
        return super().__getattribute__(name)


class NotCallable(BitFlippingEnv):
    compute_reward = 3  # type: ignore[assignment]


def test_reward_function_of_an_env_in_this_process_and_its_refusals():
    venv = DummyVecEnv([lambda: BitFlippingEnv(3), lambda: BitFlippingEnv(3)])
    fn = goal_reward_fn(venv)
    assert fn.__self__ is venv.envs[0]  # type: ignore[attr-defined]
    buffer = buffer_of(4)
    buffer.set_env(venv)
    assert buffer._reward_fn.__self__ is venv.envs[0]  # type: ignore[union-attr]
    with pytest.raises(RLBaseError, match=r"^HER \(replay_buffer_class='her'\) needs a goal env "
                                          r"with a compute_reward[^\n]*has none$"):
        goal_reward_fn(DummyVecEnv([lambda: NoReward(3)]))
    with pytest.raises(RLBaseError, match=r"^HER needs the env's compute_reward to be a method, "
                                          r"got int$"):
        goal_reward_fn(DummyVecEnv([lambda: NotCallable(3)]))


class NoSpec(BitFlippingEnv):
    """Bit flipping without a spec gymnasium could make again."""

    def __init__(self) -> None:
        super().__init__(3)
        self.spec = None


class ElsewhereSpec(NoSpec):
    """Bit flipping with a spec this process cannot make (its entry point is nowhere)."""

    def __init__(self) -> None:
        super().__init__()
        self.spec = gym.envs.registration.EnvSpec("Elsewhere-v0", "no_such_module:Env")


def test_reward_function_of_worker_envs_comes_from_env_0s_spec():
    from rlbase.common.vec_env import SubprocVecEnv

    env = SubprocVecEnv([lambda: BitFlippingEnv(3), NoSpec])
    try:
        reward = goal_reward_fn(env)  # a copy of env 0 made here, though env 1 has no spec
        assert isinstance(getattr(reward, "__self__", None), BitFlippingEnv)
    finally:
        env.close()
    for make in (NoSpec, ElsewhereSpec):  # no copy here: env 0's own method, in its worker
        env = SubprocVecEnv([make])
        try:
            reward = goal_reward_fn(env)
            assert not hasattr(reward, "__self__")
            achieved = np.array([[1, 1, 1], [0, 1, 1]], np.int8)
            assert reward(achieved, np.ones((2, 3), np.int8), [{}, {}]).tolist() == [0.0, -1.0]
        finally:
            env.close()


def test_her_buffer_from_a_config_and_the_normalizer():
    default = her_buffer(None, 10, SPACE, 2, (), np.int64)
    assert (default.n_sampled_goal, default.goal_selection_strategy, default.copy_info_dict,
            default.num_envs, default.capacity) == (4, GoalSelectionStrategy.FUTURE, False, 2, 10)
    told = her_buffer({"n_sampled_goal": 2, "goal_selection_strategy": "episode"}, 10, SPACE, 1,
                      (2,), np.float32)
    assert (told.n_sampled_goal, told.goal_selection_strategy) == \
        (2, GoalSelectionStrategy.EPISODE)
    assert told.actions.shape == (10, 2) and told.actions.dtype == np.float32
    venv = her_vec_normalize(DummyVecEnv([lambda: BitFlippingEnv(3)]), training=False)
    assert not venv.training and venv.stats.clipob == 5.0
    assert venv.stats.epsilon == pytest.approx(1e-4) and not venv.stats.ret


# -- sizes ---------------------------------------------------------------------------------
def test_capacity_is_rounded_up_to_whole_rows_and_the_relabelled_share():
    for size, num_envs, rows in [(5, 2, 3), (4, 2, 2), (1, 1, 1), (1, 3, 1), (7, 1, 7)]:
        buffer = buffer_of(size, num_envs)
        assert (buffer.rows, buffer.capacity) == (rows, rows * num_envs)
        assert len(buffer) == 0 and buffer.ep_length.shape == (rows * num_envs,)
        assert buffer.current_start.tolist() == [0] * num_envs
    for n, ratio in [(0, 0.0), (1, 0.5), (3, 0.75), (4, 0.8)]:
        assert buffer_of(4, n=n).her_ratio == ratio
    # leaves in sorted key order: achieved_goal, desired_goal, observation
    assert (buffer_of(4)._achieved, buffer_of(4)._desired) == (0, 1)
    infos = buffer_of(5, 2, copy_info_dict=True)._infos
    assert infos == [{}] * 6 and infos[0] is not infos[1]
    assert buffer_of(5, 2)._infos is None
    default = HerReplayBuffer(4, SPACE)  # SB3's defaults
    assert (default.num_envs, default.n_sampled_goal, default.goal_selection_strategy,
            default.copy_info_dict) == (1, 4, GoalSelectionStrategy.FUTURE, False)


def test_for_num_envs_keeps_the_settings_and_refuses_a_filled_buffer():
    buffer = HerReplayBuffer(6, SPACE, 2, (2,), np.float32, 2, "final", True)
    other = buffer.for_num_envs(4)
    assert (other.num_envs, other.rows, other.capacity) == (4, 2, 8)
    assert (other.n_sampled_goal, other.goal_selection_strategy, other.copy_info_dict) == \
        (2, GoalSelectionStrategy.FINAL, True)
    assert other.actions.shape == (8, 2) and other.actions.dtype == np.float32
    step(buffer, [[0, 0, 0], [1, 0, 0]], [0, 0], [False, False])
    with pytest.raises(RLBaseError, match=r"^the HER buffer holds 2 transitions of 2 envs; it "
                                          r"cannot continue with 4 envs: use as many$"):
        buffer.for_num_envs(4)


# -- episode bookkeeping -------------------------------------------------------------------
def wrapped() -> HerReplayBuffer:
    """2 envs, 4 rows (flat slot = row * 2 + env), filled past the end of the ring:

    row:   0         1         2         3         0 (again)
    env 0: e0 s0     e0 s1 cut e1 s0     e1 s1     e1 s2 ends
    env 1: f0 s0 end f1 s0     f1 s1     f1 s2 end f2 s0 (in progress)
    """
    buffer = buffer_of(8, 2)
    step(buffer, [[0, 0, 0], [1, 0, 0]], [0, 1], [False, False])
    step(buffer, [[0, 0, 1], [1, 1, 0]], [0, 0], [True, False])  # a truncation: done stays 0
    step(buffer, [[0, 1, 0], [1, 1, 1]], [0, 0], [False, False])
    step(buffer, [[0, 1, 1], [1, 1, 2]], [0, 1], [False, False])
    return buffer


def test_episode_bookkeeping_step_by_step():
    buffer = buffer_of(8, 2)
    step(buffer, [[0, 0, 0], [1, 0, 0]], [0, 1], [False, False])
    assert buffer.ep_length.tolist() == [0, 1, 0, 0, 0, 0, 0, 0] and len(buffer) == 1
    assert buffer.current_start.tolist() == [0, 1]
    step(buffer, [[0, 0, 1], [1, 1, 0]], [0, 0], [True, False])
    assert buffer.ep_length.tolist() == [2, 1, 2, 0, 0, 0, 0, 0] and len(buffer) == 3
    assert buffer.current_start.tolist() == [2, 1]
    step(buffer, [[0, 1, 0], [1, 1, 1]], [0, 0], [False, False])
    assert len(buffer) == 3
    step(buffer, [[0, 1, 1], [1, 1, 2]], [0, 1], [False, False])
    assert buffer.ep_length.tolist() == [2, 1, 2, 3, 0, 3, 0, 3] and len(buffer) == 6
    assert buffer.ep_start.tolist() == [0, 0, 0, 1, 2, 1, 2, 1]
    assert buffer.current_start.tolist() == [2, 0]  # env 1's next episode: row 4 % 4
    assert buffer.dones.tolist() == [0, 1, 0, 0, 0, 0, 0, 1]  # the truncation keeps done 0
    # Row 0 again: the episodes starting there (env 0's e0, env 1's f0) leave whole, and
    # env 0's e1 ends across the ring's end (rows 2, 3, 0).
    step(buffer, [[0, 1, 2], [1, 2, 0]], [1, 0], [False, False])
    assert buffer.ep_length.tolist() == [3, 0, 0, 3, 3, 3, 3, 3] and len(buffer) == 6
    assert buffer.ep_start.tolist() == [2, 0, 0, 1, 2, 1, 2, 1]
    assert buffer.current_start.tolist() == [1, 0] and buffer.pos == 2
    # A reset: env 1's episode in progress (row 0) closes where it was cut; env 0 has none.
    buffer.start_episodes()
    assert buffer.ep_length.tolist() == [3, 1, 0, 3, 3, 3, 3, 3] and len(buffer) == 7
    assert buffer.current_start.tolist() == [1, 1]
    buffer.start_episodes()  # nothing more in progress
    assert len(buffer) == 7 and buffer.current_start.tolist() == [1, 1]
    # Row 1: env 1's f1 (rows 1-3) leaves whole; env 0's slot there was already free.
    step(buffer, [[0, 2, 0], [1, 3, 0]], [0, 0], [False, False])
    assert buffer.ep_length.tolist() == [3, 1, 0, 0, 3, 0, 3, 0] and len(buffer) == 4


def test_an_episode_filling_the_whole_ring_and_one_of_one_step():
    buffer = buffer_of(3)
    for t in range(3):
        step(buffer, [[0, 0, t]], [float(t == 2)], [False])
    assert buffer.ep_length.tolist() == [3, 3, 3] and len(buffer) == 3
    assert buffer.current_start.tolist() == [0]
    step(buffer, [[0, 1, 0]], [0], [True])  # overwrites the start: the whole episode leaves
    assert buffer.ep_length.tolist() == [1, 0, 0] and len(buffer) == 1
    assert buffer.current_start.tolist() == [1]


def test_overwriting_the_start_of_a_later_episode():
    buffer = buffer_of(4)
    step(buffer, [[0, 0, 0]], [1], [False])        # row 0: an episode of one step
    step(buffer, [[0, 1, 0]], [0], [False])        # rows 1-2: an episode of two
    step(buffer, [[0, 1, 1]], [1], [False])
    step(buffer, [[0, 2, 0]], [0], [False])        # row 3: in progress
    step(buffer, [[0, 2, 1]], [0], [False])        # row 0 overwritten
    assert buffer.ep_length.tolist() == [0, 2, 2, 0] and len(buffer) == 2
    step(buffer, [[0, 2, 2]], [0], [False])        # row 1 overwritten: rows 1 and 2 leave
    assert buffer.ep_length.tolist() == [0, 0, 0, 0] and len(buffer) == 0
    assert buffer.ep_start.tolist() == [3, 3, 1, 3]
    step(buffer, [[0, 2, 3]], [1], [False])        # ends the episode of rows 3, 0, 1, 2
    assert buffer.ep_length.tolist() == [4, 4, 4, 4] and len(buffer) == 4


def test_a_reset_closes_an_episode_in_progress_across_the_rings_end():
    buffer = buffer_of(4)
    for t in range(3):
        step(buffer, [[0, 0, t]], [float(t == 2)], [False])
    step(buffer, [[0, 1, 0]], [0], [False])  # rows 3 and 0: in progress, started after row 1
    step(buffer, [[0, 1, 1]], [0], [False])
    assert buffer.current_start.tolist() == [3] and buffer.pos == 1 and len(buffer) == 0
    buffer.start_episodes()
    assert buffer.ep_length.tolist() == [2, 0, 0, 2] and len(buffer) == 2
    assert buffer.current_start.tolist() == [1]


def test_a_reset_leaves_a_ring_of_more_than_256_rows_alone_when_nothing_is_in_progress():
    buffer = buffer_of(600)
    for t in range(300):
        step(buffer, [[0, 0, t]], [float(t == 299)], [False])
    buffer.start_episodes()  # row 300 starts the next episode: nothing to close
    assert len(buffer) == 300 and buffer.current_start.tolist() == [300]


def test_three_envs_each_keep_their_own_episode_starts():
    buffer = buffer_of(12, 3, strategy="final")
    step(buffer, [[0, 0, 0], [1, 0, 0], [2, 0, 0]], [1, 1, 1], [False] * 3)
    step(buffer, [[0, 1, 0], [1, 1, 0], [2, 1, 0]], [0, 1, 1], [False] * 3)
    step(buffer, [[0, 1, 1], [1, 2, 0], [2, 2, 0]], [1, 0, 1], [False] * 3)
    assert buffer.ep_start.tolist() == [0, 0, 0, 1, 1, 1, 1, 2, 2, 0, 0, 0]
    assert buffer.ep_length.tolist() == [1, 1, 1, 2, 1, 1, 2, 0, 1, 0, 0, 0]
    idx = np.array([0, 1, 2, 3, 4, 5, 6, 8])
    assert buffer.goal_indices(idx, np.random.default_rng(0)).tolist() == [0, 1, 2, 6, 4, 5, 6, 8]


def test_three_envs_across_the_rings_end():
    buffer = buffer_of(6, 3)  # 2 rows: slots 0-2 and 3-5
    step(buffer, [[0, 0, 0], [1, 0, 0], [2, 0, 0]], [1, 1, 0], [False] * 3)
    step(buffer, [[0, 1, 0], [1, 1, 0], [2, 0, 1]], [0, 1, 1], [False] * 3)
    assert buffer.ep_length.tolist() == [1, 1, 2, 0, 1, 2] and len(buffer) == 5
    step(buffer, [[0, 1, 1], [1, 2, 0], [2, 1, 0]], [0, 0, 0], [False] * 3)  # row 0 again
    assert buffer.ep_length.tolist() == [0, 0, 0, 0, 1, 0] and len(buffer) == 1
    step(buffer, [[0, 1, 2], [1, 2, 1], [2, 1, 1]], [0, 0, 0], [False] * 3)  # row 1 again
    assert buffer.ep_length.tolist() == [0] * 6 and len(buffer) == 0


def test_a_reset_closes_a_single_stored_step():
    buffer = buffer_of(4)
    buffer.start_episodes()  # empty: nothing to close
    assert len(buffer) == 0 and buffer.current_start.tolist() == [0]
    step(buffer, [[0, 0, 0]], [0], [False])
    buffer.start_episodes()
    assert buffer.ep_length.tolist() == [1, 0, 0, 0] and len(buffer) == 1
    assert buffer.current_start.tolist() == [1]


# -- sampling ------------------------------------------------------------------------------
def test_sample_indices_redraw_in_progress_ones_then_choose_among_complete_ones():
    buffer = buffer_of(64)
    step(buffer, [[0, 0, 0]], [0], [False])
    step(buffer, [[0, 0, 1]], [1], [False])  # slots 0 and 1 complete
    for t in range(62):
        step(buffer, [[0, 1, t]], [0], [False])
    assert len(buffer) == 2 and buffer.size == 64
    # numpy's own draws: 8 rounds of redrawing the in-progress ones, then a choice
    rng = np.random.default_rng(11)
    want = rng.integers(0, 64, size=50)
    for _ in range(8):
        bad = np.flatnonzero(want >= 2)
        want[bad] = rng.integers(0, 64, size=len(bad))
    bad = np.flatnonzero(want >= 2)
    assert len(bad) > 0
    want[bad] = rng.choice(np.array([0, 1]), size=len(bad))
    got = buffer.sample_indices(50, np.random.default_rng(11))
    assert got.tolist() == want.tolist()


def test_sample_indices_with_every_transition_complete_are_numpys_draws():
    buffer = buffer_of(6)
    for t in range(6):
        step(buffer, [[0, 0, t]], [float(t in (2, 5))], [False])
    got = buffer.sample_indices(20, np.random.default_rng(3))
    assert got.tolist() == np.random.default_rng(3).integers(0, 6, size=20).tolist()
    with pytest.raises(RLBaseError, match=r"^HER cannot sample before the first episode ends"):
        buffer_of(6).sample_indices(1, np.random.default_rng(0))


def test_relabelled_positions_are_the_first_of_each_minibatch():
    assert buffer_of(4, n=4).relabelled_positions(10, 5).tolist() == [0, 1, 2, 3, 5, 6, 7, 8]
    assert buffer_of(4, n=1).relabelled_positions(8, 4).tolist() == [0, 1, 4, 5]
    assert buffer_of(4, n=3).relabelled_positions(9, 8).tolist() == [0, 1, 2, 3, 4, 5, 8]
    assert buffer_of(4, n=2).relabelled_positions(6, 3).tolist() == [0, 1, 3, 4]
    assert buffer_of(4, n=0).relabelled_positions(6, 3).tolist() == []


def test_goal_indices_across_the_rings_end_for_each_strategy():
    buffer = wrapped()
    step(buffer, [[0, 1, 2], [1, 2, 0]], [1, 0], [False, False])
    # env 0's episode: rows 2, 3, 0 (slots 4, 6, 0), start 2; env 1's: rows 1-3 (slots 3, 5,
    # 7), start 1; each of length 3.
    idx = np.array([4, 6, 0, 3, 7])
    start = np.array([2, 2, 2, 1, 1])
    env = np.array([0, 0, 0, 1, 1])
    buffer.goal_selection_strategy = GoalSelectionStrategy.FINAL
    assert buffer.goal_indices(idx, np.random.default_rng(0)).tolist() == [0, 0, 0, 7, 7]
    buffer.goal_selection_strategy = GoalSelectionStrategy.FUTURE
    steps_in = np.array([0, 1, 2, 0, 2])  # each transition's own step in its episode
    t = np.random.default_rng(5).integers(steps_in, 3)
    want = (start + t) % 4 * 2 + env
    assert buffer.goal_indices(idx, np.random.default_rng(5)).tolist() == want.tolist()
    buffer.goal_selection_strategy = GoalSelectionStrategy.EPISODE
    t = np.random.default_rng(6).integers(0, np.full(5, 3))
    want = (start + t) % 4 * 2 + env
    assert buffer.goal_indices(idx, np.random.default_rng(6)).tolist() == want.tolist()
    # the draws reach every step they may and no other
    seen = buffer.goal_indices(np.repeat(idx, 200), np.random.default_rng(7)).reshape(5, 200)
    assert [sorted(set(row.tolist())) for row in seen] == [[0, 4, 6]] * 3 + [[3, 5, 7]] * 2
    buffer.goal_selection_strategy = GoalSelectionStrategy.FUTURE
    seen = buffer.goal_indices(np.repeat(idx, 200), np.random.default_rng(7)).reshape(5, 200)
    assert [sorted(set(row.tolist())) for row in seen] == \
        [[0, 4, 6], [0, 6], [0], [3, 5, 7], [7]]


def episodes() -> HerReplayBuffer:
    """1 env, 6 slots: an episode of 3 steps (slots 0-2, terminated), one of 2 (slots 3-4,
    truncated), slot 5 in progress; the achieved goal after step t of episode k: [0, k, t + 1]."""
    buffer = buffer_of(6, strategy="final")
    for k, t, term, trunc in [(0, 0, 0, 0), (0, 1, 0, 0), (0, 2, 1, 0), (1, 0, 0, 0),
                              (1, 1, 0, 1), (2, 0, 0, 0)]:
        step(buffer, [[0, k, t]], [term], [bool(trunc)])
    return buffer


EPISODE_OF = {0: 0, 1: 0, 2: 0, 3: 1, 4: 1}
FINAL_GOAL = {0: [0, 0, 3], 1: [0, 1, 2]}


def test_sample_final_exact_batch():
    buffer = episodes()
    stored_desired = buffer.obs_leaves[1].copy()
    idx = np.random.default_rng(21).integers(0, 6, size=10)
    assert 5 not in idx  # no redraw: the indices are numpy's first draws
    got_idx, batch = buffer.sample(10, np.random.default_rng(21), batch_size=5)
    assert got_idx.tolist() == idx.tolist()
    virtual = [0, 1, 2, 3, 5, 6, 7, 8]  # int(0.8 * 5) = 4 of each minibatch of 5
    for p, i in enumerate(idx.tolist()):
        goal = FINAL_GOAL[EPISODE_OF[i]] if p in virtual else NO_GOAL.tolist()
        assert batch.obs["desired_goal"][p].tolist() == goal
        assert batch.next_obs["desired_goal"][p].tolist() == goal
        ep, t = EPISODE_OF[i], i - 3 * EPISODE_OF[i]
        assert batch.obs["achieved_goal"][p].tolist() == [0, ep, t]
        assert batch.obs["observation"][p].tolist() == [0, ep, t]
        assert batch.next_obs["achieved_goal"][p].tolist() == [0, ep, t + 1]
        reached = i in (2, 4)  # the last step of its episode reaches the final goal
        assert batch.rewards[p] == ((0.0 if reached else -1.0) if p in virtual else 10 + i)
        assert batch.actions[p] == 10 + i
        assert batch.dones[p] == float(i == 2)  # the truncation at slot 4 keeps done 0
    assert batch.rewards.dtype == np.float32
    assert np.array_equal(buffer.obs_leaves[1], stored_desired)  # the stored goals untouched


def test_sample_future_and_episode_exact_goals():
    # each complete slot's episode start, own step and length
    start, own, length = np.array([0, 0, 0, 3, 3]), np.array([0, 1, 2, 0, 1]), \
        np.array([3, 3, 3, 2, 2])
    for strategy in ("future", "episode"):
        buffer = episodes()
        buffer.goal_selection_strategy = goal_strategy(strategy)
        rng = np.random.default_rng(21)
        idx = rng.integers(0, 6, size=10)
        virtual = np.array([0, 1, 2, 3, 5, 6, 7, 8])
        v = idx[virtual]
        low = own[v] if strategy == "future" else np.zeros(len(v), np.int64)
        goal_slot = start[v] + rng.integers(low, length[v])
        _, batch = buffer.sample(10, np.random.default_rng(21), batch_size=5)
        goals = [[0, EPISODE_OF[int(g)], int(g) - start[int(g)] + 1] for g in goal_slot]
        assert batch.obs["desired_goal"][virtual].tolist() == goals
        assert batch.next_obs["desired_goal"][virtual].tolist() == goals
        hit = goal_slot == v  # the transition's own next goal
        assert batch.rewards[virtual].tolist() == np.where(hit, 0.0, -1.0).tolist()
        assert batch.rewards[[4, 9]].tolist() == (10 + idx[[4, 9]]).tolist()
        assert batch.obs["desired_goal"][[4, 9]].tolist() == [NO_GOAL.tolist()] * 2


def test_one_minibatch_when_no_batch_size_and_none_relabelled_with_n_0():
    buffer = episodes()
    idx = np.random.default_rng(21).integers(0, 6, size=5)
    _, batch = buffer.sample(5, np.random.default_rng(21))
    assert batch.obs["desired_goal"][:4].tolist() == [FINAL_GOAL[EPISODE_OF[i]]
                                                      for i in idx[:4].tolist()]
    assert batch.obs["desired_goal"][4].tolist() == NO_GOAL.tolist()
    plain = episodes()
    plain.n_sampled_goal, plain.her_ratio = 0, 0.0
    plain._reward_fn = None  # never called: nothing is relabelled
    _, batch = plain.sample(5, np.random.default_rng(21), batch_size=5)
    assert batch.rewards.tolist() == (10 + idx).tolist()


# -- rewards and infos ---------------------------------------------------------------------
def test_compute_rewards_passes_copies_of_the_stored_infos():
    buffer = buffer_of(4, 2, copy_info_dict=True)
    step(buffer, [[0, 0, 0], [1, 0, 0]], [1, 1], [False, False],
         [{"who": "env 0"}, {"who": "env 1", "deep": [1]}])
    seen: list[Any] = []

    def reward(achieved: np.ndarray, desired: np.ndarray, infos: Any) -> list[list[float]]:
        seen.append(copy.deepcopy(infos))
        infos[0]["deep"].append(2)  # a reward function that writes into its infos
        return [[1.5], [2.5]]  # one per goal, in any shape

    buffer._reward_fn = reward
    achieved = np.zeros((2, 3), np.float32)
    rewards = buffer.compute_rewards(achieved, achieved, np.array([1, 0]))
    assert rewards.dtype == np.float32 and rewards.tolist() == [1.5, 2.5]
    assert seen == [[{"who": "env 1", "deep": [1]}, {"who": "env 0"}]]
    assert buffer._infos[1] == {"who": "env 1", "deep": [1]}  # the stored one unchanged
    assert buffer._infos[2:] == [{}, {}]
    plain = buffer_of(4)
    plain._reward_fn = lambda a, d, infos: seen.append(infos) or np.zeros(len(infos))
    assert plain.compute_rewards(achieved, achieved, np.array([3, 3])).tolist() == [0, 0]
    assert seen[-1] == [{}, {}]
    for count in (3, 1):
        plain._reward_fn = lambda a, d, infos, count=count: np.zeros(count)
        with pytest.raises(RLBaseError, match=rf"^the env's compute_reward returned {count} "
                                              r"rewards for a batch of 2 goals: it must be "
                                              r"vectorized$"):
            plain.compute_rewards(achieved, achieved, np.array([0, 1]))
    plain._reward_fn = None
    with pytest.raises(RLBaseError, match=r"^HerReplayBuffer has no env to compute rewards "
                                          r"with: call set_env\(env\) first$"):
        plain.compute_rewards(achieved, achieved, np.array([0, 1]))


def test_infos_are_kept_only_with_copy_info_dict():
    plain = buffer_of(4)
    step(plain, [[0, 0, 0]], [1], [False], [{"x": 1}])
    assert plain.info_state() is None and plain._infos is None
    plain.set_info_state([{"x": 1}])  # nothing to set
    assert plain._infos is None
    kept = buffer_of(4, 2, copy_info_dict=True)
    step(kept, [[0, 0, 0], [1, 0, 0]], [0, 0], [False, False])  # no infos given: none kept
    step(kept, [[0, 0, 1], [1, 0, 1]], [0, 0], [False, False],
         [{"a": np.int64(4)}, {"b": np.array([0.5, 1.5], np.float32)}])
    assert kept.info_state() == [{}, {}, {"a": 4}, {"b": [0.5, 1.5]}]  # the stored ones
    assert kept.check_info_state(None) == [] and kept.check_info_state({"a": 1}) == []
    full = [{"i": i} for i in range(4)]
    assert kept.check_info_state(full) == full  # as many as the buffer holds: fine
    for bad in ([{}] * 5, [{}, 3]):
        with pytest.raises(RLBaseError, match=r"^the checkpoint's HER infos do not fit this "
                                              r"buffer \([0-9]+ entries for 4 transitions"):
            kept.check_info_state(bad)
    kept.set_info_state([{"i": 0}])
    assert kept._infos == [{"i": 0}, {}, {}, {}]


def test_jsonable_keeps_what_json_can_hold():
    info = {"f": np.float32(0.5), 3: "a key JSON would change", "i": np.array([1, 2]),
            "b": np.array([True, False]), "u": np.array([7], np.uint8),
            "s": np.array(["x"]), "c": np.array([1j]), "t": (1, np.int64(2)),
            "lost": [1, object()], "flag": True, "n": None, "x": 1.5, "name": "s",
            "inner": {"o": object(), "k": [np.float64(2.5)]}}
    assert _jsonable(info) == {"f": 0.5, "i": [1, 2], "b": [True, False], "u": [7],
                               "t": [1, 2], "flag": True, "n": None, "x": 1.5, "name": "s",
                               "inner": {"k": [2.5]}}
    assert type(_jsonable(info)["f"]) is float
    assert _jsonable([]) == [] and _jsonable(()) == []
    assert _jsonable(object()) is _jsonable([object()])  # the "cannot hold" marker


# -- checkpoints ---------------------------------------------------------------------------
def test_checkpoint_state_holds_the_episodes_and_samples_the_same():
    buffer = wrapped()
    meta, arrays = object_state(buffer, "replay")
    assert meta["valid"] == 6 and meta["num_envs"] == 2 and meta["rows"] == 4
    assert not any(name in meta for name in ("n_sampled_goal", "her_ratio", "copy_info_dict",
                                             "goal_selection_strategy", "_infos"))
    assert arrays["replay/ep_length"].tolist() == [2, 1, 2, 3, 0, 3, 0, 3]
    assert arrays["replay/current_start"].tolist() == [2, 0]
    restored = buffer_of(8, 2, strategy="final", n=1)  # its settings stay this run's
    restore_object_state(restored, meta, arrays, "replay")
    assert (len(restored), restored.pos, restored.n_sampled_goal) == (6, 0, 1)
    assert restored.goal_selection_strategy is GoalSelectionStrategy.FINAL
    assert restored.ep_start.tolist() == [0, 0, 0, 1, 2, 1, 2, 1]
    step(restored, [[0, 1, 2], [1, 2, 0]], [1, 0], [False, False])
    step(buffer, [[0, 1, 2], [1, 2, 0]], [1, 0], [False, False])
    assert restored.ep_length.tolist() == buffer.ep_length.tolist() == [3, 0, 0, 3, 3, 3, 3, 3]
