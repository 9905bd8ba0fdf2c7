"""VecEnv adapters and wrappers: autoreset, seeding, normalization, monitoring, stacking, video."""

from __future__ import annotations

import csv
import json

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env import (
    DummyVecEnv,
    SubprocVecEnv,
    VecFrameStack,
    VecMonitor,
    VecNormalize,
    VecVideoRecorder,
)


def cartpole(max_episode_steps: int | None = None, **kwargs):
    return lambda: gym.make("CartPole-v1", max_episode_steps=max_episode_steps, **kwargs)


class CounterEnv(gym.Env):
    """Observation = steps since reset + 1, as a uint8 image; terminates after ``length`` steps."""

    def __init__(self, length: int = 3, channels_first: bool = False):
        shape = (1, 2, 2) if channels_first else (2, 2, 1)
        self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        self.action_space = gym.spaces.Discrete(2)
        self.length, self.t = length, 0

    def _obs(self) -> np.ndarray:
        return np.full(self.observation_space.shape, self.t + 1, dtype=np.uint8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), 1.0, self.t >= self.length, False, {"steps": self.t}


def rollout(venv, actions):
    """Step through ``actions`` and return everything the env gave back."""
    out = [venv.reset()]
    for action in actions:
        obs, rewards, terminated, truncated, infos = venv.step(action)
        finals = [info.get("final_observation") for info in infos]
        out += [obs, rewards, terminated, truncated,
                [np.zeros(4) if f is None else f for f in finals]]
    return out


# ---- DummyVecEnv / SubprocVecEnv ----------------------------------------------------------


def test_truncation_autoresets_with_final_observation():
    venv = DummyVecEnv([cartpole(max_episode_steps=5)] * 2)
    venv.seed(0)
    venv.reset()
    for step in range(1, 6):
        obs, _, terminated, truncated, infos = venv.step(np.zeros(2, dtype=np.int64))
        if step < 5:
            assert not truncated.any() and not terminated.any()
            assert all("final_observation" not in info for info in infos)
    assert truncated.all() and not terminated.any()
    for i in range(2):
        final = infos[i]["final_observation"]
        assert abs(final[1]) > 0.5  # five pushes to the left: the cart is moving
        assert np.all(np.abs(obs[i]) <= 0.05)  # a fresh reset state
    venv.close()


def test_termination_is_not_truncation():
    venv = DummyVecEnv([cartpole()])
    venv.seed(1)
    venv.reset()
    for _ in range(100):
        _, _, terminated, truncated, infos = venv.step(np.zeros(1, dtype=np.int64))
        assert not truncated.any()
        if terminated[0]:
            assert "final_observation" in infos[0]
            assert abs(infos[0]["final_observation"][2]) > 0.2  # the pole fell
            break
    else:
        pytest.fail("always pushing left should drop the pole")
    venv.close()


def test_subproc_matches_dummy():
    actions = np.random.default_rng(0).integers(0, 2, size=(12, 2))
    results = []
    for cls in (DummyVecEnv, SubprocVecEnv):
        venv = cls([cartpole(max_episode_steps=5)] * 2)
        venv.seed(3)
        results.append(rollout(venv, actions))
        venv.close()
    for a, b in zip(*results):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_seeding_is_reproducible():
    actions = np.random.default_rng(0).integers(0, 2, size=(8, 2))

    def run(seed):
        venv = DummyVecEnv([cartpole(max_episode_steps=4)] * 2)
        venv.seed(seed)
        return np.concatenate([np.ravel(x) for x in rollout(venv, actions)])

    np.testing.assert_array_equal(run(7), run(7))
    assert not np.array_equal(run(7), run(8))


# ---- VecNormalize -------------------------------------------------------------------------


