"""SAC: exact losses and targets, the squashed Gaussian, the fused training call, save/load,
checkpoints, the class, the CLI, bad input, and learning Pendulum (slow)."""

import csv
import math

import gymnasium as gym
import identity_envs as ie
import numpy as np
import pytest
import tensorflow as tf

from rlbase import registry
from rlbase.common.errors import RLBaseError
from rlbase.common.io.checkpoint import generator_state, list_checkpoints, object_state
from rlbase.common.logs import logger
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.common.loops.training_loop import LoopOptions
from rlbase.common.vec_env import DummyVecEnv, VecMonitor
from rlbase.hyperparams import env_type_defaults
from rlbase.sac import losses
from rlbase.sac.model import Model, parse_ent_coef
from rlbase.sac.sac import learn, train
from tests.envs.ramp import Ramp

SMALL = dict(layer_sizes=(16, 16), batch_size=16, train_freq=1, gradient_steps=1,
             jit_compile=False)
# SMALL without the network's keyword arguments (what registry.build_model takes).
SMALL_HP = {k: v for k, v in SMALL.items() if k != "layer_sizes"}
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def make_model(ob_dim: int = 2, num_actions: int = 1, sizes=(3,), **kw) -> Model:
    """A model built as learn() builds it, with tiny ReLU nets."""
    hp = dict(gamma=0.9, tau=0.25, batch_size=4, gradient_steps=1, buffer_size=100,
              ent_coef="auto_0.5", lr=1e-3, jit_compile=False, seed=0)
    hp.update(kw)
    ob = gym.spaces.Box(-np.inf, np.inf, (ob_dim,), np.float32)
    ac = gym.spaces.Box(-1.0, 1.0, (num_actions,), np.float32)
    return registry.build_model("sac", ob, ac, 1, "mlp",
                                {"layer_sizes": sizes, "activation": "relu"}, hp)


def fill(net, kernel: float, bias: dict | None = None) -> None:
    """Every kernel ``kernel``, every bias 0, then the named layers' biases."""
    for v in net.weights:
        v.assign(tf.fill(v.shape, kernel if len(v.shape) == 2 else 0.0))
    for layer, value in (bias or {}).items():
        layer.bias.assign(tf.fill(layer.bias.shape, value))


def snapshot(variables):
    return [v.numpy().copy() for v in variables]


# -- hand computations (float64) of the constant-initialized tiny nets ---------------------------
# One hidden layer of 3 ReLU units, every kernel entry k: a unit computes relu(k * sum(input)).
def hand_policy(obs, noise, k=0.1, mu_bias=0.3, log_std_bias=1.9):
    h = np.maximum(k * obs.sum(axis=1), 0.0)
    mean = 3 * k * h + mu_bias
    log_std = np.clip(3 * k * h + log_std_bias, -20.0, 2.0)  # the clip bites where h > 0.33
    u = mean[:, None] + np.exp(log_std)[:, None] * noise
    gauss = np.sum(-0.5 * noise ** 2 - log_std[:, None] - HALF_LOG_2PI, axis=1)
    return np.tanh(u), gauss - np.sum(np.log(1.0 - np.tanh(u) ** 2), axis=1)


def hand_q(obs, actions, k, bias):
    return 3 * k * np.maximum(k * (obs.sum(axis=1) + actions[:, 0]), 0.0) + bias


def fill_for_hand_values(model) -> None:
    fill(model.actor, 0.1, {model.actor.mu: 0.3, model.actor.log_std: 1.9})
    fill(model.target_critics[0], 0.1)
    fill(model.target_critics[1], 0.2, {model.target_critics[1].out: -0.1})
    fill(model.critics[0], 0.3, {model.critics[0].out: 0.5})
    fill(model.critics[1], -0.2, {model.critics[1].out: 0.2})


