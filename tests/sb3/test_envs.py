"""Stable-Baselines3's tests/test_envs.py, ported: check_env on registered and custom envs,
the spaces it warns about, and the broken reset()/step() returns it catches.

Where rlbase trains a space SB3 does not (Tuple and nested Dict observations, Discrete and
MultiDiscrete observations that do not start at 0, multi-dimensional MultiDiscrete
observations, Discrete actions that do not start at 0), check_env passes it without a warning;
where rlbase cannot train a space at all (MultiDiscrete actions that are 2-D or do not start at
0), it raises RLBaseError instead of warning."""

import types
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from rlbase.common.envs.env_checker import check_env
from rlbase.common.errors import NonFiniteError, RLBaseError

from .checker_envs import BitFlippingEnv, FakeImageEnv, SimpleMultiObsEnv
from .envs import BoxIdentityEnv, discrete_identity, multibinary_identity, multidiscrete_identity

ENV_MAKERS = [
    BitFlippingEnv,
    lambda: discrete_identity(10),
    BoxIdentityEnv,
    lambda: multibinary_identity(10),
    lambda: multidiscrete_identity(10),
    FakeImageEnv,
    SimpleMultiObsEnv,
]


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_env(env_id):
    env = gym.make(env_id)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        check_env(env)
    # Pendulum's actions range over [-2, 2], not [-1, 1]: one warning.
    assert len(record) == (1 if env_id == "Pendulum-v1" else 0), [str(r.message) for r in record]


@pytest.mark.parametrize("make_env", ENV_MAKERS)
def test_custom_envs(make_env):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        check_env(make_env())
    assert len(record) == 0, [str(r.message) for r in record]


@pytest.mark.parametrize("kwargs", [
    dict(continuous=True),
    dict(discrete_obs_space=True),
    dict(image_obs_space=True, channel_first=True),
    dict(image_obs_space=True, channel_first=False),
])
def test_bit_flipping(kwargs):
    env = BitFlippingEnv(**kwargs)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        check_env(env)
    assert len(record) == 0, [str(r.message) for r in record]

    # A key missing from the space, then renamed: both caught.
    obs_space = env.observation_space.spaces["observation"]
    del env.observation_space.spaces["observation"]
    with pytest.raises(AssertionError):
        check_env(env)
    env.observation_space.spaces["obs"] = obs_space
    with pytest.raises(AssertionError):
        check_env(env)


def test_goal_env_reward_must_come_from_compute_reward():
    env = BitFlippingEnv()
    step = env.step

    def wrong_reward(action):
        obs, reward, terminated, truncated, info = step(action)
        return obs, reward + 5.0, terminated, truncated, info

    env.step = wrong_reward
    with pytest.raises(AssertionError, match="compute_reward"):
        check_env(env)


def test_high_dimension_action_space():
    env = FakeImageEnv()
    env.action_space = spaces.Box(low=-1, high=1, shape=(20,), dtype=np.float32)
    env.step = lambda _action: (env.observation_space.sample(), 0.0, False, False, {})
    check_env(env)


def _patched(env, obs_space):
    env.observation_space = obs_space
    env.reset = lambda seed=None: (obs_space.sample(), {})
    env.step = lambda _action: (obs_space.sample(), 0.0, False, False, {})
    return env


@pytest.mark.parametrize("new_obs_space", [
    # Small image
    spaces.Box(low=0, high=255, shape=(32, 32, 3), dtype=np.uint8),
    # Range not in [0, 255]
    spaces.Box(low=0, high=1, shape=(64, 64, 3), dtype=np.uint8),
    # Wrong dtype
    spaces.Box(low=0, high=255, shape=(64, 64, 3), dtype=np.float32),
    # Not an image, it should be a 1D vector
    spaces.Box(low=-1, high=1, shape=(64, 3), dtype=np.float32),
    # Small image inside a dict
    spaces.Dict({"img": spaces.Box(low=0, high=255, shape=(32, 32, 3), dtype=np.uint8)}),
])
def test_non_default_spaces(new_obs_space):
    with pytest.warns(UserWarning):
        check_env(_patched(FakeImageEnv(), new_obs_space))


