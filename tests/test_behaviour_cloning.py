"""Behaviour cloning: expert data files, the dataset, and pretrain with no RL at all."""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest

from rlbase import A2C, DQN, ES, PPO, ExpertDataset, generate_expert_traj
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.common.vec_env import DummyVecEnv
from tests.envs.dict_envs import CueEnv

EPISODE = 20  # CueEnv's episode length: the return of a policy that reads the cue


def cartpole_expert(obs: np.ndarray) -> int:
    """A scripted controller: push toward the side the pole falls to (returns 500 here)."""
    return int(3.0 * obs[2] + obs[3] > 0)


@pytest.fixture(scope="module")
def expert_file(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("expert") / "cartpole")
    generate_expert_traj(cartpole_expert, "CartPole-v1", n_episodes=4, save_path=path, seed=0)
    return path + ".npz"


def test_expert_file_contents(expert_file):
    with np.load(expert_file) as data:
        obs, actions, rewards = data["obs"], data["actions"], data["rewards"]
        starts, returns = data["episode_starts"], data["episode_returns"]
    assert len(obs) == len(actions) == len(rewards) == len(starts) == 2000
    assert obs.shape[1:] == (4,) and starts.sum() == 4 and starts[0]
    np.testing.assert_array_equal(returns, [500.0] * 4)
    np.testing.assert_array_equal(actions, [cartpole_expert(o) for o in obs])
    ds = ExpertDataset(expert_file, train_fraction=0.75, batch_size=100, traj_limitation=2)
    assert len(ds.train_indices) == 750 and len(ds.val_indices) == 250
    batches = list(ds.batches("train"))
    assert len(batches) == 8 and batches[0][0].shape == (100, 4)


@pytest.mark.parametrize("cls", [PPO, DQN])
def test_pretrain_clones_a_cartpole_controller(cls, expert_file):
    kwargs = {"nsteps": 8, "nminibatches": 1} if cls is PPO else {}
    model = cls("MlpPolicy", "CartPole-v1", seed=0, policy_kwargs={"num_hidden": 32},
                **kwargs)
    model.pretrain(ExpertDataset(expert_file, batch_size=64), n_epochs=10,
                   learning_rate=3e-3, val_interval=5)
    assert model.num_timesteps == 0  # no RL
    env = gym.make("CartPole-v1")
    env.reset(seed=1)
    mean, _ = evaluate_policy(model, env, 3)
    assert mean >= 300


def test_pretrain_box_actions():
    # A linear expert on Pendulum: the Gaussian policy's mean learns to follow it.
    def expert(obs):
        return np.clip(np.array([-obs[0] - 0.5 * obs[2]], np.float32), -2, 2)

    data = generate_expert_traj(expert, "Pendulum-v1", n_episodes=2, seed=0)
    model = A2C("MlpPolicy", "Pendulum-v1", seed=0, policy_kwargs={"num_hidden": 32})
    obs = data["obs"][:200]
    before = np.abs(model.action_probability(obs)[0] - data["actions"][:200]).mean()
    model.pretrain(ExpertDataset(data, batch_size=50), n_epochs=20, learning_rate=1e-2)
    after = np.abs(model.action_probability(obs)[0] - data["actions"][:200]).mean()
    assert after < 0.2 < before


@pytest.mark.parametrize("cls,structure", [(PPO, "dict"), (PPO, "tuple"), (DQN, "dict")])
def test_pretrain_with_nested_observations(cls, structure, tmp_path):
    # The expert reads the cue out of a Dict (or nested Tuple) observation; the file stores
    # one array per leaf and the cloned MultiInputPolicy reads the cue too.
    def expert(obs):
        return int(obs["cue"] if structure == "dict" else obs[3])

    path = str(tmp_path / "cue")
    generate_expert_traj(expert, CueEnv(structure), n_episodes=10, save_path=path, seed=0)
    with np.load(path + ".npz") as data:
        names = sorted(k for k in data.files if k.startswith("obs"))
        leaves = {k: data[k] for k in names}
    if structure == "dict":
        assert names == ["obs/cue", "obs/image", "obs/vector"]
        assert leaves["obs/image"].shape == (200, 8, 8, 1)
        np.testing.assert_array_equal(leaves["obs/image"][:, 0, 0, 0], 255 * leaves["obs/cue"])
    else:
        assert names == ["obs/0/phase", "obs/0/position", "obs/1", "obs/2", "obs/3", "obs/4"]
    kwargs = {"n_steps": 16, "batch_size": 16} if cls is PPO else {}
    model = cls("MultiInputPolicy", DummyVecEnv([lambda: CueEnv(structure)]), seed=0,
                policy_kwargs={"num_hidden": 16}, **kwargs)
    untrained, _ = evaluate_policy(model, CueEnv(structure), 5)
    model.pretrain(ExpertDataset(path + ".npz", batch_size=32), n_epochs=30,
                   learning_rate=3e-3, val_interval=10)
    cloned, _ = evaluate_policy(model, CueEnv(structure), 5)
    assert model.num_timesteps == 0
    assert cloned == EPISODE and untrained < EPISODE  # random play earns about half
    cartpole = PPO("MlpPolicy", "CartPole-v1", n_steps=8, batch_size=8)
    with pytest.raises(RLBaseError, match="do not match the model's observation space"):
        cartpole.pretrain(ExpertDataset(path + ".npz"))