def test_vec_normalize_statistics_and_final_observation():
    venv = VecNormalize(DummyVecEnv([cartpole(max_episode_steps=5)] * 2), gamma=0.9)
    venv.seed(0)
    obs = venv.reset()
    raw_obs, returns, raw_returns = [venv.get_original_obs()], np.zeros(2), []
    saw_final = False
    for _ in range(12):
        obs, _, terminated, truncated, infos = venv.step(np.ones(2, dtype=np.int64))
        raw_obs.append(venv.get_original_obs())
        returns = returns * 0.9 + venv.get_original_reward()
        raw_returns.append(returns.copy())
        returns[terminated | truncated] = 0.0
        for info in infos:
            if "final_observation" in info:
                saw_final = True
                assert info["final_observation"].dtype == np.float32
                assert np.all(np.abs(info["final_observation"]) <= venv.clipob)
    assert saw_final
    data = np.concatenate(raw_obs)
    # atol: the statistics start from a 1e-4 pseudo-count of mean 0, variance 1.
    np.testing.assert_allclose(venv.ob_rms.mean, data.mean(axis=0), rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(venv.ob_rms.var, data.var(axis=0), rtol=1e-3, atol=2e-5)
    np.testing.assert_allclose(venv.ret_rms.var, np.concatenate(raw_returns).var(), rtol=1e-3)
    expected = (venv.get_original_obs() - venv.ob_rms.mean) / np.sqrt(venv.ob_rms.var + 1e-8)
    np.testing.assert_allclose(obs, np.clip(expected, -10, 10), rtol=1e-5, atol=1e-5)
    assert obs.dtype == np.float32 and venv.observation_space.dtype == np.float32
    venv.close()


def test_vec_normalize_training_false_freezes():
    venv = VecNormalize(DummyVecEnv([cartpole()]))
    venv.reset()
    venv.step(np.zeros(1, dtype=np.int64))
    venv.training = False
    before = {k: v.copy() for k, v in venv.state_dict().items()}
    for _ in range(5):
        venv.step(np.zeros(1, dtype=np.int64))
    venv.reset()
    for key, value in venv.state_dict().items():
        np.testing.assert_array_equal(value, before[key])
    venv.close()


def test_vec_normalize_save_load_round_trip(tmp_path):
    venv = VecNormalize(DummyVecEnv([cartpole()]), clipob=5.0, gamma=0.95)
    venv.reset()
    for _ in range(20):
        venv.step(np.ones(1, dtype=np.int64))
    path = tmp_path / "vecnormalize.zip"
    venv.save(path)
    loaded = VecNormalize.load(path, DummyVecEnv([cartpole()]), training=False)
    assert loaded.config() == venv.config() and not loaded.training
    raw = np.random.default_rng(0).normal(size=(3, 4))
    np.testing.assert_array_equal(loaded.normalize_obs(raw), venv.normalize_obs(raw))
    np.testing.assert_array_equal(loaded.normalize_reward(np.ones(3)),
                                  venv.normalize_reward(np.ones(3)))
    with pytest.raises(RLBaseError, match="observation space"):
        VecNormalize.load(path, DummyVecEnv([lambda: gym.make("Pendulum-v1")]))
    venv.close()


def test_vec_normalize_normalizes_each_dict_entry_with_its_own_statistics():
    image_space = gym.spaces.Box(0, 255, (2, 2, 1), np.uint8)
    space = gym.spaces.Dict({"x": gym.spaces.Box(-10.0, 10.0, (2,), np.float32),
                             "image": image_space, "k": gym.spaces.Discrete(3)})

    class Steps(gym.Env):
        observation_space, action_space = space, gym.spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            self.t = 0
            return self._obs(), {}

        def _obs(self):
            return {"x": np.array([self.t, 2.0 * self.t], np.float32),
                    "image": np.full((2, 2, 1), self.t, np.uint8), "k": self.t % 3}

        def step(self, action):
            self.t += 1
            return self._obs(), 1.0, False, self.t >= 50, {}

    venv = VecNormalize(DummyVecEnv([Steps]), ret=False)
    assert venv.observation_space["image"] == image_space  # images and discrete left alone
    obs = venv.reset()
    for _ in range(3):
        obs, *_ = venv.step(np.array([0]))
    rms = venv.stats.leaf_rms[2]  # leaf order: image, k, x (sorted keys)
    xs = np.array([[0, 0], [1, 2], [2, 4], [3, 6]], np.float64)
    np.testing.assert_allclose(rms.mean, xs.mean(axis=0), rtol=1e-3)
    expected = (np.array([3.0, 6.0]) - rms.mean) / np.sqrt(rms.var + 1e-8)
    np.testing.assert_allclose(obs["x"][0], expected, rtol=1e-5)
    np.testing.assert_array_equal(obs["image"][0], np.full((2, 2, 1), 3, np.uint8))
    assert obs["k"][0] == 0
    assert sorted(venv.state_dict()) == ["ob_rms/x/count", "ob_rms/x/mean", "ob_rms/x/var"]


# ---- VecMonitor ---------------------------------------------------------------------------


def test_vec_monitor_records_episodes(tmp_path):
    venv = VecMonitor(DummyVecEnv([lambda: CounterEnv(3), lambda: CounterEnv(4)]),
                      filename=str(tmp_path), info_keywords=("steps",))
    venv.reset()
    episodes = []
    for _ in range(12):
        *_, infos = venv.step(np.zeros(2, dtype=np.int64))
        episodes += [info["episode"] for info in infos if "episode" in info]
    venv.close()
    assert sorted(e["l"] for e in episodes) == [3, 3, 3, 3, 4, 4, 4]
    assert all(e["r"] == e["l"] == e["steps"] for e in episodes)
    assert sorted(venv.episode_returns) == [3.0] * 4 + [4.0] * 3
    with open(tmp_path / "monitor.csv") as f:
        first = f.readline()
        rows = list(csv.DictReader(f))
    assert first.startswith("#") and "t_start" in json.loads(first[1:])
    assert list(rows[0]) == ["r", "l", "t", "steps"]
    assert sorted(int(r["l"]) for r in rows) == [3, 3, 3, 3, 4, 4, 4]
    assert all(float(r["r"]) == int(r["l"]) == int(r["steps"]) for r in rows)


def test_vec_monitor_csv_header_and_env_id(tmp_path):
    venv = VecMonitor(DummyVecEnv([cartpole(max_episode_steps=5)]), filename=str(tmp_path / "run"))
    venv.reset()
    for _ in range(5):
        venv.step(np.zeros(1, dtype=np.int64))
    venv.close()
    lines = (tmp_path / "run.monitor.csv").read_text().splitlines()
    assert json.loads(lines[0][1:])["env_id"] == "CartPole-v1"
    assert lines[1] == "r,l,t"
    assert lines[2].startswith("5.0,5,")


def test_vec_monitor_keeps_inner_episode():
    class InnerEpisode(gym.Wrapper):
        def step(self, action):
            obs, reward, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                info["episode"] = {"r": 100.0, "l": 50, "t": 0.0}
            return obs, reward, terminated, truncated, info

    venv = VecMonitor(DummyVecEnv([lambda: InnerEpisode(CounterEnv(2))]))
    venv.reset()
    venv.step(np.zeros(1, dtype=np.int64))
    *_, infos = venv.step(np.zeros(1, dtype=np.int64))
    assert infos[0]["episode"]["r"] == 100.0
    assert venv.episode_returns == [100.0] and venv.episode_lengths == [50]


# ---- VecFrameStack ------------------------------------------------------------------------


@pytest.mark.parametrize("channels_first", [False, True])
def test_vec_frame_stack(channels_first):
    order = "first" if channels_first else "last"
    venv = VecFrameStack(DummyVecEnv([lambda: CounterEnv(3, channels_first)]), 3, order)
    expected_shape = (1, 3, 2, 2) if channels_first else (1, 2, 2, 3)
    assert venv.observation_space.shape == expected_shape[1:]

    def channels(stack: np.ndarray) -> list[int]:
        """The value of each stacked frame (every pixel of a frame holds the same value)."""
        frames = np.moveaxis(stack[0] if stack.ndim == 4 else stack, 0 if channels_first else -1, 0)
        return [int(frame.flat[0]) for frame in frames]

    obs = venv.reset()
    assert obs.shape == expected_shape and obs.dtype == np.uint8
    assert channels(obs) == [0, 0, 1]
    obs, *_ = venv.step(np.zeros(1, dtype=np.int64))
    assert channels(obs) == [0, 1, 2]
    obs, *_ = venv.step(np.zeros(1, dtype=np.int64))
    assert channels(obs) == [1, 2, 3]
    obs, _, terminated, _, infos = venv.step(np.zeros(1, dtype=np.int64))
    assert terminated[0]
    assert channels(obs) == [0, 0, 1]  # the new episode starts from zeros
    final = infos[0]["final_observation"]
    assert final.shape == expected_shape[1:] and final.dtype == np.uint8
    assert channels(final) == [2, 3, 4]
    venv.close()


class NoiseEnv(gym.Env):
    """Random 3x4 two-channel uint8 frames, each logged to ``emitted``; episodes end at random."""

    def __init__(self, seed: int, channels_first: bool, emitted: list):
        shape = (2, 3, 4) if channels_first else (3, 4, 2)
        self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        self.action_space = gym.spaces.Discrete(2)
        self.rng, self.emitted = np.random.default_rng(seed), emitted

    def _obs(self) -> np.ndarray:
        frame = self.rng.integers(0, 256, self.observation_space.shape, dtype=np.uint8)
        self.emitted.append(frame)
        return frame

    def reset(self, *, seed=None, options=None):
        self.emitted.clear()
        return self._obs(), {}

    def step(self, action):
        frame = self._obs()
        done = bool(self.rng.random() < 0.2)
        if done:  # what the stack must hold for this episode's end; reset() clears the log
            self.final = list(self.emitted)
        return frame, 0.0, done, False, {}


@pytest.mark.parametrize("channels_first", [False, True])
def test_vec_frame_stack_holds_each_episodes_last_frames(channels_first):
    """With several envs, multi-channel frames and random episode ends, every stack is the
    episode's last 3 frames in order (zeros before its first), final observations included."""
    axis = 0 if channels_first else -1
    logs = [[] for _ in range(3)]
    envs = [NoiseEnv(i, channels_first, logs[i]) for i in range(3)]
    venv = VecFrameStack(DummyVecEnv([lambda e=e: e for e in envs]), 3,
                         "first" if channels_first else "last")

    def stack_of(frames: list) -> np.ndarray:
        frames = frames[-3:]
        return np.concatenate([np.zeros_like(frames[0])] * (3 - len(frames)) + frames, axis=axis)

    obs = venv.reset()
    ends = 0
    for _ in range(60):
        for i in range(3):
            assert np.array_equal(obs[i], stack_of(logs[i]))
        obs, _, terminated, _, infos = venv.step(np.zeros(3, dtype=np.int64))
        for i in np.flatnonzero(terminated):
            assert np.array_equal(infos[i]["final_observation"], stack_of(envs[i].final))
            ends += 1
    assert ends > 5
    venv.close()


def test_vec_frame_stack_bad_arguments():
    with pytest.raises(RLBaseError, match="nstack"):
        VecFrameStack(DummyVecEnv([cartpole()]), 0)
    with pytest.raises(RLBaseError, match="channels_order"):
        VecFrameStack(DummyVecEnv([cartpole()]), 2, "middle")


# ---- VecVideoRecorder ---------------------------------------------------------------------


def test_vec_video_recorder_writes_mp4(tmp_path):
    import cv2

    venv = VecVideoRecorder(DummyVecEnv([cartpole(render_mode="rgb_array")]), str(tmp_path),
                            record_video_trigger=lambda step: step == 0, video_length=30)
    venv.seed(0)
    venv.reset()
    for _ in range(40):
        venv.step(np.zeros(1, dtype=np.int64))
    venv.close()
    assert len(venv.video_paths) == 1
    path = tmp_path / "rl-video-step-0-to-step-30.mp4"
    assert path.exists() and path.stat().st_size > 0
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame)
    capture.release()
    assert len(frames) == 30 and frames[0].shape == (400, 600, 3)


def test_nested_info_dicts_are_split_per_env_on_every_step():
    class NestedInfo(gym.Env):
        observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            self.t = 0
            return np.zeros(1, np.float32), {"stats": {"x": 0}}

        def step(self, action):
            self.t += 1
            info = {"stats": {"x": self.t, "y": {"z": 2 * self.t}}}
            return np.zeros(1, np.float32), 0.0, False, self.t >= 3, info

    venv = DummyVecEnv([NestedInfo, NestedInfo])
    venv.reset()
    _, _, _, _, infos = venv.step(np.array([0, 1]))  # a non-final step
    assert infos == [{"stats": {"x": 1, "y": {"z": 2}}}] * 2
    venv.step(np.array([0, 0]))
    _, _, _, truncated, infos = venv.step(np.array([0, 0]))  # the final step
    assert truncated.all() and infos[0]["stats"] == {"x": 3, "y": {"z": 6}}
