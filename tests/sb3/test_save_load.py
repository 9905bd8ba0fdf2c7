"""Port of Stable-Baselines3's tests/test_save_load.py to rlbase's classes (same cases, budgets
and checks; where rlbase differs on purpose -- numpy arrays instead of torch state dicts, no
pickled objects, no GPU here -- the test asserts what rlbase does instead)."""

from __future__ import annotations

import io
import os
import pathlib
import tempfile
import warnings

import gymnasium as gym
import numpy as np
import pytest
from identity_envs import BoxIdentityEnv, DiscreteIdentityEnv

from rlbase import A2C, DDPG, DQN, PPO, SAC, TD3
from rlbase.common.errors import RLBaseError
from rlbase.common.io.checkpoint import object_state
from rlbase.common.io.serialization import suffixed_path
from rlbase.common.vec_env import DummyVecEnv

MODEL_LIST = [PPO, A2C, TD3, SAC, DQN, DDPG]
# One on-policy and one off-policy class run by default; the rest with --runslow.
FAST = (A2C, DQN)


def classes(selected: list) -> list:
    return [c if c in FAST else pytest.param(c, marks=pytest.mark.slow) for c in selected]


class IdentityEnvBox(BoxIdentityEnv):
    """SB3's IdentityEnvBox(-10, 10): the identity task on a [-10, 10] box."""

    def __init__(self, low: float = -10.0, high: float = 10.0, episode_len: int = 100):
        super().__init__(1, episode_len)
        self.observation_space = gym.spaces.Box(low, high, (1,), np.float32)
        self.action_space = gym.spaces.Box(low, high, (1,), np.float32)


def select_env(model_class: type) -> gym.Env:
    """DQN needs Discrete actions."""
    return DiscreteIdentityEnv(10, episode_len=100) if model_class is DQN else IdentityEnvBox()


@pytest.mark.parametrize("model_class", classes(MODEL_LIST))
def test_save_load(tmp_path, model_class):
    env = DummyVecEnv([lambda: select_env(model_class)])
    kwargs: dict = {"learning_rate": 1e-3}
    if model_class is PPO:
        kwargs.update({"n_steps": 64, "n_epochs": 1})
    model = model_class("MlpPolicy", env, policy_kwargs=dict(net_arch=[16]), verbose=1, **kwargs)
    model.learn(total_timesteps=128)
    env.reset()
    observations = np.concatenate([env.step([env.action_space.sample()])[0]
                                   for _ in range(10)], axis=0)
    original = {k: dict(v) for k, v in model.get_parameters().items()}

    invalid = {**original, "I_should_not_be_a_valid_object": "and_I_am_an_invalid_tensor"}
    with pytest.raises(ValueError):
        model.set_parameters(invalid, exact_match=True)
    with pytest.raises(ValueError):
        model.set_parameters(invalid, exact_match=False)
    missing_object = dict(list(original.items())[:-1])
    with pytest.raises(ValueError):
        model.set_parameters(missing_object, exact_match=True)
    # A state dict missing an entry (torch raises RuntimeError; rlbase its ValueError).
    missing_entry = {name: dict(list(arrays.items())[:-1]) for name, arrays in original.items()}
    with pytest.raises(RLBaseError, match="missing parameter"):
        model.set_parameters(missing_entry, exact_match=True)

    rng = np.random.default_rng(0)
    random_params = {name: (arrays if "optim" in name else
                            {k: rng.random(np.shape(v)).astype(np.asarray(v).dtype)
                             for k, v in list(arrays.items())[:-1]})
                     for name, arrays in original.items()}
    model.set_parameters(random_params, exact_match=False)
    new_params = model.get_parameters()
    changed = 0
    for name, arrays in original.items():
        if "optim" in name:
            continue
        last = list(arrays)[-1]
        for key, value in arrays.items():
            if key == last:
                np.testing.assert_array_equal(value, new_params[name][key])
            elif np.size(value):
                assert not np.allclose(value, new_params[name][key]), (name, key)
                changed += 1
    assert changed
    params = new_params
    selected_actions, _ = model.predict(observations, deterministic=True)
    model.save(tmp_path / "test_save.zip")
    del model

    for device in ["auto", "cpu", "cuda"]:
        if device == "cuda" and not gpu_available():
            with pytest.raises(RLBaseError, match="sees no GPU"):
                model_class.load(str(tmp_path / "test_save.zip"), env=env, device=device)
            continue
        model = model_class.load(str(tmp_path / "test_save.zip"), env=env, device=device)
        assert model.device == ("cuda" if device == "cuda" or
                                (device == "auto" and gpu_available()) else "cpu")
        new_params = model.get_parameters()
        for name in new_params:
            if "optim" in name:
                continue
            for key in params[name]:
                np.testing.assert_allclose(params[name][key], new_params[name][key])
        new_selected_actions, _ = model.predict(observations, deterministic=True)
        np.testing.assert_allclose(selected_actions, new_selected_actions, 1e-4)
        model.learn(total_timesteps=128)
        del model
    os.remove(tmp_path / "test_save.zip")


