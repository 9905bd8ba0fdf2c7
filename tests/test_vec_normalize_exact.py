"""VecNormalize against hand-computed numbers: which returns and observations its statistics
see (gamma, both kinds of episode end), the normalized and scaled values for given statistics,
their inverses, the final observation, and each refusal's message."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.running_mean_std import RunningMeanStd
from rlbase.common.vec_env import DummyVecEnv, VecNormalize
from rlbase.common.vec_env.vec_normalize import (
    RAW_FINAL_OBSERVATION,
    NormalizationStats,
    _checked_config,
    normalizable,
)


class Ramp(gym.Env):
    """Observation [t, -2t] after t steps of the episode, reward t for the step to t; the
    episode ends at t == length, terminated or truncated."""

    observation_space = gym.spaces.Box(-100.0, 100.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length: int, truncate: bool):
        self.length, self.truncate, self.t = length, truncate, 0

    def _obs(self):
        return np.array([self.t, -2.0 * self.t], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        end = self.t >= self.length
        return self._obs(), float(self.t), end and not self.truncate, end and self.truncate, {}


class Recorder(RunningMeanStd):
    """A RunningMeanStd that keeps every batch it is given."""

    def __init__(self, shape=()):
        super().__init__(shape=shape)
        self.batches = []

    def update(self, x):
        self.batches.append(np.array(x, np.float64))
        super().update(x)


def ramps(**kwargs) -> VecNormalize:
    # env 0 terminates after 2 steps, env 1 is truncated after 3
    return VecNormalize(DummyVecEnv([lambda: Ramp(2, False), lambda: Ramp(3, True)]), **kwargs)


def act(env):
    return env.step(np.zeros(2, np.int64))


def set_stats(rms, mean, var):
    rms.load_state_dict({"mean": np.asarray(mean, np.float64), "var": np.asarray(var, np.float64),
                         "count": np.asarray(10.0)})


def test_the_return_statistics_see_the_discounted_returns_restarted_at_either_end():
    env = ramps(gamma=0.5)
    env.ret_rms = recorder = Recorder()
    env.reset()
    for _ in range(4):
        act(env)
    # rewards: env 0 1, 2 (terminated), 1, 2; env 1 1, 2, 3 (truncated), 1
    # returns R = 0.5 R + r, set to 0 after an end: env 0 1, 2.5, 1, 2.5; env 1 1, 2.5, 4.25, 1
    np.testing.assert_array_equal(np.stack(recorder.batches), [[1, 1], [2.5, 2.5], [1, 4.25],
                                                               [2.5, 1]])
    np.testing.assert_array_equal(env.returns, [0.0, 1.0])  # env 0 just terminated


def test_frozen_statistics_see_nothing_but_the_returns_still_run():
    env = ramps(gamma=0.5, training=False)
    env.ret_rms = recorder = Recorder()
    env.obs_rms = obs_recorder = Recorder((2,))
    env.reset()
    act(env)
    act(env)
    assert recorder.batches == [] and obs_recorder.batches == []
    np.testing.assert_array_equal(env.returns, [0.0, 2.5])


def test_the_observation_statistics_see_resets_and_steps_but_a_resumed_reset_once():
    env = ramps()
    env.obs_rms = recorder = Recorder((2,))
    env.reset()
    act(env)
    act(env)  # env 0 terminates: the batch holds its reset observation [0, 0]
    np.testing.assert_array_equal(np.stack(recorder.batches),
                                  [[[0, 0], [0, 0]], [[1, -2], [1, -2]], [[0, 0], [2, -4]]])
    env.resumed()
    env.reset()
    assert len(recorder.batches) == 3  # restored statistics had counted this reset
    env.reset()
    assert len(recorder.batches) == 4  # only the first reset after resuming is skipped


def test_normalized_values_and_their_inverses_by_hand():
    env = ramps(clipob=1.5, cliprew=1.0)
    set_stats(env.obs_rms, [1.0, -2.0], [4.0, 16.0])
    set_stats(env.ret_rms, 0.0, 4.0)
    # (3 - 1) / 2 = 1, (-10 + 2) / 4 = -2 -> clipped to -1.5; (0 - 1) / 2 = -0.5
    obs = env.normalize_obs(np.array([[3.0, -10.0], [0.0, -2.0]]))
    assert obs.dtype == np.float32
    np.testing.assert_allclose(obs, [[1.0, -1.5], [-0.5, 0.0]], rtol=1e-7)
    # rewards / sqrt(4): 1.5 -> clipped to 1, -0.5, -5 / 2 -> clipped to -1
    rewards = env.normalize_reward(np.array([3.0, -1.0, -5.0]))
    assert rewards.dtype == np.float32
    np.testing.assert_allclose(rewards, [1.0, -0.5, -1.0], rtol=1e-7)
    np.testing.assert_allclose(env.unnormalize_obs(np.array([[1.0, -2.0]])), [[3.0, -10.0]],
                               rtol=1e-7)
    np.testing.assert_allclose(env.unnormalize_reward(np.array([1.5, -0.5])), [3.0, -1.0],
                               rtol=1e-7)
    assert env.observation_space == gym.spaces.Box(-1.5, 1.5, (2,), np.float32)


def test_epsilon_is_added_to_the_variances():
    env = ramps(epsilon=5.0, clipob=100.0, cliprew=100.0)
    set_stats(env.obs_rms, [0.0, 0.0], [4.0, 11.0])  # sqrt(4 + 5) = 3, sqrt(11 + 5) = 4
    set_stats(env.ret_rms, 0.0, 20.0)  # sqrt(25) = 5
    np.testing.assert_allclose(env.normalize_obs(np.array([[6.0, 8.0]])), [[2.0, 2.0]])
    np.testing.assert_allclose(env.normalize_reward(np.array([10.0])), [2.0])
    np.testing.assert_allclose(env.unnormalize_obs(np.array([[2.0, 2.0]])), [[6.0, 8.0]])
    np.testing.assert_allclose(env.unnormalize_reward(np.array([2.0])), [10.0])


def test_the_final_observation_is_normalized_and_the_raw_one_kept():
    env = ramps(training=False, clipob=100.0)
    set_stats(env.obs_rms, [1.0, -2.0], [4.0, 16.0])
    env.reset()
    act(env)
    obs, _, terminated, _, infos = act(env)
    assert terminated.tolist() == [True, False]
    np.testing.assert_array_equal(infos[0][RAW_FINAL_OBSERVATION], [2.0, -4.0])
    np.testing.assert_allclose(infos[0]["final_observation"], [0.5, -0.5])  # (2-1)/2, (-4+2)/4
    assert "final_observation" not in infos[1] and RAW_FINAL_OBSERVATION not in infos[1]
    np.testing.assert_allclose(obs, [[-0.5, 0.5], [0.5, -0.5]])  # env 0 reset to [0, 0]
    np.testing.assert_array_equal(env.get_original_obs(), [[0.0, 0.0], [2.0, -4.0]])
    np.testing.assert_array_equal(env.get_original_reward(), [2.0, 2.0])


def test_settings_under_either_name():
    env = ramps(norm_obs=False, clip_reward=3.0, gamma=0.7, epsilon=0.5)
    assert not env.norm_obs and env.ob_rms is None and env.norm_reward
    assert env.changes_rewards  # its rewards are not the env's own (ensure_monitor checks this)
    assert env.config() == {"ob": False, "ret": True, "clipob": 10.0, "cliprew": 3.0,
                            "gamma": 0.7, "epsilon": 0.5}
    env.clip_obs = 4  # SB3's settable names: stored as floats on the shared statistics
    env.clip_reward = 2
    assert env.clipob == 4.0 and isinstance(env.stats.clipob, float)
    assert env.cliprew == 2.0 and isinstance(env.stats.cliprew, float)
    with pytest.raises(AttributeError):
        env.clipob = 5.0  # rlbase's name reads only
    assert ramps(ob=False, ret=False).config()["ret"] is False
    with pytest.raises(RLBaseError, match=r"VecNormalize got cliprew=1.0 and clip_reward=2.0"):
        ramps(cliprew=1.0, clip_reward=2.0)


def test_refusals_name_the_bad_value():
    with pytest.raises(RLBaseError, match=r"needs a Box \(or a Dict/Tuple\) observation space, "
                                          r"got Discrete\(3\)"):
        _discrete_observations()
    for shape in ((3,), (1,)):  # shapes sorting after and before the env's (2,)
        other = NormalizationStats(gym.spaces.Box(-1.0, 1.0, shape, np.float32))
        with pytest.raises(RLBaseError, match="normalization statistics of .* do not fit"):
            ramps(stats=other)
    env = ramps()
    with pytest.raises(RLBaseError, match=r"RunningMeanStd of shape \(2,\), got shape \(3,\)"):
        env.obs_rms = RunningMeanStd(shape=(3,))
    with pytest.raises(RLBaseError, match=r"RunningMeanStd of shape \(2,\), got int"):
        env.obs_rms = 3
    with pytest.raises(RLBaseError, match="ret_rms must be a scalar RunningMeanStd, got "
                                          "RunningMeanStd"):
        env.ret_rms = RunningMeanStd(shape=(2,))
    with pytest.raises(RLBaseError, match="scalar RunningMeanStd, got float"):
        env.ret_rms = 1.0
    bare = ramps(ob=False, ret=False)
    with pytest.raises(RLBaseError, match="ret_rms: this VecNormalize keeps no return"):
        bare.ret_rms = RunningMeanStd()
    with pytest.raises(RLBaseError, match="norm_obs=True: this VecNormalize keeps no obs"):
        bare.norm_obs = True
    with pytest.raises(RLBaseError, match="norm_reward=True: this VecNormalize keeps no ret"):
        bare.norm_reward = True
    with pytest.raises(RLBaseError, match="unnormalize_obs needs"):
        bare.unnormalize_obs(np.zeros((1, 2)))
    with pytest.raises(RLBaseError, match="unnormalize_reward needs"):
        bare.unnormalize_reward(np.zeros(1))
    with pytest.raises(RLBaseError, match="obs_rms can be set on a VecNormalize of a Box"):
        bare.obs_rms = RunningMeanStd(shape=(2,))
    bare.norm_obs, bare.norm_reward = False, False  # turning off what is off is fine


def _discrete_observations():
    class Discrete(Ramp):
        observation_space = gym.spaces.Discrete(3)

        def _obs(self):
            return 0

    return VecNormalize(DummyVecEnv([lambda: Discrete(2, False)]), ob=True)


def test_loading_statistics_checks_them_all_first():
    env = ramps()
    set_stats(env.obs_rms, [1.0, 2.0], [3.0, 4.0])
    good = env.state_dict()
    assert sorted(good) == ["ob_rms/count", "ob_rms/mean", "ob_rms/var", "ret_rms/count",
                            "ret_rms/mean", "ret_rms/var"]
    fresh = ramps()
    bad = {**good, "ret_rms/mean": np.zeros(2)}  # ob_rms fits, ret_rms does not
    with pytest.raises(RLBaseError, match="RunningMeanStd state has mean shape"):
        fresh.load_state_dict(bad)
    np.testing.assert_array_equal(fresh.obs_rms.mean, [0.0, 0.0])  # nothing loaded
    with pytest.raises(RLBaseError, match="no ret_rms statistics, but this wrapper normalizes "
                                          "rewards"):
        fresh.load_state_dict({k: v for k, v in good.items() if k.startswith("ob_rms/")})
    with pytest.raises(RLBaseError, match="no ob_rms statistics, but this wrapper normalizes "
                                          "observations"):
        fresh.load_state_dict({k: v for k, v in good.items() if k.startswith("ret_rms/")})
    # a deeper key (another entry's statistics) is not this one's
    with pytest.raises(RLBaseError, match="no ob_rms statistics"):
        fresh.load_state_dict({**{f"ob_rms/x/{k[7:]}": v for k, v in good.items()
                                  if k.startswith("ob_rms/")},
                               **{k: v for k, v in good.items() if k.startswith("ret_rms/")}})
    fresh.load_state_dict(good)
    np.testing.assert_array_equal(fresh.obs_rms.var, [3.0, 4.0])


def test_saved_configs_are_checked():
    config = ramps(gamma=0.9).config()
    assert _checked_config(config) is config
    stats = NormalizationStats.from_config(Ramp.observation_space, {**config, "ob": False})
    assert stats.space is None and stats.ret_rms is not None and stats.gamma == 0.9
    for bad in ({**config, "ob": 1}, {**config, "gamma": True}, {**config, "clipob": "10"},
                {k: v for k, v in config.items() if k != "epsilon"}, {**config, "x": 1}, None):
        with pytest.raises(RLBaseError, match="malformed VecNormalize config"):
            _checked_config(bad)
    assert _checked_config({**config, "cliprew": 5}, "f ")["cliprew"] == 5  # an int is a number


def test_a_file_of_another_kind_is_refused(tmp_path):
    from rlbase.common.io import serialization

    for kind in ("Other", "Wrapper"):  # names before and after "VecNormalize"
        path = tmp_path / f"{kind}.zip"
        serialization.save_file(path, {"kind": kind}, {})
        with pytest.raises(RLBaseError, match=f"holds '{kind}', not VecNormalize statistics"):
            VecNormalize.load(path, DummyVecEnv([lambda: Ramp(2, False)]))


def test_a_file_written_before_the_switches_loads_them_on(tmp_path):
    from rlbase.common.io import serialization

    env = ramps(gamma=0.9)
    set_stats(env.obs_rms, [1.0, 2.0], [3.0, 4.0])
    path = tmp_path / "old.zip"
    serialization.save_file(path, {"kind": "VecNormalize", "config": env.config(),
                                   **serialization.spaces_metadata(env.venv.observation_space,
                                                                   env.venv.action_space)},
                            env.state_dict())
    loaded = VecNormalize.load(path, DummyVecEnv([lambda: Ramp(2, False), lambda: Ramp(3, True)]))
    assert loaded.training and loaded.norm_obs and loaded.norm_reward
    assert loaded.gamma == 0.9 and loaded.obs_rms.var.tolist() == [3.0, 4.0]


def test_which_entries_of_a_dict_space_are_normalized():
    assert not normalizable(gym.spaces.Box(0, 255, (4, 4, 1), np.uint8))  # an image
    assert normalizable(gym.spaces.Box(0, 255, (4, 4), np.uint8))
    assert normalizable(gym.spaces.Box(0.0, 1.0, (4, 4, 1), np.float32))
    assert normalizable(gym.spaces.Box(0, 1, (4, 4, 1), np.bool_))  # only uint8 is an image
    assert normalizable(gym.spaces.Box(0, 255, (2, 4, 4, 1), np.uint8))  # 4-D: not an image
    assert not normalizable(gym.spaces.Discrete(3))
    space = gym.spaces.Dict({"x": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
                             "k": gym.spaces.Discrete(3)})
    stats = NormalizationStats(space, clipob=2.0)
    assert stats.ob_rms is None and stats.names == ["ob_rms/k", "ob_rms/x"]
    assert [rms is None for rms in stats.leaf_rms] == [True, False]
    normalized = stats.normalized_space()
    assert normalized["x"] == gym.spaces.Box(-2.0, 2.0, (2,), np.float32)
    assert normalized["k"] == gym.spaces.Discrete(3)
    one_entry = NormalizationStats(gym.spaces.Dict({"x": space["x"]}))
    assert one_entry.ob_rms is None and one_entry.names == ["ob_rms/x"]  # Box spaces only
    assert sorted(stats.state_dict()) == ["ob_rms/x/count", "ob_rms/x/mean", "ob_rms/x/var",
                                          "ret_rms/count", "ret_rms/mean", "ret_rms/var"]


def test_defaults_are_baselines_and_sb3s():
    expected = {"ob": True, "ret": True, "clipob": 10.0, "cliprew": 10.0, "gamma": 0.99,
                "epsilon": 1e-8}
    env = VecNormalize(DummyVecEnv([lambda: Ramp(2, False)]))
    assert env.config() == expected and env.training
    assert NormalizationStats(Ramp.observation_space).config() == expected


def test_a_follower_normalizes_with_the_statistics_and_never_updates_them():
    env = ramps(clipob=100.0)
    set_stats(env.obs_rms, [1.0, -2.0], [4.0, 16.0])
    follower = env.stats.follower(DummyVecEnv([lambda: Ramp(2, False), lambda: Ramp(3, True)]))
    assert not follower.training and follower.stats is env.stats
    np.testing.assert_allclose(follower.reset(), [[-0.5, 0.5], [-0.5, 0.5]])
    act(follower)
    np.testing.assert_array_equal(env.obs_rms.mean, [1.0, -2.0])  # no update
    # statistics without observations fit any observation space
    returns_only = NormalizationStats(None)
    assert returns_only.follower(DummyVecEnv([lambda: Ramp(2, False)])).stats is returns_only