OBS = np.array([[1.0, 2.0], [0.5, -1.0], [0.0, 0.0], [3.0, 1.0]], np.float32)
NEXT_OBS = np.array([[1.0, 4.0], [0.5, -1.0], [0.2, 0.1], [-3.0, 1.0]], np.float32)
ACTIONS = np.array([[0.5], [-0.9], [0.0], [0.2]], np.float32)
REWARDS = np.array([1.0, -0.5, 0.0, 2.0], np.float32)
DONES = np.array([0.0, 1.0, 0.0, 0.0], np.float32)
NOISE = np.array([[[0.3], [-1.2], [0.0], [2.0]], [[-0.5], [0.7], [1.5], [-0.1]]], np.float32)


def hand_targets(alpha, gamma=0.9, rewards=REWARDS, next_obs=NEXT_OBS, dones=DONES,
                 noise=NOISE[1]):
    a2, logp2 = hand_policy(next_obs.astype(np.float64), noise)
    q = np.minimum(hand_q(next_obs, a2, 0.1, 0.0), hand_q(next_obs, a2, 0.2, -0.1))
    return rewards + gamma * (1.0 - dones) * (q - alpha * logp2)


# -- the pure functions, on numbers worked out by hand --------------------------------------------
def test_critic_target_is_exact():
    got = losses.critic_target(tf.constant([1.0, -0.5]), tf.constant([0.0, 1.0]),
                               tf.constant([2.0, 3.0]), tf.constant([1.5, 4.0]),
                               tf.constant([-1.0, 0.5]), tf.constant(0.2), 0.9)
    # 1 + 0.9 (min(2, 1.5) - 0.2 * -1) = 2.53; the second ends: its reward alone.
    np.testing.assert_allclose(got.numpy(), [2.53, -0.5], rtol=1e-6)


def test_actor_loss_is_exact():
    got = losses.actor_loss(tf.constant([-1.0, 1.5]), tf.constant([2.0, 3.0]),
                            tf.constant([1.5, 4.0]), tf.constant(0.2))
    # mean(0.2 * -1 - 1.5, 0.2 * 1.5 - 3) = mean(-1.7, -2.7) (log-probabilities for which
    # alpha * mean(log pi) and alpha + mean(log pi) differ: 0.05 against 0.45)
    assert got.numpy() == pytest.approx(-2.2, rel=1e-6)


def test_temperature_loss_and_its_gradient_are_exact():
    log_alpha = tf.Variable(math.log(0.5))
    log_prob = tf.constant([-1.0, 0.5])
    with tf.GradientTape() as tape:
        loss = losses.temperature_loss(log_alpha, log_prob, -1.0)
    # -mean(log 0.5 * (-2, -0.5)) = log 0.5 * 1.25; d/d log_alpha = -mean(log pi + H) = 1.25:
    # the entropy (0.25 on average) is above the target (-1), so alpha is pushed down.
    assert loss.numpy() == pytest.approx(math.log(0.5) * 1.25, rel=1e-6)
    assert tape.gradient(loss, log_alpha).numpy() == pytest.approx(1.25, rel=1e-6)


def test_critic_loss_is_exact():
    got = losses.critic_loss(tf.constant([1.0, 2.0]), tf.constant([0.0, 4.0]),
                             tf.constant([1.5, 2.0]))
    # 0.5 (mean(0.25, 0) + mean(2.25, 4))
    assert got.numpy() == pytest.approx(0.5 * (0.125 + 3.125), rel=1e-6)


def test_tanh_correction_is_exact_and_stable():
    u = np.linspace(-4.0, 4.0, 17)
    got = losses.tanh_log_det(tf.constant(u[:, None], tf.float32)).numpy()
    np.testing.assert_allclose(got, np.log(1.0 - np.tanh(u) ** 2), rtol=1e-5, atol=1e-6)
    # Where 1 - tanh(u)^2 underflows in float32 the stable form stays exact: 2 (log 2 - |u|).
    far = losses.tanh_log_det(tf.constant([[30.0], [-30.0]])).numpy()
    np.testing.assert_allclose(far, 2 * (math.log(2.0) - 30.0), rtol=1e-6)


