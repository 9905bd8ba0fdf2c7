"""rlbase export: the exported artifact's actions equal ``predict(obs, deterministic=True)``.

Every algorithm x network x observation kind the classes build (Box, Discrete, MultiDiscrete,
MultiBinary, Dict/Tuple, images), each through one or more formats (all three for the main
cases, to keep the suite short), on observations recorded from the env: exactly for discrete
actions, within 1e-5 for Box actions. Recurrent policies agree over whole episodes. Models are
untrained (or trained a few hundred steps where statistics matter): parity does not need skill.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pytest

import rlbase
from rlbase.common import nested
from rlbase.common.errors import RLBaseError
from rlbase.common.export import runners
from rlbase.common.export.graph import input_names
from rlbase.common.export.metadata import FILENAME
from rlbase.common.vec_env import DummyVecEnv, VecNormalize
from tests.envs.dict_envs import CueEnv
from tests.identity_envs import (
    BoxIdentityEnv,
    DiscreteIdentityEnv,
    MultiBinaryIdentityEnv,
    MultiDiscreteIdentityEnv,
)

ALL = ("saved_model", "tflite", "onnx")
BOX_TOLERANCE = 1e-5
NUM_OBS = 256
HAVE_ONNX = all(__import__("importlib").util.find_spec(m) is not None
                for m in ("tf2onnx", "onnxruntime"))


class ImageEnv(gym.Env):
    """Atari-shaped observations (84x84x4 uint8, random pixels), three actions."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)
        self.action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        super().reset(seed=seed)
        return self._obs(), {}

    def _obs(self) -> np.ndarray:
        return self.np_random.integers(0, 256, (84, 84, 4), dtype=np.uint8)

    def step(self, action: Any) -> Any:
        return self._obs(), 0.0, False, False, {}


ENVS: dict[str, Callable[[], gym.Env]] = {
    "cartpole": lambda: gym.make("CartPole-v1"),
    "pendulum": lambda: gym.make("Pendulum-v1"),
    "discrete": lambda: DiscreteIdentityEnv(5),
    "multidiscrete": lambda: MultiDiscreteIdentityEnv((3, 4)),
    "multibinary": lambda: MultiBinaryIdentityEnv(4),
    "box": lambda: BoxIdentityEnv(2),
    "image": ImageEnv,
    "dict": lambda: CueEnv("dict"),
    "tuple_box": lambda: CueEnv("tuple", continuous=True, image=False),
    "tuple": lambda: CueEnv("tuple", image=False),
}

# (class, policy, env, hyperparameters, formats)
CASES = [
    ("PPO", "MlpPolicy", "cartpole", {}, ALL),
    ("PPO", "MlpPolicy", "multidiscrete", {}, ("tflite",)),
    ("PPO", "MlpPolicy", "multibinary", {}, ("onnx",)),
    ("PPO", "CnnPolicy", "image", {}, ("tflite",)),
    ("PPO", "MultiInputPolicy", "dict", {}, ALL),
    ("PPO", "CnnLstmPolicy", "image", {"nminibatches": 1}, ("onnx",)),
    ("A2C", "MlpLnLstmPolicy", "cartpole", {}, ("tflite",)),
    ("A2C", "MlpPolicy", "discrete", {}, ("saved_model",)),
    ("A2C", "MlpPolicy", "box", {}, ("tflite", "onnx")),
    ("ACER", "MlpPolicy", "cartpole", {}, ("onnx",)),
    ("ACKTR", "MlpPolicy", "cartpole", {}, ("tflite",)),
    ("TRPO", "MlpPolicy", "pendulum", {}, ("onnx",)),
    ("GAIL", "MlpPolicy", "cartpole", {}, ("saved_model",)),
    ("DQN", "MlpPolicy", "cartpole", {}, ("tflite", "onnx")),
    ("DQN", "CnnPolicy", "image", {}, ALL),
    ("DQN", "MultiInputPolicy", "dict", {}, ("saved_model",)),
    ("PQN", "MlpPolicy", "cartpole", {"nsteps": 16, "nminibatches": 1}, ("saved_model",)),
    ("PQN", "CnnPolicy", "image", {"nsteps": 16, "nminibatches": 1}, ("tflite", "onnx")),
    ("DDPG", "MlpPolicy", "pendulum", {"normalize_observations": True}, ("tflite", "onnx")),
    ("TD3", "MlpPolicy", "pendulum", {}, ("saved_model",)),
    ("DDPG", "MultiInputPolicy", "tuple_box", {"normalize_observations": True}, ("tflite",)),
    ("SAC", "MlpPolicy", "pendulum", {}, ALL),
    ("SAC", "MultiInputPolicy", "tuple_box", {}, ("onnx",)),
    ("ES", "MlpPolicy", "pendulum", {}, ("tflite",)),
    ("ES", "MlpPolicy", "discrete", {}, ("onnx",)),
    ("ES", "MultiInputPolicy", "tuple", {}, ("saved_model",)),
]