def test_bad_input(expert_file, tmp_path):
    es = ES("MlpPolicy", "CartPole-v1")
    with pytest.raises(RLBaseError, match="pretrain is not supported by es"):
        es.pretrain(ExpertDataset(expert_file))
    with pytest.raises(RLBaseError, match="does not exist"):
        ExpertDataset(str(tmp_path / "none.npz"))
    with pytest.raises(RLBaseError, match="lacks"):
        ExpertDataset({"obs": np.zeros((3, 4))})
    model = PPO("MlpPolicy", "Pendulum-v1", nsteps=8, nminibatches=1)
    with pytest.raises(RLBaseError, match="expert observations have shape"):
        model.pretrain(ExpertDataset(expert_file))
    with pytest.raises(RLBaseError, match="n_episodes"):
        generate_expert_traj(cartpole_expert, "CartPole-v1", n_episodes=0)


def test_save_videos_and_plots(tmp_path):
    from rlbase import QLearning
    from rlbase.cli import main
    from rlbase.common.errors import RLBaseError
    from rlbase.common.logs.media import save_plots, save_videos

    model = QLearning("TabularPolicy", "FrozenLake-v1", seed=0)
    paths = save_videos(model, "FrozenLake-v1", n_episodes=2, video_folder=str(tmp_path / "v"),
                        seed=0)
    assert len(paths) == 2 and all(os.path.getsize(p) > 0 for p in paths)
    for path in paths:  # H.264 (an avc1 sample entry), what browsers and notebooks play
        assert b"avc1" in open(path, "rb").read()
    # Learning curves from a monitor file.
    from rlbase.common.envs.make import make_vec_env

    env = make_vec_env("FrozenLake-v1", num_env=1, seed=0, monitor_dir=str(tmp_path / "log"))
    QLearning("TabularPolicy", env).learn(300)
    env.close()
    png = save_plots(str(tmp_path / "log"))
    assert open(png, "rb").read(4) == b"\x89PNG"
    main(["plot", str(tmp_path / "log"), f"--out={tmp_path / 'c.png'}"])
    assert os.path.exists(tmp_path / "c.png")
    with pytest.raises(RLBaseError, match="does not exist"):
        main(["plot", str(tmp_path / "none")])


def test_a_normalized_model_records_raw_observations_and_acts_on_normalized_ones(monkeypatch):
    """A model trained under VecNormalize sees observations normalized with its statistics
    (as in training); the file holds the env's own observations."""
    from rlbase.common.vec_env.vec_normalize import VecNormalize

    model = PPO("MlpPolicy", VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")])),
                nsteps=8, seed=0)
    stats = model.model.normalization
    stats.ob_rms.mean[:] = 1.0
    stats.ob_rms.var[:] = 4.0
    seen: list[np.ndarray] = []
    predict = model.predict

    def recording(obs, *args, **kwargs):
        seen.append(np.array(obs))
        return predict(obs, *args, **kwargs)

    monkeypatch.setattr(model, "predict", recording)
    data = generate_expert_traj(model, "CartPole-v1", n_episodes=1, seed=0)
    raw = data["obs"]
    assert len(seen) == len(raw)
    expected = np.clip((raw - 1.0) / np.sqrt(4.0 + stats.epsilon), -10, 10)
    np.testing.assert_allclose(np.array(seen), expected, rtol=1e-5, atol=1e-6)