def test_squashed_sample_is_the_change_of_variables():
    mean = tf.constant([[0.3, -1.0], [2.0, 0.0]])
    log_std = tf.constant([[-0.5, 0.2], [1.0, -3.0]])
    noise = tf.constant([[1.0, -0.5], [0.2, 2.0]])
    actions, log_prob = losses.squashed_sample(mean, log_std, noise)
    u = mean.numpy() + np.exp(log_std.numpy()) * noise.numpy()
    np.testing.assert_allclose(actions.numpy(), np.tanh(u), rtol=1e-6)
    want = np.sum(-0.5 * noise.numpy() ** 2 - log_std.numpy() - HALF_LOG_2PI
                  - np.log(1.0 - np.tanh(u) ** 2), axis=1)
    np.testing.assert_allclose(log_prob.numpy(), want, rtol=1e-5)
    assert losses.clip_log_std(tf.constant([-25.0, 0.0, 3.0])).numpy().tolist() == \
        [-20.0, 0.0, 2.0]


# -- the networks and the training call ----------------------------------------------------------
def test_critic_target_through_the_networks_against_hand_values():
    model = make_model()
    fill_for_hand_values(model)
    got = model.critic_targets(REWARDS, NEXT_OBS, DONES, NOISE[1], tf.constant(0.5)).numpy()
    np.testing.assert_allclose(got, hand_targets(0.5), rtol=1e-5)


def _one_step(model, lr=1e-3):
    batch = (OBS[None], ACTIONS[None], REWARDS[None], NEXT_OBS[None], DONES[None])
    stats, actions = model.train_fn(*batch, NOISE[None], OBS[:2], np.zeros((2, 1), np.float32),
                                    np.float32(lr))
    return dict(zip(("critic_loss", "actor_loss", "ent_coef", "ent_coef_loss"),
                    stats.numpy().tolist())), actions.numpy()


def test_one_gradient_step_against_hand_values():
    """The statistics of one step on constant-initialized nets: the critic loss against the
    targets, the temperature loss, alpha read before it moves, and Adam's first step on
    log alpha (lr times the sign of the gradient); the targets move by tau."""
    model = make_model(tau=0.25)
    fill_for_hand_values(model)
    targets_before = snapshot([t for _, t in model.target_pairs()])
    stats, _ = _one_step(model)
    y = hand_targets(0.5)
    q1, q2 = hand_q(OBS, ACTIONS, 0.3, 0.5), hand_q(OBS, ACTIONS, -0.2, 0.2)
    assert stats["critic_loss"] == pytest.approx(
        0.5 * (np.mean((q1 - y) ** 2) + np.mean((q2 - y) ** 2)), rel=1e-5)
    _, log_prob = hand_policy(OBS.astype(np.float64), NOISE[0])
    assert stats["ent_coef"] == pytest.approx(0.5, rel=1e-6)
    assert stats["ent_coef_loss"] == pytest.approx(
        -math.log(0.5) * np.mean(log_prob - 1.0), rel=1e-5)
    grad_sign = np.sign(-np.mean(log_prob - 1.0))
    assert model.log_alpha.numpy() == pytest.approx(math.log(0.5) - 1e-3 * grad_sign, rel=1e-4)
    for (src, dst), before in zip(model.target_pairs(), targets_before):
        np.testing.assert_allclose(dst.numpy(), 0.75 * before + 0.25 * src.numpy(), rtol=1e-6,
                                   atol=1e-7)
    assert int(model.updates.numpy()) == 1 and np.isfinite(stats["actor_loss"])


def test_actor_loss_statistic_uses_the_updated_critics():
    """SB3's order: the actor is judged by the critics after this step's critic update."""
    model = make_model()
    fill_for_hand_values(model)
    actor = snapshot(model.actor.weights)
    stats, _ = _one_step(model)
    updated = [c(OBS, model.policy(OBS, NOISE[0])[0]) for c in model.critics]
    for v, value in zip(model.actor.weights, actor):  # the actor as it was before the step
        v.assign(value)
    actions, log_prob = model.policy(OBS, NOISE[0])
    q1, q2 = (c(OBS, actions) for c in model.critics)
    want = losses.actor_loss(log_prob, q1, q2, tf.constant(0.5)).numpy()
    assert stats["actor_loss"] == pytest.approx(float(want), rel=1e-5)
    assert updated  # (the critics were evaluated after the step)