def gpu_available() -> bool:
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))


@pytest.mark.parametrize("model_class", classes(MODEL_LIST))
def test_set_env(tmp_path, model_class):
    env = DummyVecEnv([lambda: select_env(model_class)])
    env2 = DummyVecEnv([lambda: select_env(model_class)])
    env3 = select_env(model_class)
    env4 = DummyVecEnv([lambda: select_env(model_class) for _ in range(2)])
    kwargs: dict = {}
    if model_class in {DQN, DDPG, SAC, TD3}:
        kwargs = dict(learning_starts=50, train_freq=4)
    elif model_class in {A2C, PPO}:
        kwargs = dict(n_steps=64)
    model = model_class("MlpPolicy", env, policy_kwargs=dict(net_arch=[16]), **kwargs)
    model.learn(total_timesteps=64)

    model.set_env(env2, force_reset=True)
    assert model.get_env() is not env and model.get_env().num_envs == 1
    model.learn(total_timesteps=64, reset_num_timesteps=True)
    assert model.num_timesteps == 64
    model.set_env(env3)  # a gymnasium env is wrapped
    model.learn(total_timesteps=64)
    # SB3 refuses another number of envs here; rlbase rebuilds the training call around the
    # same parameters.
    model.set_env(env4)
    assert model.n_envs == 2
    model.set_env(env2)
    # Every learn() starts from a reset: keeping the env's last observation is refused.
    with pytest.raises(RLBaseError, match="force_reset=True"):
        model.set_env(model.get_env(), force_reset=False)
    model.learn(total_timesteps=64, reset_num_timesteps=False)
    assert model.num_timesteps == 2 * 64

    current_env = model.get_env()
    model.save(tmp_path / "test_save.zip")
    del model
    with pytest.raises(RLBaseError, match="force_reset=True"):
        model_class.load(tmp_path / "test_save.zip", env=current_env, force_reset=False)
    model = model_class.load(tmp_path / "test_save.zip", env=env3, force_reset=True)
    assert model.num_timesteps == 2 * 64
    model.learn(total_timesteps=64, reset_num_timesteps=False)
    assert model.num_timesteps == 3 * 64
    del model
    model = model_class.load(tmp_path / "test_save.zip", env=env4)
    model.learn(total_timesteps=64)
    os.remove(tmp_path / "test_save.zip")


@pytest.mark.parametrize("model_class", classes(MODEL_LIST))
def test_exclude_include_saved_params(tmp_path, model_class, capsys):
    env = DummyVecEnv([lambda: select_env(model_class)])
    model = model_class("MlpPolicy", env, policy_kwargs=dict(net_arch=[16]), verbose=2)
    model.save(tmp_path / "test_save", exclude=["verbose"])
    del model
    model = model_class.load(str(tmp_path / "test_save.zip"))
    assert model.verbose != 2

    model.verbose = 2
    model.save(tmp_path / "test_save", exclude=["verbose"], include=["verbose"])
    del model
    custom_objects = dict(learning_rate=2e-5)
    model = model_class.load(str(tmp_path / "test_save.zip"), custom_objects=custom_objects,
                             print_system_info=True)
    assert "this system" in capsys.readouterr().out
    assert model.verbose == 2
    assert model.learning_rate == custom_objects["learning_rate"]
    # SB3 drops names the file does not hold; rlbase refuses them.
    with pytest.raises(RLBaseError, match="'dummy' is not something"):
        model_class.load(str(tmp_path / "test_save.zip"), custom_objects=dict(dummy=1.0))
    os.remove(tmp_path / "test_save.zip")


@pytest.mark.slow
def test_save_load_entropy_coefficient(tmp_path):
    """SB3's test_save_load_pytorch_var: SAC's learned entropy coefficient (rlbase's
    'state' arrays) survives save and load and keeps being optimized."""
    model = SAC("MlpPolicy", "Pendulum-v1", learning_starts=10, seed=3,
                policy_kwargs=dict(net_arch=[64]))
    model.learn(110)
    save_path = str(tmp_path / "sac_pendulum")
    model.save(save_path)
    env = model.get_env()
    before = model.get_parameters()["state"]
    del model
    model = SAC.load(save_path, env=env)
    for key, value in before.items():
        np.testing.assert_array_equal(value, model.get_parameters()["state"][key])
    model.learn(100)  # (SB3: 50; the buffer starts empty and needs a minibatch, see above)
    after = model.get_parameters()["state"]
    assert any(not np.array_equal(v, after[k]) for k, v in before.items())