def record(env: gym.Env, n: int, seed: int = 0) -> Any:
    """``n`` observations of ``env`` under random actions (a batch, nested like the space)."""
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    seen = []
    for _ in range(n):
        seen.append(obs)
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()
    return nested.stack(env.observation_space, seen)


def named(space: gym.Space, obs: Any) -> dict[str, np.ndarray]:
    return dict(zip(input_names(space), (np.ascontiguousarray(x)
                                         for x in nested.flatten(space, obs))))


def export_and_load(model: Any, fmt: str, folder: str) -> runners.Runner:
    if fmt == "onnx" and not HAVE_ONNX:
        pytest.skip("tf2onnx/onnxruntime not installed (pip install 'rlbase[export]')")
    return runners.load(model.export(folder, format=fmt))


def assert_same_actions(space: gym.Space, got: np.ndarray, expected: np.ndarray) -> None:
    assert got.shape == expected.shape
    if isinstance(space, gym.spaces.Box):
        np.testing.assert_allclose(got, expected, rtol=0, atol=BOX_TOLERANCE)
    else:
        np.testing.assert_array_equal(got, expected)
        assert got.dtype == expected.dtype


@pytest.mark.parametrize("cls,policy,env_name,kwargs,formats", CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_exported_actions_equal_predict(cls, policy, env_name, kwargs, formats, tmp_path):
    env = ENVS[env_name]()
    model = getattr(rlbase, cls)(policy, env, seed=1, **kwargs)
    obs = record(ENVS[env_name](), NUM_OBS)
    expected = model.predict(obs, deterministic=True)[0]  # (recurrent: initial states)
    inputs = named(env.observation_space, obs)
    if model.model.state_size:
        inputs["state"] = model.model.initial_states(NUM_OBS)
        inputs["mask"] = np.zeros(NUM_OBS, np.float32)
    for fmt in formats:
        run = export_and_load(model, fmt, str(tmp_path / fmt))
        assert_same_actions(env.action_space, run(**inputs)["actions"], expected)


def test_vec_normalize_statistics_are_baked_in(tmp_path):
    """The artifact takes raw env observations: predict takes them normalized by the saved
    statistics (as the VecNormalize env gives them)."""
    env = VecNormalize(DummyVecEnv([ENVS["pendulum"]]))
    model = rlbase.PPO("MlpPolicy", env, seed=0, n_steps=64, batch_size=64, n_epochs=1)
    model.learn(256)
    model.save(tmp_path / "m.zip")
    loaded = rlbase.PPO.load(tmp_path / "m.zip")
    stats = loaded.model.normalization
    assert stats is not None and np.abs(stats.leaf_rms[0].mean).max() > 0.01
    raw = record(ENVS["pendulum"](), NUM_OBS)
    expected = loaded.predict(stats.normalize_obs(raw), deterministic=True)[0]
    for fmt in ALL:
        run = export_and_load(loaded, fmt, str(tmp_path / fmt))
        assert_same_actions(loaded.action_space, run(obs=raw)["actions"], expected)
    info = json.loads((tmp_path / "tflite" / FILENAME).read_text())
    assert info["vec_normalize_baked_in"] is True


def test_vec_normalize_of_dict_observations_is_per_entry(tmp_path):
    """A Dict space: only its non-image Box entry has statistics; the artifact normalizes
    that entry and passes the cue (Discrete) and the image (uint8) through."""
    env = VecNormalize(DummyVecEnv([ENVS["dict"]]))
    model = rlbase.PPO("MultiInputPolicy", env, seed=0, n_steps=64, batch_size=64, n_epochs=1)
    model.learn(128)
    stats = model.model.normalization
    assert stats is not None and [rms is None for rms in stats.leaf_rms] == [True, True, False]
    raw = record(ENVS["dict"](), NUM_OBS)
    expected = model.predict(stats.normalize_obs(raw), deterministic=True)[0]
    run = export_and_load(model, "tflite", str(tmp_path / "t"))
    assert_same_actions(model.action_space, run(**named(env.observation_space, raw))["actions"],
                        expected)


def test_recurrent_policies_agree_over_whole_episodes(tmp_path):
    """An LSTM policy driven step by step (state in, state out, the mask at each episode's
    start) gives predict's actions and states over several episodes."""
    model = rlbase.PPO("MlpLstmPolicy", "CartPole-v1", seed=2, nminibatches=1)
    runs = {fmt: export_and_load(model, fmt, str(tmp_path / fmt)) for fmt in ALL}
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=0)
    state = np.zeros((1, model.model.state_size), np.float32)
    states = {fmt: state.copy() for fmt in ALL}
    start, episodes, steps = True, 0, 0
    while episodes < 3:
        mask = np.array([float(start)], np.float32)
        action, state = model.predict(obs[None], state, mask, deterministic=True)
        for fmt, run in runs.items():
            out = run(obs=obs[None].astype(np.float32), state=states[fmt], mask=mask)
            np.testing.assert_array_equal(out["actions"], action)
            np.testing.assert_allclose(out["next_state"], state, rtol=0, atol=BOX_TOLERANCE)
            states[fmt] = out["next_state"]
        obs, _, terminated, truncated, _ = env.step(int(action[0]))
        start, steps = terminated or truncated, steps + 1
        if start:
            obs, _ = env.reset()
            episodes += 1
    assert steps > 3 * 5