@pytest.mark.parametrize("name", ["target_update_gradient_steps", "target_update_interval"])
def test_target_update_gradient_steps_counts_gradient_steps(name):
    # target_update_interval: SB3's name (and rlbase's before), the same value.
    model = make_model(**{name: 2})
    assert model.config.target_update_gradient_steps == 2
    before = snapshot([t for _, t in model.target_pairs()])
    _one_step(model)
    assert all(np.array_equal(b, t.numpy()) for b, (_, t) in zip(before, model.target_pairs()))
    _one_step(model)
    assert not any(np.array_equal(b, t.numpy())
                   for b, (_, t) in zip(before, model.target_pairs()))


def test_fixed_ent_coef_stays_and_reports_no_temperature_loss():
    model = make_model(ent_coef=0.1)
    stats, _ = _one_step(model)
    assert stats["ent_coef"] == pytest.approx(0.1) and stats["ent_coef_loss"] == 0.0
    assert model.ent_coef == pytest.approx(0.1)
    assert parse_ent_coef("auto") == (True, 1.0) and parse_ent_coef("auto_0.1") == (True, 0.1)


def test_several_steps_in_one_call_equal_one_by_one():
    rng = np.random.default_rng(0)
    g = 3
    batch = (rng.normal(size=(g, 4, 2)).astype(np.float32),
             rng.uniform(-1, 1, (g, 4, 1)).astype(np.float32),
             rng.normal(size=(g, 4)).astype(np.float32),
             rng.normal(size=(g, 4, 2)).astype(np.float32), np.zeros((g, 4), np.float32))
    noise = rng.normal(size=(g, 2, 4, 1)).astype(np.float32)
    one, many = make_model(gradient_steps=1), make_model(gradient_steps=g)
    for a, b in zip(one.trainable_variables(), many.trainable_variables()):
        b.assign(a)
    act = (OBS[:1], np.zeros((1, 1), np.float32), np.float32(1e-3))
    for i in range(g):
        one.train_fn(*(x[i:i + 1] for x in batch), noise[i:i + 1], *act)
    many.train_fn(*batch, noise, *act)
    for a, b in zip(one.trainable_variables(), many.trainable_variables()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_xla_gives_the_same_losses():
    plain, xla = make_model(gradient_steps=2), make_model(gradient_steps=2, jit_compile=True)
    for a, b in zip(plain.trainable_variables(), xla.trainable_variables()):
        b.assign(a)
    rng = np.random.default_rng(1)
    for _ in range(3):
        batch = (rng.normal(size=(2, 4, 2)).astype(np.float32),
                 rng.uniform(-1, 1, (2, 4, 1)).astype(np.float32),
                 rng.normal(size=(2, 4)).astype(np.float32),
                 rng.normal(size=(2, 4, 2)).astype(np.float32),
                 (rng.random((2, 4)) < 0.3).astype(np.float32))
        noise = rng.normal(size=(2, 2, 4, 1)).astype(np.float32)
        act = (OBS, rng.normal(size=(4, 1)).astype(np.float32), np.float32(1e-2))
        s1, a1 = plain.train_fn(*batch, noise, *act)
        s2, a2 = xla.train_fn(*batch, noise, *act)
        np.testing.assert_allclose(s1.numpy(), s2.numpy(), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(a1.numpy(), a2.numpy(), rtol=1e-4, atol=1e-6)


def test_every_trainable_variable_changes_after_one_update():
    model = learn("mlp", "Pendulum-v1", seed=0, total_timesteps=20, learning_starts=20,
                  **SMALL)
    variables = model.trainable_variables()  # actor, critics, their targets, log alpha
    assert len(variables) == len(model.actor.trainable_variables) + \
        4 * len(model.critics[0].trainable_variables) + 1
    before = snapshot(variables)
    stats, actions = model.train_and_act(model.replay_buffer.obs[:1], 1e-3)
    unchanged = [v.path for v, b in zip(variables, before) if np.array_equal(v.numpy(), b)]
    assert unchanged == []
    assert set(stats) == {"critic_loss", "actor_loss", "ent_coef", "ent_coef_loss"}
    assert actions.shape == (1, 1) and np.all(np.abs(actions) <= 1.0)


# -- the replay buffer and the env ---------------------------------------------------------------
class EndsAtThreeBox(ie.EndsAtThree):
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)


@pytest.mark.parametrize("gamma", [0.9, 1.0])
def test_truncation_bootstraps_only_below_gamma_one(gamma):
    """An episode cut by a time limit at step 3: with gamma < 1 the target bootstraps from the
    final observation's soft value; with gamma = 1 it is the reward alone
    (rlbase.common.buffers.transitions)."""
    env = VecMonitor(DummyVecEnv([lambda: EndsAtThreeBox(True)]))
    model = learn("mlp", env, seed=0, total_timesteps=3, learning_starts=100, gamma=gamma,
                  layer_sizes=(3,), jit_compile=False)
    buf = model.replay_buffer
    np.testing.assert_allclose(buf.next_obs[:3, 0], [0.1, 0.2, 0.3], atol=1e-7)
    np.testing.assert_array_equal(buf.dones[:3], [0, 0, float(gamma == 1.0)])
    fill(model.actor, 0.1, {model.actor.mu: 0.3, model.actor.log_std: 1.9})
    fill(model.target_critics[0], 0.1)
    fill(model.target_critics[1], 0.2, {model.target_critics[1].out: -0.1})
    noise = np.array([[0.5], [-0.3], [1.0]], np.float32)
    got = model.critic_targets(buf.rewards[:3], buf.next_obs[:3], buf.dones[:3], noise,
                               tf.constant(0.5)).numpy()
    # The 1-D observation's "sum" is the observation itself, so the hand nets apply.
    want = hand_targets(0.5, gamma, np.ones(3), buf.next_obs[:3], buf.dones[:3], noise)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    if gamma == 1.0:
        assert got[2] == 1.0


class AsymmetricEnv(gym.Env):
    """Actions in [0, 2] x [-1, 3]; records what it receives."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Box(np.array([0.0, -1.0], np.float32),
                                  np.array([2.0, 3.0], np.float32))

    def __init__(self):
        self.received, self.t = [], 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.received.append(np.array(action))
        self.t += 1
        reward = -float(np.sum(np.square(np.asarray(action) - [1.5, 2.5])))
        return np.zeros(2, np.float32), reward, False, self.t >= 10, {}


def test_actions_reach_the_env_scaled_to_asymmetric_bounds():
    inner = AsymmetricEnv()
    env = VecMonitor(DummyVecEnv([lambda: inner]))
    model = learn("mlp", env, seed=0, total_timesteps=60, learning_starts=30, **SMALL)
    got = np.array(inner.received)
    assert (got >= AsymmetricEnv.action_space.low).all()
    assert (got <= AsymmetricEnv.action_space.high).all()
    assert got[:, 0].min() < 0.3 and got[:, 1].max() > 2.5  # the warm-up covers the box
    obs = np.zeros((1, 2), np.float32)
    mean, std = model.action_probabilities(obs, None, None)
    inner_mean = model.act(obs, deterministic=True)
    np.testing.assert_allclose(mean, [0.0, -1.0] + (inner_mean + 1.0) * 0.5 * [2.0, 4.0],
                               rtol=1e-6)
    np.testing.assert_array_equal(model.step(obs, deterministic=True)[0], mean)
    assert mean.dtype == np.float32 and np.all(std > 0)


def test_learns_a_continuous_bandit():
    env = VecMonitor(DummyVecEnv([lambda: ie.BoxIdentityEnv(1, episode_len=10)]))
    env.seed(0)
    model = learn("mlp", env, seed=0, total_timesteps=1000, gamma=0.0, lr=3e-3,
                  learning_starts=100, layer_sizes=(32, 32), batch_size=32, jit_compile=False)
    eval_env = VecMonitor(DummyVecEnv([lambda: ie.BoxIdentityEnv(1, episode_len=10)]))
    eval_env.seed(1)
    mean, _ = evaluate_policy(model, eval_env, 10)
    assert mean > -0.3  # random actions score about -6.7 over 10 steps


class DictObsEnv(gym.Env):
    """A Dict observation (a vector and a discrete entry); reward -(a - target)^2 where the
    target is the vector's first entry."""

    observation_space = gym.spaces.Dict({"vec": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
                                         "id": gym.spaces.Discrete(3)})
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def _obs(self):
        self.target = float(self.np_random.uniform(-1, 1))
        return {"vec": np.array([self.target, 0.5], np.float32),
                "id": int(self.np_random.integers(3))}

    def step(self, action):
        reward = -float((np.asarray(action)[0] - self.target) ** 2)
        self.t += 1
        return self._obs(), reward, False, self.t >= 5, {}


def test_dict_observations_train_and_act():
    env = VecMonitor(DummyVecEnv([DictObsEnv, DictObsEnv]))
    model = learn("mlp", env, seed=0, total_timesteps=60, learning_starts=20, **SMALL)
    assert model.grad_steps > 0
    obs = env.reset()
    actions = model.step(obs)[0]
    assert actions.shape == (2, 1) and np.all(np.abs(actions) <= 1.0)


# -- learn(), the loop, logging ------------------------------------------------------------------
def test_logs_sb3_keys(tmp_path):
    def make():
        return VecMonitor(DummyVecEnv([lambda: ie.BoxIdentityEnv(1, episode_len=5)]))

    with logger.scoped_configure(dir=str(tmp_path), format_strs=["csv"]):
        learn("mlp", make(), seed=0, total_timesteps=60, learning_starts=10, log_interval=2,
              eval_env=make(), eval_freq=30, eval_episodes=2, **SMALL)
    with open(tmp_path / "progress.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6
    for key in ("train/actor_loss", "train/critic_loss", "train/ent_coef",
                "train/ent_coef_loss", "train/learning_rate", "train/n_updates",
                "rollout/ep_rew_mean", "time/total_timesteps", "eval/mean_reward"):
        assert key in rows[0], key
    assert int(rows[-1]["train/n_updates"]) == 60 - 10 - 1  # after steps 11..59 (SB3's rule)
    assert float(rows[-1]["train/ent_coef"]) < 1.0


def test_no_retracing_over_several_training_calls():
    """The model classes call train() once per learn(): the compiled calls stay traced once."""
    env = VecMonitor(DummyVecEnv([lambda: ie.BoxIdentityEnv(1, episode_len=10)]))
    model = registry.build_model("sac", env.observation_space, env.action_space, 1, "mlp",
                                 {"layer_sizes": (8,)}, dict(SMALL_HP, learning_starts=20))
    model.attach_env(env)
    for _ in range(3):
        train(model, env, 30, LoopOptions())
    assert model.num_timesteps == 90 and model.grad_steps == 90 - 20 - 1
    model.step(np.zeros((5, 1), np.float32))  # another batch size: no new trace either
    for fn in (model.train_fn, model.act_fn):
        assert fn.function.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("train_freq,gradient_steps,want,counts", [
    (4, 1, 4, [1]),       # one phase per vector step of 4 envs
    (1, 1, 16, [4]),      # one per env step: 4 per vector step, in one call
    (8, 1, 2, [1]),       # every other vector step
    (3, 1, 5, [1, 2]),    # multiples of 3 in [4, 20): 6, 9, 12, 15, 18
    (2, 3, 24, [2]),      # 2 phases of 3 gradient steps per vector step
    ((1, "step"), 1, 4, [1]),  # SB3's form: n vector steps = n * num_envs env steps
])
def test_train_freq_counts_env_steps_summed_over_envs(train_freq, gradient_steps, want, counts):
    """4 envs, 5 vector steps (env steps 0-19), training once the first vector step has
    stored transitions (learning_starts=0): phases before the vector step from t to
    t + 4 are the multiples of train_freq in [t, t + 4), for t = 4, 8, 12, 16."""
    env = VecMonitor(DummyVecEnv([lambda: ie.BoxIdentityEnv(1, episode_len=10)] * 4))
    model = registry.build_model("sac", env.observation_space, env.action_space, 4, "mlp",
                                 {"layer_sizes": (8,)},
                                 dict(SMALL_HP, batch_size=4, learning_starts=0, seed=0,
                                      train_freq=train_freq, gradient_steps=gradient_steps))
    model.attach_env(env)
    train(model, env, 20, LoopOptions())
    assert model.num_timesteps == 20
    assert model.grad_steps == int(model.updates.numpy()) == want
    # Each vector step that trains is one compiled call of all its phases' gradient steps.
    assert sorted(model._train_fns) == [c * gradient_steps for c in counts]


def test_old_files_settings_load():
    from rlbase.sac.config import SACConfig

    saved = SACConfig.from_saved({"target_update_interval": 3, "train_freq": 2, "lr": 1e-3,
                                  "total_timesteps": 100})
    assert saved == {"target_update_gradient_steps": 3, "train_freq": 2, "lr": 1e-3}


def test_bad_input_is_a_clear_error():
    with pytest.raises(RLBaseError, match=r"Discrete\(2\); for discrete actions use dqn, "
                                          r"ppo, a2c, acer or qlearning") as info:
        learn("mlp", "CartPole-v1", total_timesteps=10)
    assert "\n" not in str(info.value) and "Box" in str(info.value)
    for bad, match in ((dict(ent_coef="autox"), "ent_coef"), (dict(ent_coef="auto_-1"), "auto_"),
                       (dict(ent_coef=0.0), "ent_coef"), (dict(target_entropy="x"),
                                                         "target_entropy"),
                       (dict(tau=0.0), "tau"), (dict(train_freq=0), "train_freq"),
                       (dict(gamma=1.5), "gamma"), (dict(lr=-1.0), "lr"),
                       (dict(target_update_gradient_steps=0), "target_update_gradient_steps"),
                       (dict(target_update_interval=0), "target_update_gradient_steps"),
                       (dict(gradient_steps=-2), "gradient_steps"),
                       (dict(train_freq=(1, "episode")), "env steps"),
                       (dict(num_hiden=3), "does not take")):
        with pytest.raises(RLBaseError, match=match):
            learn("mlp", "Pendulum-v1", total_timesteps=10, **bad)


# -- files, checkpoints, the class, the CLI ------------------------------------------------------
def test_save_load_round_trip(tmp_path):
    kw = dict(SMALL, learning_starts=20)
    model = learn("mlp", "Pendulum-v1", seed=0, total_timesteps=60, **kw)
    path = str(tmp_path / "sac.zip")
    model.save(path)
    obs = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    actions = model.step(obs, deterministic=True)[0]
    other = learn("mlp", "Pendulum-v1", seed=1, total_timesteps=0, **kw)
    assert not np.array_equal(other.step(obs, deterministic=True)[0], actions)
    other.load(path)
    for name, group in model.variable_groups().items():
        for a, b in zip(group, other.variable_groups()[name]):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    np.testing.assert_array_equal(other.step(obs, deterministic=True)[0], actions)
    loaded = registry.load(path)  # from the file's own settings
    assert isinstance(loaded, Model) and loaded.num_timesteps == 60
    np.testing.assert_array_equal(loaded.step(obs, deterministic=True)[0], actions)
    untrained = learn("mlp", "Pendulum-v1", seed=3, total_timesteps=0, load_path=path, **kw)
    assert untrained.num_timesteps == 60 and untrained.grad_steps == model.grad_steps > 0
    np.testing.assert_array_equal(untrained.step(obs, deterministic=True)[0], actions)
    assert untrained.ent_coef == pytest.approx(model.ent_coef) != 1.0
    fixed = learn("mlp", "Pendulum-v1", total_timesteps=0, load_path=path,
                  **dict(kw, ent_coef=0.2))  # a fixed ent_coef given now wins
    assert fixed.ent_coef == pytest.approx(0.2)
    more = learn("mlp", "Pendulum-v1", seed=2, total_timesteps=20, load_path=path, **kw)
    assert more.num_timesteps == 80
    smaller = learn("mlp", "Pendulum-v1", total_timesteps=0, **dict(kw, layer_sizes=(8, 8)))
    with pytest.raises(RLBaseError, match="shape"):
        smaller.load(path)


def _assert_same_state(model, again):
    for name, group in model.variable_groups().items():
        other = again.variable_groups()[name]
        assert len(group) == len(other)
        for a, b in zip(group, other):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    for name in ("noise_rng", "loop_rng"):
        assert generator_state(getattr(model, name)) == generator_state(getattr(again, name))
    buf_meta, buf_arrays = object_state(model.replay_buffer, "b")
    again_meta, again_arrays = object_state(again.replay_buffer, "b")
    assert again_meta == buf_meta
    for key, value in buf_arrays.items():
        np.testing.assert_array_equal(value, again_arrays[key], err_msg=key)


def test_resume_continues_exactly(tmp_path):
    """Stopped at a checkpoint and resumed, a run ends exactly where an uninterrupted one
    does: weights, targets, temperature, optimizers, buffer and generators."""
    kw = dict(SMALL, learning_starts=15, buffer_size=50)

    def run(total, folder, resume=False):
        env = VecMonitor(DummyVecEnv([Ramp]))
        return learn("mlp", env, seed=4, total_timesteps=total, checkpoint_interval=30,
                     checkpoint_path=str(tmp_path / folder), resume=resume, **kw)

    whole = run(90, "whole")
    run(30, "cut")
    assert [s for s, _ in list_checkpoints(str(tmp_path / "cut"))] == [30]
    resumed = run(90, "cut", resume=True)
    assert resumed.num_timesteps == whole.num_timesteps == 90
    assert resumed.grad_steps == whole.grad_steps == 90 - 15 - 1 and whole.replay_buffer.size == 50
    _assert_same_state(whole, resumed)


def test_sac_class_life_cycle(tmp_path):
    from rlbase import SAC

    agent = SAC("MlpPolicy", "Pendulum-v1", seed=0, policy_kwargs={"net_arch": [8]},
                learning_rate=1e-3, train_freq=(1, "step"), gradient_steps=-1, batch_size=8,
                learning_starts=10, jit_compile=False)
    config = agent.model.config  # SB3's names and forms, converted
    assert (config.lr, config.train_freq, config.gradient_steps) == (1e-3, 1, 1)
    agent.learn(30)
    agent.learn(30, reset_num_timesteps=False)
    model = agent.model
    assert isinstance(model, Model) and agent.num_timesteps == 60 and model.grad_steps == 49
    obs = np.zeros((2, 3), np.float32)
    mean, std = agent.action_probability(obs)
    np.testing.assert_allclose(mean, agent.predict(obs, deterministic=True)[0], rtol=1e-6)
    assert np.all(std > 0) and np.all(np.abs(agent.predict(obs)[0]) <= 2.0)
    path = str(tmp_path / "sac.zip")
    agent.save(path)
    loaded = SAC.load(path, env="Pendulum-v1")
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0],
                                  agent.predict(obs, deterministic=True)[0])
    loaded.learn(20)
    with pytest.raises(RLBaseError, match="use_sde must be False"):  # gSDE
        SAC("MlpPolicy", "Pendulum-v1", use_sde=True)


def test_cli_trains_pendulum(tmp_path):
    from rlbase.run import main

    main(["--alg=sac", "--env=Pendulum-v1", "--num_timesteps=300",
          f"--save_path={tmp_path / 'm.zip'}", "--no_progress"])
    assert registry.load(str(tmp_path / "m.zip")).num_timesteps == 300


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pendulum_at_the_zoo_settings(seed):
    # rl-baselines3-zoo's Pendulum-v1 SAC settings (rlbase/hyperparams/sac.yml
    # classic_control, the peer's anchor): the issue asks for a deterministic evaluation of
    # -200 or better at 2e4 steps.
    # Broken variant it was seen to fail on (2026-11-28): trained on zeroed rewards (seed 0),
    # the same evaluation gives -1241.
    from rlbase.common.envs.make import make_vec_env

    kw = env_type_defaults("sac", "classic_control")
    kw.pop("num_env")
    model = learn(env=make_vec_env("Pendulum-v1", num_env=1, seed=seed), seed=seed,
                  total_timesteps=20000, **kw)
    mean, _ = evaluate_policy(model, make_vec_env("Pendulum-v1", num_env=1, seed=123), 10)
    print(f"seed {seed}: deterministic evaluation {mean:.1f}")
    assert mean > -200