def _buffer_arrays(model) -> dict[str, np.ndarray]:
    return object_state(model.replay_buffer, "replay")[1]


@pytest.mark.parametrize("model_class", classes([SAC, TD3, DQN]))
def test_save_load_replay_buffer(tmp_path, model_class):
    path = pathlib.Path(tmp_path / "logs/replay_buffer.pkl")
    path.parent.mkdir(exist_ok=True, parents=True)
    kwargs = dict(buffer_size=1000, policy_kwargs=dict(net_arch=[64]), learning_starts=100)
    model = model_class("MlpPolicy", select_env(model_class), **kwargs)
    model.learn(150)
    old = _buffer_arrays(model)
    assert len(model.replay_buffer) == 150
    model.save_replay_buffer(path)
    # A fresh model of the same settings (SB3 sets model.replay_buffer = None instead).
    fresh = model_class("MlpPolicy", select_env(model_class), **kwargs)
    assert len(fresh.replay_buffer) == 0
    fresh.load_replay_buffer(path)
    assert len(fresh.replay_buffer) == 150
    new = _buffer_arrays(fresh)
    assert old.keys() == new.keys()
    for key in old:
        np.testing.assert_array_equal(old[key], new[key])
    with pytest.raises(RLBaseError, match="truncate_last_traj"):
        fresh.load_replay_buffer(path, truncate_last_traj=False)
    fresh.learn(50)  # and it trains on it


def test_no_resource_warning(tmp_path):
    """str, pathlib.Path and open files, for models and replay buffers (files passed in are
    left open)."""
    PPO("MlpPolicy", "CartPole-v1", device="cpu").save(tmp_path / "dqn_cartpole")
    PPO.load(tmp_path / "dqn_cartpole", device="cpu")
    PPO("MlpPolicy", "CartPole-v1", device="cpu").save(str(tmp_path / "dqn_cartpole"))
    PPO.load(str(tmp_path / "dqn_cartpole"), device="cpu")
    with tempfile.TemporaryFile() as fp:
        PPO("MlpPolicy", "CartPole-v1", device="cpu").save(fp)
        PPO.load(fp, device="cpu")
        assert not fp.closed
    model = SAC("MlpPolicy", "Pendulum-v1", buffer_size=200)
    model.save_replay_buffer(tmp_path / "replay")
    assert (tmp_path / "replay.pkl").is_file()
    model.load_replay_buffer(tmp_path / "replay")
    model.save_replay_buffer(str(tmp_path / "replay"))
    model.load_replay_buffer(str(tmp_path / "replay"))
    with tempfile.TemporaryFile() as fp:
        model.save_replay_buffer(fp)
        fp.seek(0)
        model.load_replay_buffer(fp)
        assert not fp.closed


def test_dqn_target_update_interval(tmp_path):
    from rlbase.common.envs.make import make_vec_env

    env = make_vec_env("CartPole-v1", num_env=2)
    model = DQN("MlpPolicy", env, verbose=1, target_update_interval=100)
    model.save(tmp_path / "dqn_cartpole")
    del model
    model = DQN.load(tmp_path / "dqn_cartpole")
    os.remove(tmp_path / "dqn_cartpole.zip")
    assert model.target_update_interval == 100


@pytest.mark.parametrize("model_class", classes(MODEL_LIST))
def test_save_load_policy(tmp_path, model_class):
    """SB3 saves a policy alone (policy.save / Policy.load); rlbase saves it with its model,
    and the policy object acts, reads and sets weights as SB3's does."""
    kwargs: dict = dict(policy_kwargs=dict(net_arch=[16]), learning_rate=1e-3)
    if model_class is PPO:
        kwargs.update(n_steps=64, n_epochs=1)
    env = DummyVecEnv([lambda: select_env(model_class)])
    model = model_class("MlpPolicy", env, verbose=1, **kwargs)
    model.learn(total_timesteps=128)
    env.reset()
    observations = np.concatenate([env.step([env.action_space.sample()])[0]
                                   for _ in range(10)], axis=0)
    policy = model.policy
    params = policy.state_dict()
    rng = np.random.default_rng(0)
    random_params = {k: rng.random(np.shape(v)).astype(v.dtype) for k, v in params.items()}
    policy.load_state_dict(random_params)
    for k, v in policy.state_dict().items():
        if np.size(v) and v.dtype.kind == "f":  # (not SAC's update count)
            assert not np.allclose(params[k], v), k
    selected_actions, _ = policy.predict(observations, deterministic=True)
    with pytest.raises(RLBaseError, match=r"model.save\(path\)"):
        policy.save(tmp_path / "policy.pkl")
    model.save(tmp_path / "model.zip")
    loaded = model_class.load(tmp_path / "model.zip").policy
    for k, v in policy.state_dict().items():
        np.testing.assert_array_equal(v, loaded.state_dict()[k])
    np.testing.assert_allclose(selected_actions,
                               loaded.predict(observations, deterministic=True)[0], 1e-4)