@pytest.mark.parametrize("new_obs_space", [
    spaces.Tuple([spaces.Discrete(5), spaces.Discrete(10)]),
    spaces.Dict({"position": spaces.Dict({"abs": spaces.Discrete(5), "rel": spaces.Discrete(2)})}),
    spaces.Discrete(3, start=-1),
    spaces.MultiDiscrete(np.array([[4, 4], [2, 3]])),
    spaces.MultiDiscrete([4, 4], start=[1, 0]),
    spaces.Dict({"obs": spaces.Discrete(3, start=1)}),
])
def test_observation_spaces_rlbase_trains(new_obs_space):
    """SB3 warns about these; rlbase's policies encode them."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        check_env(_patched(FakeImageEnv(), new_obs_space))
    assert len(record) == 0, [str(r.message) for r in record]


@pytest.mark.parametrize("new_obs_space", [
    spaces.Sequence(spaces.Discrete(3)),
    spaces.Dict({"graph": spaces.Graph(spaces.Box(-1, 1, (2,)), None)}),
    spaces.Text(5),
])
def test_observation_spaces_rlbase_refuses(new_obs_space):
    with pytest.raises(RLBaseError, match="rlbase cannot train on observation space"):
        check_env(_patched(FakeImageEnv(), new_obs_space))


@pytest.mark.parametrize("new_action_space", [
    # Not symmetric
    spaces.Box(low=0, high=1, shape=(3,), dtype=np.float32),
    # Wrong dtype
    spaces.Box(low=-1, high=1, shape=(3,), dtype=np.float64),
    # Too big range
    spaces.Box(low=-1000, high=1000, shape=(3,), dtype=np.float32),
    # Too small range
    spaces.Box(low=-0.1, high=0.1, shape=(2,), dtype=np.float32),
    # Same boundaries
    spaces.Box(low=1, high=1, shape=(2,), dtype=np.float32),
    # Unbounded action space
    spaces.Box(low=-np.inf, high=1, shape=(2,), dtype=np.float32),
    # Almost good, except for one dim
    spaces.Box(low=np.array([-1, -1, -1]), high=np.array([1, 1, 0.99]), dtype=np.float32),
    # Non zero start index: rlbase trains it (no warning)
    spaces.Discrete(3, start=-1),
    # Non zero start index (MultiDiscrete): rlbase refuses it
    spaces.MultiDiscrete([4, 4], start=[1, 0]),
    # 2D MultiDiscrete: rlbase refuses it
    spaces.MultiDiscrete(np.array([[4, 4], [2, 3]])),
])
def test_non_default_action_spaces(new_action_space):
    env = FakeImageEnv(discrete=False)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        check_env(env)
    assert len(record) == 0
    env.action_space = new_action_space

    if isinstance(new_action_space, spaces.Discrete):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            check_env(env)
        assert len(record) == 0
        return
    if isinstance(new_action_space, spaces.MultiDiscrete):
        with pytest.raises(RLBaseError, match="rlbase cannot train on action space"):
            check_env(env)
        return
    if not np.all(np.isfinite(env.action_space.low)):
        # Unbounded: an error (after the warning about the range).
        with pytest.raises(AssertionError), pytest.warns(UserWarning):
            check_env(env)
    else:
        with pytest.warns(UserWarning):
            check_env(env)


@pytest.mark.parametrize("new_action_space", [
    spaces.Box(-1, 1, (2, 2), np.float32),
    spaces.Dict({"a": spaces.Discrete(2)}),
    spaces.Tuple([spaces.Discrete(2), spaces.Discrete(3)]),
])
def test_action_spaces_rlbase_refuses(new_action_space):
    env = FakeImageEnv()
    env.action_space = new_action_space
    with pytest.raises(RLBaseError, match="rlbase cannot train on action space"):
        check_env(env)


def check_reset_assert_error(env, new_reset_return):
    env.reset = lambda seed=None: (new_reset_return, {})
    with pytest.raises(AssertionError):
        check_env(env)


def test_common_failures_reset():
    env = BoxIdentityEnv()
    # An observation that does not match the observation space
    check_reset_assert_error(env, np.ones((3,)))
    # The observation is not a numpy array
    check_reset_assert_error(env, 1)

    # Only the observation returned (gym < 0.26)
    def wrong_reset(self, seed=None):
        return env.observation_space.sample()

    env.reset = types.MethodType(wrong_reset, env)
    with pytest.raises(AssertionError):
        check_env(env)

    # No seed parameter (gym < 0.26)
    def wrong_reset(self):  # noqa: F811
        return env.observation_space.sample(), {}

    env.reset = types.MethodType(wrong_reset, env)
    with pytest.raises(TypeError):
        check_env(env)

    # Not only the observation
    check_reset_assert_error(env, (env.observation_space.sample(), False))

    env = SimpleMultiObsEnv()
    # Observation keys and observation space keys must match
    wrong_obs = env.observation_space.sample()
    wrong_obs.pop("img")
    check_reset_assert_error(env, wrong_obs)
    wrong_obs = {**env.observation_space.sample(), "extra_key": None}
    check_reset_assert_error(env, wrong_obs)

    obs, _ = env.reset()

    def wrong_reset(self, seed=None):  # noqa: F811
        return {"img": obs["img"], "vec": obs["img"]}, {}

    env.reset = types.MethodType(wrong_reset, env)
    with pytest.raises(AssertionError) as excinfo:
        check_env(env)
    # The key is named
    assert "vec" in str(excinfo.value)


def check_step_assert_error(env, new_step_return=()):
    env.step = lambda _action: new_step_return
    with pytest.raises(AssertionError):
        check_env(env)


def test_common_failures_step():
    env = BoxIdentityEnv()
    # Wrong shape for the observation
    check_step_assert_error(env, (np.ones((4,)), 1.0, False, False, {}))
    # Obs is not a numpy array
    check_step_assert_error(env, (1, 1.0, False, False, {}))
    # A wrong reward
    check_step_assert_error(env, (env.observation_space.sample(), np.ones(1), False, False, {}))
    # No info dict
    check_step_assert_error(env, (env.observation_space.sample(), 0.0, False, False))
    # No truncated (gym < 0.26)
    check_step_assert_error(env, (env.observation_space.sample(), 0.0, False, {}))
    # terminated not a bool
    check_step_assert_error(env, (env.observation_space.sample(), 0.0, 3.0, False, {}))
    check_step_assert_error(env, (env.observation_space.sample(), 0.0, 1, False, {}))
    # truncated not a bool
    check_step_assert_error(env, (env.observation_space.sample(), 0.0, False, 1.0, {}))

    env = SimpleMultiObsEnv()
    wrong_obs = env.observation_space.sample()
    wrong_obs.pop("img")
    check_step_assert_error(env, (wrong_obs, 0.0, False, False, {}))
    wrong_obs = {**env.observation_space.sample(), "extra_key": None}
    check_step_assert_error(env, (wrong_obs, 0.0, False, False, {}))

    obs, _ = env.reset()

    def wrong_step(self, action):
        return {"img": obs["vec"], "vec": obs["vec"]}, 0.0, False, False, {}

    env.step = types.MethodType(wrong_step, env)
    with pytest.raises(AssertionError) as excinfo:
        check_env(env)
    assert "img" in str(excinfo.value)


def test_out_of_bounds_observation_names_the_indices():
    env = BoxIdentityEnv()
    check_reset_assert_error(env, np.array([2.0], np.float32))
    env = BoxIdentityEnv()
    env.reset = lambda seed=None: (np.array([2.0], np.float32), {})
    with pytest.raises(AssertionError, match=r"obs\[0\]=2.0 not in \[-1.0, 1.0\]"):
        check_env(env)


def test_non_finite_reward_is_caught():
    env = BoxIdentityEnv()
    env.step = lambda _action: (env.observation_space.sample(), float("nan"), False, False, {})
    with pytest.raises(NonFiniteError):
        check_env(env)