def test_sample_signature_draws_from_the_policy(tmp_path):
    """The SavedModel's ``sample`` signature: seeded (same seed, same actions) and a real
    draw (other seeds give other actions of a near-uniform untrained policy)."""
    import tensorflow as tf

    model = rlbase.PPO("MlpPolicy", "CartPole-v1", seed=0)
    loaded = tf.saved_model.load(model.export(str(tmp_path / "sm")))
    obs = record(gym.make("CartPole-v1"), 200)
    sample = loaded.signatures["sample"]
    a = sample(obs=obs, seed=tf.constant([1, 2], tf.int64))["actions"].numpy()
    b = sample(obs=obs, seed=tf.constant([1, 2], tf.int64))["actions"].numpy()
    c = sample(obs=obs, seed=tf.constant([3, 4], tf.int64))["actions"].numpy()
    np.testing.assert_array_equal(a, b)
    assert 0.3 < np.mean(a) < 0.7 and np.mean(a != c) > 0.2
    info = json.loads((tmp_path / "sm" / "assets" / FILENAME).read_text())
    assert info["rlbase_version"] == rlbase.__version__
    assert info["signatures"] == ["sample", "serving_default"]
    assert info["observation_space"]["type"] == "Box"


def test_int8_tflite_agreement_is_measured_and_reported(tmp_path):
    model = rlbase.PPO("MlpPolicy", "CartPole-v1", seed=0)
    model.export(str(tmp_path), format="tflite", quantize=True)
    int8 = json.loads((tmp_path / FILENAME).read_text())["int8"]
    assert int8["samples"] == 1000 and 0.0 <= int8["fraction_equal"] <= 1.0
    assert (tmp_path / int8["file"]).stat().st_size < (tmp_path / "policy.tflite").stat().st_size


def test_what_cannot_be_exported_is_one_line(tmp_path, monkeypatch):
    q = rlbase.QLearning("TabularPolicy", DiscreteIdentityEnv(3))
    with pytest.raises(RLBaseError, match="qlearning's model is not a network"):
        q.export(str(tmp_path / "q"))
    model = rlbase.PPO("MlpPolicy", "CartPole-v1", seed=0)
    with pytest.raises(RLBaseError, match="unknown export format 'pb'; use one of"):
        model.export(str(tmp_path / "x"), format="pb")
    with pytest.raises(RLBaseError, match="quantize applies to the tflite format"):
        model.export(str(tmp_path / "x"), format="onnx", quantize=True)
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "tf2onnx" else real(name, *a))
    with pytest.raises(RLBaseError, match=r"needs tf2onnx, which is not installed: pip install "
                                          r"'rlbase\[export\]'"):
        model.export(str(tmp_path / "x"), format="onnx")
    assert not os.path.exists(tmp_path / "q") and not os.path.exists(tmp_path / "x")