class FakeImageEnv(gym.Env):
    """SB3's FakeImageEnv: random 40x40x2 uint8 images, 1-D Box (or Discrete) actions."""

    def __init__(self, discrete: bool = False):
        self.observation_space = gym.spaces.Box(0, 255, (40, 40, 2), np.uint8)
        self.action_space = gym.spaces.Discrete(2) if discrete else \
            gym.spaces.Box(-1.0, 1.0, (5,), np.float32)
        self._t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self._t += 1
        return self.observation_space.sample(), 0.0, False, self._t >= 100, {}


@pytest.mark.parametrize("model_class", classes([A2C, TD3]))
def test_save_load_env_cnn(tmp_path, model_class):
    env = FakeImageEnv()
    # SB3's net_arch=[32] after its CNN; rlbase's cnn names that layer's width num_hidden
    # (net_arch is translated for the mlp only).
    kwargs: dict = dict(policy_kwargs=dict(num_hidden=32))
    if model_class is TD3:
        kwargs.update(dict(buffer_size=100, learning_starts=50, train_freq=4))
    if model_class is TD3 and "CnnPolicy" not in TD3.policies:
        with pytest.raises(RLBaseError, match="does not support policy 'CnnPolicy'"):
            model_class("CnnPolicy", env, **kwargs)
        return
    model = model_class("CnnPolicy", env, **kwargs).learn(100)
    model.save(tmp_path / "test_save")
    model = model_class.load(str(tmp_path / "test_save.zip"), env=env, **kwargs).learn(100)
    os.remove(tmp_path / "test_save.zip")


@pytest.mark.parametrize("model_class", [DQN, SAC, TD3])
def test_warn_buffer(model_class):
    """SB3's memory-efficient buffer (optimize_memory_usage=True) is not in rlbase: refused
    when the model is built."""
    with pytest.raises(RLBaseError, match="optimize_memory_usage"):
        model_class("MlpPolicy", select_env(model_class), buffer_size=100,
                    optimize_memory_usage=True, learning_starts=10)


def test_load_unsaved_object(tmp_path):
    """A function cannot be saved (SB3 pickles it and warns when it cannot be loaded back):
    loading warns, naming custom_objects; given again there, no warning."""
    path = str(tmp_path / "ppo_pendulum.zip")
    PPO("MlpPolicy", "Pendulum-v1", learning_rate=lambda _: 1.0).save(path)
    with pytest.warns(UserWarning, match=r"custom_objects"):
        assert PPO.load(path).learning_rate == 3e-4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = PPO.load(path, custom_objects=dict(learning_rate=lambda _: 1.0))
    assert model.learning_rate(1.0) == 1.0


@pytest.mark.parametrize("pathtype", [str, pathlib.Path])
def test_open_file_str_pathlib(tmp_path, pathtype):
    """SB3's open_path rules (rlbase.common.io.serialization.suffixed_path): a written path
    without a suffix gets one, a custom suffix is kept, a read path falls back to the
    suffixed one."""
    assert suffixed_path(pathtype(f"{tmp_path}/t1"), "pkl", "w") == f"{tmp_path}/t1.pkl"
    assert suffixed_path(pathtype(f"{tmp_path}/t1.custom_ext"), "pkl", "w") == \
        f"{tmp_path}/t1.custom_ext"
    (tmp_path / "t2.pkl").write_text("foo")
    assert suffixed_path(pathtype(f"{tmp_path}/t2"), "pkl", "r") == f"{tmp_path}/t2.pkl"
    (tmp_path / "t2").write_text("rubbish")  # an existing path is read as it is
    assert suffixed_path(pathtype(f"{tmp_path}/t2"), "pkl", "r") == f"{tmp_path}/t2"


def test_open_file(tmp_path):
    with pytest.raises(RLBaseError, match="a file path is a str"):
        suffixed_path(123, "zip", "w")
    model = A2C("MlpPolicy", "CartPole-v1")
    with (tmp_path / "test1").open("wb") as fp:
        model.save(fp)
        assert not fp.closed
    with (tmp_path / "test1").open("rb") as fp, pytest.raises(RLBaseError, match="for writing"):
        model.save(fp)
    fp = (tmp_path / "test1").open("rb")
    fp.close()
    with pytest.raises(RLBaseError, match="closed"):
        A2C.load(fp)
    buffer = io.BytesIO()
    model.save(buffer)
    assert A2C.load(buffer).num_timesteps == 0 and not buffer.closed
