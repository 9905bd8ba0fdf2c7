"""Dict and Tuple observation spaces (SB3's MultiInputPolicy) for every algorithm that takes
them: learning, predict on one nested observation and on a batch, save/load by file and by
rlbase.registry.load, compiled calls traced once; the replay buffers, VecNormalize and
VecFrameStack per entry, the space's structure in files.

The envs (tests/envs/dict_envs.py) pay for reading a discrete cue out of a nested observation
holding an image, vectors and distractors.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import rlbase
from rlbase import registry
from rlbase.acer.buffer import NestedBuffer
from rlbase.acer.runner import Sequences
from rlbase.common import nested
from rlbase.common.buffers.replay_buffer import (
    FrameStackReplayBuffer,
    NestedReplayBuffer,
    PrioritizedReplayBuffer,
)
from rlbase.common.errors import RLBaseError
from rlbase.common.io.checkpoint import object_state, restore_object_state
from rlbase.common.io.serialization import space_from_json, space_to_json
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.common.vec_env import DummyVecEnv, VecFrameStack, VecMonitor, VecNormalize
from tests.envs.dict_envs import CueEnv, random_return
from tests.envs.tracing import tracing_counts

EPISODE = 20  # CueEnv's episode length: the best discrete return


def cue_env(structure: str = "dict", continuous: bool = False, image: bool = True, n: int = 2,
            seed: int | None = None) -> VecMonitor:
    env = VecMonitor(DummyVecEnv([lambda: CueEnv(structure, continuous, image)
                                  for _ in range(n)]))
    if seed is not None:
        env.seed(seed)
    return env


# What each class is built with for the short runs: small networks, training from the start.
SMALL: dict[str, tuple[type, dict[str, Any], int]] = {
    "a2c": (rlbase.A2C, {"n_steps": 5, "policy_kwargs": {"num_hidden": 8}}, 100),
    "ppo": (rlbase.PPO, {"n_steps": 16, "batch_size": 16, "n_epochs": 2,
                         "policy_kwargs": {"num_hidden": 8}}, 96),
    "trpo": (rlbase.TRPO, {"n_steps": 16, "batch_size": 16, "n_critic_updates": 2,
                           "policy_kwargs": {"num_hidden": 8}}, 96),
    "acer": (rlbase.ACER, {"n_steps": 5, "replay_start": 10, "buffer_size": 50,
                           "policy_kwargs": {"num_hidden": 8}}, 100),
    # Prioritized replay over the nested buffer, parameter noise's perturbed Q-networks.
    "dqn": (rlbase.DQN, {"learning_starts": 40, "batch_size": 8, "hiddens": [8],
                         "prioritized_replay": True, "param_noise": True,
                         "policy_kwargs": {"num_hidden": 8}}, 100),
    # DDPG's defaults: adaptive parameter noise and observation normalization (per entry).
    "ddpg": (rlbase.DDPG, {"learning_starts": 40, "batch_size": 8,
                           "param_noise_adaption_interval": 10,
                           "policy_kwargs": {"layer_sizes": (8,)}}, 100),
    "td3": (rlbase.TD3, {"learning_starts": 40, "batch_size": 8,
                         "policy_kwargs": {"layer_sizes": (8,)}}, 100),
    "sac": (rlbase.SAC, {"learning_starts": 40, "batch_size": 8,
                         "policy_kwargs": {"layer_sizes": (8,)}}, 100),
    # ES's numpy mlp takes no images: its env variants have none.
    "es": (rlbase.ES, {"popsize": 2, "episodes_per_batch": 1,
                       "policy_kwargs": {"num_hidden": 8}}, 100),
}
CONTINUOUS = ("ddpg", "td3", "sac")


# Tuple observations of the off-policy algorithms share the replay buffer's nested path with
# their Dict ones: in the default run, Tuple on the on-policy algorithms and ES only.
@pytest.mark.parametrize("alg, structure", [
    pytest.param(a, s, marks=pytest.mark.slow) if s == "tuple" and a in ("dqn", *CONTINUOUS)
    else (a, s) for a in SMALL for s in ("dict", "tuple")])
def test_learn_predict_save_load(alg, structure, tmp_path):
    cls, kwargs, steps = SMALL[alg]
    env = cue_env(structure, alg in CONTINUOUS, image=alg != "es", seed=0)
    policy = "mlp" if alg == "es" else "MultiInputPolicy"
    agent = cls(policy, env, seed=0, **kwargs)
    agent.learn(steps)
    space = env.observation_space
    batch = env.reset()
    single = nested.take(space, batch, 0)
    action, _ = agent.predict(single, deterministic=True)
    actions, _ = agent.predict(batch, deterministic=True)
    assert np.shape(action) == env.action_space.shape and len(actions) == env.num_envs
    np.testing.assert_allclose(action, actions[0], rtol=1e-5, atol=1e-6)
    assert env.action_space.contains(np.asarray(action, env.action_space.dtype))
    partial = {k: v for k, v in single.items() if k != "cue"} if structure == "dict" \
        else single[:-1]
    with pytest.raises(RLBaseError, match="does not fit the observation space"):
        agent.predict(partial)

    # Another learn() call and other batch sizes trace nothing again (ES acts in numpy).
    counts = tracing_counts(agent.model)
    assert counts or alg == "es", "the model holds no compiled call"
    agent.learn(steps, reset_num_timesteps=False)
    agent.predict(nested.take(space, batch, slice(0, 1)), deterministic=True)
    after = tracing_counts(agent.model)
    assert {k: after[k] for k in counts} == counts
    assert all(n <= 1 for n in after.values()), after
    actions, _ = agent.predict(batch, deterministic=True)

    # Save/load by file and by the registry: the same structure, the same actions.
    path = str(tmp_path / "model.zip")
    agent.save(path)
    loaded = cls.load(path)
    assert loaded.observation_space == space
    assert space_to_json(loaded.observation_space) == space_to_json(space)  # order too
    np.testing.assert_allclose(loaded.predict(batch, deterministic=True)[0], actions,
                               rtol=1e-5, atol=1e-6)
    model = registry.load(path)
    stepped = np.asarray(model.step(batch, deterministic=True)[0])
    if isinstance(env.action_space, gym.spaces.Box):
        stepped = np.clip(stepped, env.action_space.low, env.action_space.high)
    np.testing.assert_allclose(stepped, actions, rtol=1e-5, atol=1e-6)
    if alg in ("a2c", "ppo", "acer", "trpo"):  # stochastic policies: the probabilities agree too
        np.testing.assert_allclose(loaded.action_probability(single),
                                   agent.action_probability(single), rtol=1e-5, atol=1e-6)
    env.close()


# -- learning -----------------------------------------------------------------------------------
# Budgets checked on seeds 0-4 (each reached a mean return of 20 of 20, or -0.3 or better
# against a random policy's -11.7); the tests run seed 0.
def test_ppo_reads_the_cue():
    agent = rlbase.PPO("MultiInputPolicy", cue_env(n=4, seed=0), seed=0, n_steps=32,
                       batch_size=64, n_epochs=4, learning_rate=3e-3,
                       policy_kwargs={"num_hidden": 32})
    agent.learn(1536)
    mean, _ = evaluate_policy(agent, cue_env(n=1, seed=1000), 10)
    assert mean >= 0.9 * EPISODE


def test_dqn_reads_the_cue():
    agent = rlbase.DQN("MultiInputPolicy", cue_env(n=1, seed=0), seed=0, learning_starts=100,
                       batch_size=32, exploration_fraction=0.3, learning_rate=1e-3,
                       target_update_interval=100, hiddens=[32],
                       policy_kwargs={"num_hidden": 32})
    agent.learn(800)
    mean, _ = evaluate_policy(agent, cue_env(n=1, seed=1000), 10)
    assert mean >= 0.9 * EPISODE


def test_ddpg_follows_the_target_in_the_observation():
    agent = rlbase.DDPG("MultiInputPolicy", cue_env(continuous=True, n=1, seed=0), seed=0,
                        learning_starts=100, batch_size=32, noise_type="normal_0.2",
                        normalize_observations=False, policy_kwargs={"layer_sizes": (32, 32)})
    agent.learn(500)
    mean, _ = evaluate_policy(agent, cue_env(continuous=True, n=1, seed=1000), 10)
    assert mean >= 0.25 * random_return(continuous=True, episode_length=EPISODE)


# -- what ES, DDPG and the buffers do with nested observations -------------------------------------
def test_es_refuses_image_entries():
    with pytest.raises(RLBaseError, match="no image entries, got image"):
        rlbase.ES("mlp", cue_env("dict"), seed=0)


def test_ddpg_normalizes_each_vector_entry(tmp_path):
    agent = rlbase.DDPG("MultiInputPolicy", cue_env("tuple", continuous=True), seed=0,
                        learning_starts=20, batch_size=8, policy_kwargs={"layer_sizes": (8,)})
    agent.learn(40)
    stats = agent.model.obs_stats
    # The Box entries only: not the image, the Discrete or the MultiBinary.
    assert stats.names == ["0/position", "2"]
    assert agent.model.obs_rms is None
    assert stats.mean.shape == (4,) and np.all(stats.rms[0].mean != 0)
    agent.save(str(tmp_path / "m.zip"))
    loaded = registry.load(str(tmp_path / "m.zip"))
    for a, b in zip(stats.rms, loaded.obs_stats.rms):
        np.testing.assert_array_equal(a.mean, b.mean)
        assert a.count == b.count


NESTED_SPACE = gym.spaces.Dict({
    "b": gym.spaces.Tuple((gym.spaces.Discrete(3), gym.spaces.Box(0, 255, (2, 2, 1), np.uint8))),
    "a": gym.spaces.Box(-1.0, 1.0, (2,), np.float32)})


def nested_batch(rng: np.random.Generator, n: int) -> Any:
    return nested.stack(NESTED_SPACE, [{"a": rng.normal(size=2).astype(np.float32),
                                         "b": (int(rng.integers(3)),
                                               rng.integers(0, 256, (2, 2, 1), np.uint8))}
                                        for _ in range(n)])


def assert_nested_equal(x: Any, y: Any) -> None:
    for a, b in zip(nested.flatten(NESTED_SPACE, x), nested.flatten(NESTED_SPACE, y)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_nested_replay_buffer_round_trip_and_checkpoint():
    rng = np.random.default_rng(0)
    buffer = NestedReplayBuffer(5, NESTED_SPACE)
    steps = [(nested_batch(rng, 2), nested_batch(rng, 2)) for _ in range(3)]
    for t, (obs, next_obs) in enumerate(steps):
        buffer.add(obs, np.array([t, t]), np.ones(2), next_obs, np.zeros(2), np.zeros(2))
    assert len(buffer) == 5  # 6 written into 5 slots: the first overwritten
    batch = buffer.get(np.array([2, 3]))  # step 1's transitions
    assert_nested_equal(batch.obs, steps[1][0])
    assert_nested_equal(batch.next_obs, steps[1][1])
    assert batch.obs["b"][1].dtype == np.uint8 and list(batch.obs) == ["a", "b"]

    meta, arrays = object_state(buffer, "replay")
    assert "replay/obs_leaves/0002" in arrays  # the image leaf, saved as its own array
    copy = NestedReplayBuffer(5, NESTED_SPACE)
    restore_object_state(copy, json.loads(json.dumps(meta)), arrays, "replay")
    idx = np.arange(5)
    assert_nested_equal(copy.get(idx).obs, buffer.get(idx).obs)
    assert_nested_equal(copy.get(idx).next_obs, buffer.get(idx).next_obs)
    assert (copy.pos, copy.size) == (buffer.pos, buffer.size)
    smaller = NestedReplayBuffer(4, NESTED_SPACE)
    with pytest.raises(RLBaseError, match="obs_leaves/0000"):
        restore_object_state(smaller, meta, arrays, "replay")

    prioritized = PrioritizedReplayBuffer(NestedReplayBuffer(8, NESTED_SPACE), alpha=0.6)
    prioritized.add(steps[0][0], np.zeros(2), np.ones(2), steps[0][1], np.zeros(2),
                    np.zeros(2))
    idx = prioritized.sample_indices(4, rng)
    assert_nested_equal(prioritized.get(idx).obs,
                        nested.take(NESTED_SPACE, steps[0][0], idx))
    prioritized.update_priorities(idx, np.full(4, 2.0))
    assert prioritized.weights(idx, 0.4).shape == (4,)


def test_frame_stack_replay_buffer_refuses_nested_observations():
    buffer = FrameStackReplayBuffer(10, 2, (4,), np.float32, 2)
    obs = {"a": np.zeros((2, 4), np.float32)}
    with pytest.raises(RLBaseError, match="Box observations only"):
        buffer.add(obs, np.zeros(2), np.zeros(2), obs, np.zeros(2), np.zeros(2))


def test_acer_nested_buffer_keeps_final_observations_through_a_checkpoint():
    num_envs, nsteps = 2, 3
    rng = np.random.default_rng(1)
    buffer = NestedBuffer(NESTED_SPACE, gym.spaces.Discrete(2), num_envs, nsteps, 6)
    buffer._allocate(1, 0, buffer.slots)  # what configure(env) does for nested spaces
    obs = nested.map_structure(lambda x: x.reshape(num_envs, nsteps + 1, *x.shape[1:]),
                               nested_batch(rng, num_envs * (nsteps + 1)))
    truncated = np.zeros((num_envs, nsteps), np.float32)
    truncated[1, 2] = 1
    final = nested_batch(rng, 1)
    seq = Sequences(obs, np.zeros((num_envs, nsteps), np.int64),
                    np.ones((num_envs, nsteps), np.float32),
                    truncated, np.full((num_envs, nsteps, 2), 0.5, np.float32),
                    np.zeros((num_envs, nsteps + 1), np.float32),
                    np.zeros((num_envs, 0), np.float32),
                    truncated, final, np.zeros((1, 0), np.float32))
    buffer.put(seq)
    meta, arrays = object_state(buffer, "replay")
    copy = NestedBuffer(NESTED_SPACE, gym.spaces.Discrete(2), num_envs, nsteps, 6)
    copy._allocate(1, 0, copy.slots)
    restore_object_state(copy, json.loads(json.dumps(meta)), arrays, "replay")
    got = copy.get(np.random.default_rng(0))
    assert_nested_equal(got.obs, obs)
    assert_nested_equal(got.final_obs, final)


# -- VecNormalize and VecFrameStack per entry ------------------------------------------------------
class ScriptedEnv(gym.Env):
    """Dict observations {"image", "pos", "speed"} (and "flag" with ``flag``) from a script of
    (pos, speed) values: the image (and flag) hold the step index; the episode terminates
    after ``length`` steps."""

    def __init__(self, script: list[tuple[list[float], list[float]]], length: int = 3,
                 flag: bool = True):
        self.script, self.length, self.flag = script, length, flag
        entries: dict[str, gym.Space] = {
            "image": gym.spaces.Box(0, 255, (2, 2, 1), np.uint8),
            "pos": gym.spaces.Box(-100.0, 100.0, (2,), np.float32),
            "speed": gym.spaces.Box(-100.0, 100.0, (1,), np.float32)}
        if flag:
            entries["flag"] = gym.spaces.Discrete(10)
        self.observation_space = gym.spaces.Dict(entries)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def _obs(self) -> dict[str, Any]:
        pos, speed = self.script[self.t % len(self.script)]
        obs = {"image": np.full((2, 2, 1), self.t + 1, np.uint8),
               "pos": np.asarray(pos, np.float32), "speed": np.asarray(speed, np.float32)}
        if self.flag:
            obs["flag"] = self.t
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any):
        self.t += 1
        return self._obs(), 0.0, self.t >= self.length, False, {}


def test_vec_normalize_per_entry_exact_values():
    envs = [ScriptedEnv([([1.0, 2.0], [100.0])]), ScriptedEnv([([3.0, 6.0], [-100.0])])]
    venv = VecNormalize(DummyVecEnv([lambda e=e: e for e in envs]), ret=False)
    obs = venv.reset()
    # Each Box entry has its own statistics: the batch's mean and variance merged into the
    # initial (0, 1, count 1e-4) by the parallel-variance formula.
    count, eps = 1e-4, 1e-8
    total = count + 2

    def expected(values: np.ndarray) -> np.ndarray:
        mean_b, var_b = values.mean(axis=0), values.var(axis=0)
        mean = mean_b * 2 / total
        var = (count + var_b * 2 + mean_b ** 2 * count * 2 / total) / total
        return np.clip((values - mean) / np.sqrt(var + eps), -10, 10).astype(np.float32)

    np.testing.assert_allclose(obs["pos"], expected(np.array([[1.0, 2.0], [3.0, 6.0]])),
                               rtol=1e-6)
    np.testing.assert_allclose(obs["speed"], expected(np.array([[100.0], [-100.0]])),
                               rtol=1e-6)
    np.testing.assert_allclose(obs["pos"], [[-1, -1], [1, 1]], atol=1e-3)  # two values
    assert obs["image"].dtype == np.uint8 and np.all(obs["image"] == 1)  # unchanged
    assert obs["flag"].tolist() == [0, 0]
    assert sorted(venv.state_dict()) == [f"ob_rms/{k}/{s}" for k in ("pos", "speed")
                                         for s in ("count", "mean", "var")]
    space = venv.observation_space
    assert space["image"] == envs[0].observation_space["image"]
    assert space["pos"] == gym.spaces.Box(-10.0, 10.0, (2,), np.float32)


def test_vec_frame_stack_per_entry_over_an_episode_boundary():
    venv = VecFrameStack(DummyVecEnv([lambda: ScriptedEnv([([1.0, 10.0], [5.0]),
                                                           ([2.0, 20.0], [6.0]),
                                                           ([3.0, 30.0], [7.0]),
                                                           ([4.0, 40.0], [8.0])],
                                                          flag=False)]), 2)
    space = venv.observation_space
    assert space["image"].shape == (2, 2, 2) and space["pos"].shape == (4,)

    def frames(obs: dict[str, Any]) -> tuple[list[int], list[float], list[float]]:
        return obs["image"][..., 0, 0, :].ravel().tolist(), obs["pos"].ravel().tolist(), \
            obs["speed"].ravel().tolist()

    obs = venv.reset()
    assert frames(obs) == ([0, 1], [0, 0, 1, 10], [0, 5])
    obs, *_ = venv.step(np.zeros(1, np.int64))
    assert frames(obs) == ([1, 2], [1, 10, 2, 20], [5, 6])
    obs, *_ = venv.step(np.zeros(1, np.int64))
    assert frames(obs) == ([2, 3], [2, 20, 3, 30], [6, 7])
    obs, _, terminated, _, infos = venv.step(np.zeros(1, np.int64))
    assert terminated[0]
    # The new episode starts from zeros; the ended one's last stack is its final observation.
    assert frames(obs) == ([0, 1], [0, 0, 1, 10], [0, 5])
    final = infos[0]["final_observation"]
    assert final["image"][0, 0].tolist() == [3, 4] and final["image"].dtype == np.uint8
    assert final["pos"].tolist() == [3, 30, 4, 40] and final["speed"].tolist() == [7, 8]


@pytest.mark.parametrize("alg", ["dqn", "acer"])
def test_frame_stacked_nested_observations_are_stored_whole(alg):
    """Behind a VecFrameStack, Dict/Tuple observations skip the frame-deduplicating buffers."""
    env = VecFrameStack(DummyVecEnv([lambda: ScriptedEnv([([1.0, 2.0], [3.0])], flag=False)
                                     for _ in range(2)]), 2)
    kwargs = {"learning_starts": 10, "batch_size": 4} if alg == "dqn" else \
        {"nsteps": 4, "replay_start": 8, "buffer_size": 16}
    model = registry.get_algorithm(alg).learn("mlp", env, total_timesteps=40, seed=0,
                                              num_hidden=8, **kwargs)
    stored = model.replay_buffer
    assert isinstance(stored, NestedReplayBuffer if alg == "dqn" else NestedBuffer)
    assert stored.obs_leaves[1].shape[-1] == 4  # "pos": two stacked 2-vectors


def test_vec_frame_stack_refuses_non_box_entries():
    with pytest.raises(RLBaseError, match="entry 'flag'"):
        VecFrameStack(DummyVecEnv([lambda: ScriptedEnv([([0.0, 0.0], [0.0])])]), 2)


# -- the space's structure in files ---------------------------------------------------------------
def test_space_json_keeps_nesting_and_key_order():
    inner = gym.spaces.Dict(OrderedDict([("z", gym.spaces.Discrete(3, start=1)),
                                         ("a", gym.spaces.MultiBinary(4))]))
    space = gym.spaces.Dict(OrderedDict([
        ("t", gym.spaces.Tuple((inner, gym.spaces.Box(0, 255, (8, 8, 1), np.uint8),
                                gym.spaces.MultiDiscrete([2, 3])))),
        ("b", gym.spaces.Box(-1.0, 1.0, (3,), np.float32))]))
    loaded = space_from_json(json.loads(json.dumps(space_to_json(space))))
    assert loaded == space
    assert list(loaded.spaces) == ["t", "b"] and list(loaded["t"][0].spaces) == ["z", "a"]
    with pytest.raises(RLBaseError, match="not strings"):
        space_to_json(gym.spaces.Dict({1: gym.spaces.Discrete(2)}))


@pytest.mark.parametrize("alg", ["ppo", "dqn"])
def test_a_dict_with_one_entry(alg):
    # One leaf per nested argument: the compiled calls must still see a dict, not its leaf.
    class OneEntry(gym.Env):
        observation_space = gym.spaces.Dict({"x": gym.spaces.Box(-1.0, 1.0, (3,), np.float32)})
        action_space = gym.spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            return self.observation_space.sample(), {}

        def step(self, action):
            return self.observation_space.sample(), 1.0, False, True, {}

    env = VecMonitor(DummyVecEnv([OneEntry, OneEntry]))
    kwargs = dict(nsteps=8, nminibatches=2) if alg == "ppo" else dict(learning_starts=8,
                                                                      batch_size=4)
    model = registry.get_algorithm(alg).learn("mlp", env, total_timesteps=32, seed=0,
                                              log_interval=10**9, **kwargs)
    actions = model.step(env.reset(), deterministic=True)[0]
    assert actions.shape == (2,)
