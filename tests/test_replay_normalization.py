"""Off-policy replay behind a VecNormalize stores raw transitions and normalizes each sampled
minibatch with the current statistics (SB3's rule), for every buffer; the frame-stacking
buffer starts new episodes when the loop resets the env; SAC's action density is the squashed
one; DDPG's param_noise_distance survives a resume."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

from rlbase import DQN, SAC
from rlbase.common.buffers.raw_replay import (
    RawReplay,
    reset_env,
    sample_minibatches,
    step_and_store,
)
from rlbase.common.buffers.replay_buffer import (
    FrameStackReplayBuffer,
    NestedReplayBuffer,
    PrioritizedReplayBuffer,
    ReplayBuffer,
)
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.episodes import EpisodeStats
from rlbase.common.vec_env import DummyVecEnv, VecFrameStack, VecNormalize

EPISODE = 5  # Known's episodes are truncated after this many steps


class Known(gym.Env):
    """Deterministic: observation [t, 10 * episode] (``dict_obs``: {"x": that}), reward
    -(t + 1) for the step from t; truncated after EPISODE steps. Discrete or Box actions."""

    def __init__(self, continuous: bool = False, dict_obs: bool = False,
                 episode: int = EPISODE, first_episode: int = 1):
        box = gym.spaces.Box(-1e3, 1e3, (2,), np.float32)
        self.observation_space = gym.spaces.Dict({"x": box}) if dict_obs else box
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32) if continuous \
            else gym.spaces.Discrete(2)
        self.dict_obs, self.length = dict_obs, episode
        self.t, self.episode = 0, first_episode - 1

    def _obs(self):
        obs = np.array([self.t, 10.0 * self.episode], np.float32)
        return {"x": obs} if self.dict_obs else obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.episode = 0, self.episode + 1
        return self._obs(), {}

    def step(self, action):
        reward = -float(self.t + 1)
        self.t += 1
        return self._obs(), reward, False, self.t >= self.length, {}


def raw_stream(steps: int):
    """What Known produces (one env): obs, reward, next obs (the true final one at a cut)."""
    out = []
    episode, t = 1, 0
    for _ in range(steps):
        obs = np.array([t, 10.0 * episode], np.float32)
        nxt = np.array([t + 1, 10.0 * episode], np.float32)
        out.append((obs, -float(t + 1), nxt))
        t += 1
        if t >= EPISODE:
            episode, t = episode + 1, 0
    return out


def expected_normalized(stats, raw_obs, raw_rewards):
    """Normalization by hand with the statistics as they are now."""
    rms = stats.ob_rms or stats.leaf_rms[0]  # a Dict space's one entry
    obs = np.clip((raw_obs - rms.mean) / np.sqrt(rms.var + stats.epsilon), -10, 10)
    rew = np.clip(raw_rewards / np.sqrt(stats.ret_rms.var + stats.epsilon), -10, 10)
    return obs, rew


def collect(buffer, env, steps, raw):
    episodes = EpisodeStats()
    obs = reset_env(env, buffer)
    for _ in range(steps):
        actions = np.zeros((env.num_envs, 1), np.float32)
        obs = step_and_store(env, buffer, raw, episodes, obs, actions,
                             np.zeros(env.num_envs, np.int64), 0.99)[0]


def test_buffer_holds_raw_transitions_and_batches_use_current_statistics():
    env = VecNormalize(DummyVecEnv([Known]))
    buffer = ReplayBuffer(100, (2,), np.float32, (1,), np.float32)
    raw = RawReplay(env)
    steps = 12
    collect(buffer, env, steps, raw)
    truth = raw_stream(steps)
    obs, rewards, nxt = (np.array([x[k] for x in truth]) for k in range(3))
    # The env's own values: the first reward is -1.0, not -cliprew (-10.0), and the true
    # final observation of each truncated episode is kept raw.
    np.testing.assert_array_equal(buffer.obs[:steps], obs)
    np.testing.assert_array_equal(buffer.rewards[:steps], rewards)
    np.testing.assert_array_equal(buffer.next_obs[:steps], nxt)
    assert buffer.rewards[0] == -1.0
    # A sampled batch is normalized with the statistics of now.
    rng = np.random.default_rng(0)
    batch = sample_minibatches(buffer, raw, rng, 2, 4)
    idx = np.random.default_rng(0).integers(0, steps, 8)
    want_obs, want_rew = expected_normalized(env.stats, obs[idx], rewards[idx])
    want_next, _ = expected_normalized(env.stats, nxt[idx], rewards[idx])
    np.testing.assert_allclose(batch[0].reshape(8, 2), want_obs, rtol=1e-6)
    np.testing.assert_allclose(batch[2].reshape(8), want_rew, rtol=1e-6)
    np.testing.assert_allclose(batch[3].reshape(8, 2), want_next, rtol=1e-6)
    assert abs(want_rew[idx == 0]).max(initial=0) < 10  # the first reward is no longer clipped


@pytest.mark.parametrize("kind", ["plain", "prioritized", "frames", "dict"])
def test_every_buffer_kind_samples_normalized_batches(kind):
    """Plain, prioritized, frame-stacked (VecNormalize above the stack) and Dict buffers."""
    steps = 14
    truth = raw_stream(steps)
    obs = np.array([x[0] for x in truth])
    rewards = np.array([x[1] for x in truth], np.float32)
    base = DummyVecEnv([lambda: Known(dict_obs=kind == "dict")])
    if kind == "frames":
        env = VecNormalize(VecFrameStack(base, 2))
        buffer = FrameStackReplayBuffer(50, 1, (4,), np.float32, 2, ac_shape=(1,),
                                        ac_dtype=np.float32)
    elif kind == "dict":
        env = VecNormalize(base)
        buffer = NestedReplayBuffer(50, base.observation_space, (1,), np.float32)
    else:
        env = VecNormalize(base)
        buffer = ReplayBuffer(50, (2,), np.float32, (1,), np.float32)
        if kind == "prioritized":
            buffer = PrioritizedReplayBuffer(buffer, 0.6)
    raw = RawReplay(env)
    collect(buffer, env, steps, raw)
    batch = raw.normalize(buffer.get(np.arange(3)))
    got_obs = batch.obs["x"] if kind == "dict" else batch.obs
    if kind == "frames":  # [previous frame, this frame]; zeros before an episode's start
        raw_obs = np.concatenate([np.zeros((1, 2), np.float32), obs[:2]])
        raw_obs = np.concatenate([raw_obs, obs[:3]], axis=1)
        rms, eps = env.stats.ob_rms, env.stats.epsilon
        want_obs = np.clip((raw_obs - rms.mean) / np.sqrt(rms.var + eps), -10, 10)
        want_rew = np.clip(rewards[:3] / np.sqrt(env.stats.ret_rms.var + eps), -10, 10)
    else:
        want_obs, want_rew = expected_normalized(env.stats, obs[:3], rewards[:3])
    np.testing.assert_allclose(got_obs, want_obs, rtol=1e-6, err_msg=kind)
    np.testing.assert_allclose(batch.rewards, want_rew, rtol=1e-6, err_msg=kind)


def test_frame_stack_above_a_normalization_of_observations_is_refused():
    env = VecFrameStack(VecNormalize(DummyVecEnv([Known])), 2)
    with pytest.raises(RLBaseError, match=r"VecNormalize\(VecFrameStack") as info:
        RawReplay(env)
    assert "\n" not in str(info.value)
    RawReplay(VecFrameStack(VecNormalize(DummyVecEnv([Known]), ob=False), 2))  # rewards only


QUIET = dict(log_interval=10**9)


def test_sac_trains_on_minibatches_normalized_now():
    """learn() stores raw values; the one compiled call gets the batch normalized with the
    statistics of the moment it trains."""
    env = VecNormalize(DummyVecEnv([lambda: Known(continuous=True)]))
    model = SAC("MlpPolicy", env, seed=0, learning_starts=100, batch_size=4,
                policy_kwargs=dict(net_arch=[4]))
    model.learn(12, **QUIET)
    inner = model.model
    truth = raw_stream(12)
    obs = np.array([x[0] for x in truth])
    rewards = np.array([x[1] for x in truth], np.float32)
    np.testing.assert_array_equal(inner.replay_buffer.obs[:12], obs)
    np.testing.assert_array_equal(inner.replay_buffer.rewards[:12], rewards)
    calls = []

    class Out:  # what a compiled call returns: tensors with .numpy()
        def __init__(self, value):
            self.value = value

        def numpy(self):
            return self.value

    def fake_train(*args):
        calls.append(args)
        return Out(np.zeros(4, np.float32)), Out(np.zeros((1, 1), np.float32))

    inner._train_fns[1] = fake_train  # replaces the compiled call of one gradient step
    state = inner.loop_rng.bit_generator.state
    inner.train_and_act(env.normalize_obs(obs[:1]), 1e-3)
    assert len(calls) == 1  # one compiled call per update
    inner.loop_rng.bit_generator.state = state
    idx = inner.loop_rng.integers(0, 12, 4)
    want_obs, want_rew = expected_normalized(env.stats, obs[idx], rewards[idx])
    np.testing.assert_allclose(calls[0][0][0], want_obs, rtol=1e-6)
    np.testing.assert_allclose(calls[0][2][0], want_rew, rtol=1e-6)


def test_dqn_and_ddpg_store_raw_rewards():
    from rlbase.ddpg.ddpg import learn as ddpg_learn
    from rlbase.dqn.dqn import learn as dqn_learn

    truth = raw_stream(10)
    rewards = np.array([x[1] for x in truth], np.float32)
    obs = np.array([x[0] for x in truth])
    model = dqn_learn("mlp", VecNormalize(DummyVecEnv([Known])), total_timesteps=10,
                      learning_starts=100, num_hidden=4, best_model_interval=None, **QUIET)
    np.testing.assert_array_equal(model.replay_buffer.rewards[:10], rewards)
    np.testing.assert_array_equal(model.replay_buffer.obs[:10], obs)
    model = ddpg_learn("mlp", VecNormalize(DummyVecEnv([lambda: Known(continuous=True)])),
                       total_timesteps=10, learning_starts=100, num_hidden=4, **QUIET)
    np.testing.assert_array_equal(model.replay_buffer.rewards[:10], rewards)
    np.testing.assert_array_equal(model.replay_buffer.obs[:10], obs)


class Frames(gym.Env):
    """uint8 2x2x1 frames showing the step count t; reward 1; truncated after 3 steps."""

    observation_space = gym.spaces.Box(0, 255, (2, 2, 1), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.full((2, 2, 1), self.t, np.uint8), {}

    def step(self, action):
        self.t += 1
        return np.full((2, 2, 1), self.t, np.uint8), 1.0, False, self.t >= 3, {}


@pytest.mark.parametrize("nstack", [1, 2])
def test_dqn_stores_raw_images_in_their_own_dtype(nstack):
    from rlbase.dqn.dqn import learn as dqn_learn

    venv = DummyVecEnv([Frames])
    env = VecNormalize(VecFrameStack(venv, nstack) if nstack > 1 else venv)
    model = dqn_learn("mlp", env, total_timesteps=6, learning_starts=100, num_hidden=4,
                      best_model_interval=None, **QUIET)
    buffer = model.replay_buffer
    stored = buffer.frames if nstack > 1 else buffer.obs
    assert stored.dtype == np.uint8  # not float32: a quarter of the memory
    batch = buffer.get(np.arange(6))
    assert batch.obs.dtype == np.uint8
    np.testing.assert_array_equal(batch.obs[:, 0, 0, -1], [0, 1, 2, 0, 1, 2])
    np.testing.assert_array_equal(batch.next_obs[:, 0, 0, -1], [1, 2, 3, 1, 2, 3])


# -- item 5: a reset starts new episodes in the frame-stacking buffer ------------------------

def test_second_learn_does_not_stitch_episodes_in_the_frame_buffer():
    """Two learn() calls on a frame-stacked env: every stored stack comes from one episode
    (or zero padding) and every next observation continues its own episode."""
    env = VecFrameStack(DummyVecEnv([lambda: Known(episode=1000)]), 4)
    model = DQN("MlpPolicy", env, seed=0, learning_starts=1000, buffer_size=100,
                policy_kwargs=dict(net_arch=[4]))
    model.learn(25, **QUIET)
    model.learn(6, reset_num_timesteps=False, **QUIET)
    buffer = model.model.replay_buffer
    assert isinstance(buffer, FrameStackReplayBuffer)
    ages = np.arange(1, len(buffer) + 1)  # every sampleable row (one env)
    batch = buffer.get((buffer.pos - 1 - ages) % buffer.rows)
    assert len(ages) == 30
    for obs, nxt in zip(batch.obs, batch.next_obs):
        frames, next_frames = obs.reshape(4, 2), nxt.reshape(4, 2)  # [t, 10 * episode]
        episodes = {e for t, e in frames if e}  # zeros pad an episode's start
        assert len(episodes) == 1, frames.tolist()
        assert next_frames[-1, 1] == frames[-1, 1], (frames.tolist(), next_frames.tolist())
        assert next_frames[-1, 0] == frames[-1, 0] + 1
    # The cut transition keeps its true next observation.
    last_of_first = [n.reshape(4, 2)[-1].tolist() for o, n in zip(batch.obs, batch.next_obs)
                     if o.reshape(4, 2)[-1].tolist() == [24.0, 10.0]]
    assert last_of_first == [[25.0, 10.0]]


# -- item 7 ------------------------------------------------------------------------------------

def test_sac_action_probability_is_the_squashed_density():
    env = DummyVecEnv([lambda: Known(continuous=True)])
    model = SAC("MlpPolicy", env, seed=0, policy_kwargs=dict(net_arch=[4]))
    obs = np.array([[0.1, 0.2], [-0.3, 0.5]], np.float32)
    actions = np.array([[0.3], [-0.8]], np.float32)
    mean, log_std = (x.numpy().astype(np.float64) for x in model.model.actor(obs))
    u = np.arctanh(actions.astype(np.float64))
    gauss = -0.5 * ((u - mean) / np.exp(log_std)) ** 2 - log_std - 0.5 * math.log(2 * math.pi)
    want = (gauss - np.log(1 - actions.astype(np.float64) ** 2)).sum(-1)  # bounds are [-1, 1]
    got = model.action_probability(obs, actions=actions, logp=True)
    assert np.all(np.abs(want) < 20)  # moderate densities, so the comparison means something
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(model.action_probability(obs, actions=actions),
                               np.exp(want), rtol=1e-5)
    # Outside the open interval the squashed density is 0.
    assert model.action_probability(obs[0], actions=np.array([1.0]), logp=True) == -np.inf


def test_ddpg_resume_keeps_the_param_noise_distance(tmp_path):
    """A resumed run logs the last measured distance, not nan."""
    from rlbase.ddpg.ddpg import learn as ddpg_learn

    kw = dict(layer_sizes=(8,), batch_size=16, jit_compile=False, learning_starts=20,
              noise_type="adaptive-param_0.2", param_noise_adaption_interval=5,
              checkpoint_path=str(tmp_path), **QUIET)
    model = ddpg_learn("mlp", DummyVecEnv([lambda: Known(continuous=True)]), seed=0,
                       total_timesteps=60, checkpoint_interval=60, **kw)
    assert np.isfinite(model.param_noise_distance)
    again = ddpg_learn("mlp", DummyVecEnv([lambda: Known(continuous=True)]), seed=0,
                       total_timesteps=60, resume=True, **kw)
    assert again.param_noise_distance == model.param_noise_distance


def test_resuming_an_older_checkpoint_behind_vecnormalize_is_refused(tmp_path, monkeypatch):
    """An older rlbase's checkpoint holds normalized transitions: read as raw ones they would
    be normalized twice, so the resume is refused in one line."""
    from rlbase.common.io.checkpoint import object_state
    from rlbase.sac.sac import learn as sac_learn

    def make():
        return VecNormalize(DummyVecEnv([lambda: Known(continuous=True)]))

    def plain():
        return DummyVecEnv([lambda: Known(continuous=True)])

    kw = dict(layer_sizes=(4,), learning_starts=100, **QUIET)
    old, new = dict(checkpoint_path=str(tmp_path / "a")), dict(checkpoint_path=str(tmp_path / "b"))
    monkeypatch.setattr(RawReplay, "buffer_state",
                        lambda self, buffer: object_state(buffer, "replay"))  # the old writer
    sac_learn("mlp", make(), seed=0, total_timesteps=10, checkpoint_interval=10, **old, **kw)
    sac_learn("mlp", plain(), seed=0, total_timesteps=10, checkpoint_interval=10, **new, **kw)
    monkeypatch.undo()
    with pytest.raises(RLBaseError, match="older rlbase") as info:
        sac_learn("mlp", make(), seed=0, total_timesteps=20, resume=True, **old, **kw)
    assert "\n" not in str(info.value)
    # Without a VecNormalize the old buffer held raw values already: it resumes.
    assert sac_learn("mlp", plain(), seed=0, total_timesteps=20, resume=True, **new,
                     **kw).num_timesteps == 20


def _assert_no_stitched_stacks(buffer, last_before_cut):
    ages = np.arange(1, len(buffer) + 1)  # every sampleable row (one env)
    batch = buffer.get((buffer.pos - 1 - ages) % buffer.rows)
    for obs, nxt in zip(batch.obs, batch.next_obs):
        frames, next_frames = obs.reshape(4, 2), nxt.reshape(4, 2)  # [t, 10 * episode]
        assert len({e for t, e in frames if e}) == 1, frames.tolist()
        assert next_frames[-1].tolist() == [frames[-1, 0] + 1, frames[-1, 1]], \
            (frames.tolist(), next_frames.tolist())
    assert sum(o.reshape(4, 2)[-1].tolist() == last_before_cut for o in batch.obs) == 1


def test_resume_does_not_stitch_episodes_in_the_frame_buffer(tmp_path):
    from rlbase.dqn.dqn import learn as dqn_learn

    kw = dict(seed=0, learning_starts=1000, buffer_size=100, num_hidden=4,
              best_model_interval=None, checkpoint_path=str(tmp_path), **QUIET)
    dqn_learn("mlp", VecFrameStack(DummyVecEnv([lambda: Known(episode=1000)]), 4),
              total_timesteps=20, checkpoint_interval=20, **kw)
    resumed_env = DummyVecEnv([lambda: Known(episode=1000, first_episode=5)])
    model = dqn_learn("mlp", VecFrameStack(resumed_env, 4), total_timesteps=26, resume=True,
                      **kw)
    assert isinstance(model.replay_buffer, FrameStackReplayBuffer)
    _assert_no_stitched_stacks(model.replay_buffer, [19.0, 10.0])
