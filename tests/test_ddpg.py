"""DDPG and its TD3 options: noise, exact targets and updates, scaling, MPI, save/load,
checkpoints, the contract's loop."""

import csv
import importlib.util
import os
import random
import shutil
import subprocess
import sys

import gymnasium as gym
import identity_envs as ie
import numpy as np
import pytest
import tensorflow as tf
from process_util import ENV, ROOT, cli_in_process, kill_after_checkpoints, start_cli

from rlbase import registry
from rlbase.common.errors import NonFiniteError, RLBaseError
from rlbase.common.families.continuous import build_torso, scale_actions, unscale_actions
from rlbase.common.io.checkpoint import list_checkpoints, object_state
from rlbase.common.io.serialization import load_file
from rlbase.common.logs import logger
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.common.loops.signals import clear_stop, request_stop
from rlbase.common.loops.training_loop import LoopOptions
from rlbase.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise, SumNoise
from rlbase.common.vec_env import DummyVecEnv, VecMonitor
from rlbase.ddpg.ddpg import learn, train
from rlbase.ddpg.model import Model
from rlbase.ddpg.networks import Actor
from rlbase.ddpg.noise import (
    parse_noise_type,
)
from rlbase.hyperparams import env_type_defaults
from tests.envs.ramp import Ramp

SMALL = dict(layer_sizes=(16, 16), batch_size=16, train_freq=1, gradient_steps=1,
             jit_compile=False)
# SMALL without the network's keyword arguments (what registry.build_model takes).
SMALL_HP = {k: v for k, v in SMALL.items() if k != "layer_sizes"}


def make_model(ob_dim: int = 2, num_actions: int = 1, sizes=(3,), num_envs: int = 1,
               **kw) -> Model:
    """A model built as learn() builds it, with tiny ReLU nets and no noise by default."""
    hp = dict(gamma=0.9, tau=0.25, twin_q=False, policy_delay=1, target_noise=0.0,
              target_noise_clip=0.5, normalize_returns=False, popart=False,
              critic_l2_reg=0.0, actor_lr=1e-3, critic_lr=1e-3, max_grad_norm=None,
              batch_size=4, gradient_steps=1, noise_type="none",
              normalize_observations=False, buffer_size=100, jit_compile=False, seed=0)
    hp.update(kw)
    ob = gym.spaces.Box(-np.inf, np.inf, (ob_dim,), np.float32)
    ac = gym.spaces.Box(-1.0, 1.0, (num_actions,), np.float32)
    return registry.build_model("ddpg", ob, ac, num_envs, "mlp",
                                {"layer_sizes": sizes, "activation": "relu"}, hp)


def fill(net, kernel: float, out_bias: float = 0.0) -> None:
    """Every kernel ``kernel``, every bias 0, the output bias ``out_bias``."""
    for v in net.weights:
        v.assign(tf.fill(v.shape, kernel if len(v.shape) == 2 else 0.0))
    net.out.bias.assign(tf.fill(net.out.bias.shape, out_bias))


def snapshot(variables):
    return [v.numpy().copy() for v in variables]


# -- noise --------------------------------------------------------------------------------------
def test_normal_noise_statistics():
    noise = NormalActionNoise(np.zeros(2), np.array([0.1, 0.3]), rng=np.random.default_rng(0),
                              num_envs=1)
    x = np.concatenate([noise() for _ in range(20000)])
    np.testing.assert_allclose(x.mean(axis=0), 0.0, atol=0.01)
    np.testing.assert_allclose(x.std(axis=0), [0.1, 0.3], rtol=0.03)


def test_ou_noise_statistics():
    theta, dt, sigma = 0.15, 1e-2, 0.2
    noise = OrnsteinUhlenbeckActionNoise(np.zeros(1), np.full(1, sigma), theta=theta, dt=dt,
                                         rng=np.random.default_rng(0), num_envs=1)
    x = np.array([noise()[0, 0] for _ in range(200000)])[10000:]  # past the transient
    a = 1.0 - theta * dt
    # AR(1) x' = a x + sigma sqrt(dt) e: stationary std sigma sqrt(dt / (1 - a^2)), lag-1 corr a
    assert abs(x.std() / (sigma * np.sqrt(dt / (1.0 - a * a))) - 1.0) < 0.15
    assert abs(np.corrcoef(x[:-1], x[1:])[0, 1] - a) < 0.002
    noise.reset()
    assert noise.x[0, 0] == 0.0


def _ou_innovations(x: np.ndarray, theta: float, dt: float, sigma: float) -> np.ndarray:
    """The standard normals e_t of x_t = x_{t-1} + theta (0 - x_{t-1}) dt + sigma sqrt(dt) e_t
    (x_{-1} = 0), for a sequence x of shape [T, ...]."""
    previous = np.concatenate([np.zeros_like(x[:1]), x[:-1]])
    return (x - previous + theta * previous * dt) / (sigma * np.sqrt(dt))


def test_ou_noise_has_one_process_per_env_following_the_recursion_exactly():
    theta, dt, sigma = 0.15, 1e-2, 0.3
    noise = OrnsteinUhlenbeckActionNoise(np.zeros(3), np.full(3, sigma), theta, dt,
                                         dtype=np.float64, rng=np.random.default_rng(5),
                                         num_envs=2)
    x = np.stack([noise().copy() for _ in range(50)])  # [T, env, action]
    eps = np.random.default_rng(5).standard_normal((50, 2, 3))  # the draws, in order
    np.testing.assert_allclose(_ou_innovations(x, theta, dt, sigma), eps, rtol=1e-9,
                               atol=1e-9)
    noise.reset([1])  # only env 1's episode ended
    assert np.all(noise.x[1] == 0.0) and np.array_equal(noise.x[0], x[-1, 0])


def test_exploration_gives_every_env_its_own_noise_process():
    """The bug this guards against: one process stepped num_envs times per env step, so
    consecutive envs got nearly identical noise and no env's noise was an OU process."""
    theta, dt, sigma, steps = 0.15, 1e-2, 0.05, 400
    model = make_model(num_envs=2, noise_type=f"ou_{sigma}")
    for v in model.actor.weights:  # the actor's action is 0: actions are the noise
        v.assign(tf.zeros_like(v))
    rng_state = model.noise_rng.bit_generator.state
    obs = np.zeros((2, 2), np.float32)
    actions = np.stack([model.act(obs, explore=True)[0] for _ in range(steps)])[..., 0]
    draws = np.random.default_rng()
    draws.bit_generator.state = rng_state
    eps = draws.standard_normal((steps, 2, 1))[..., 0]
    innovations = _ou_innovations(actions, theta, dt, sigma)
    np.testing.assert_allclose(innovations, eps, rtol=1e-7, atol=1e-7)
    assert abs(np.corrcoef(innovations[:, 0], innovations[:, 1])[0, 1]) < 0.2


@pytest.mark.parametrize("bad", ["", "foo", "normal", "normal_x", "normal_-0.1", "ou_0",
                                 "adaptive_0.2", "normal_0.1,", "adaptive-param_0.2,"
                                 "adaptive-param_0.1", 0.1, "normal_nan"])
def test_bad_noise_types_are_clear_errors(bad):
    with pytest.raises(RLBaseError, match="noise_type") as info:
        parse_noise_type(bad, 1, np.random.default_rng(0))
    assert "adaptive-param_S" in str(info.value) or "twice" in str(info.value)


def test_noise_combinations():
    rng = np.random.default_rng(0)
    assert parse_noise_type("none", 2, rng) == (None, None)
    action, param = parse_noise_type("adaptive-param_0.2,ou_0.1", 2, rng)
    assert isinstance(action, OrnsteinUhlenbeckActionNoise) and param.current_stddev == 0.2
    action, param = parse_noise_type("normal_0.1, ou_0.2", 2, rng, num_envs=3)
    assert isinstance(action, SumNoise) and param is None and action().shape == (3, 2)


def test_param_noise_adapts_towards_the_desired_distance():
    _, spec = parse_noise_type("adaptive-param_0.2", 1, np.random.default_rng(0))
    spec.adapt(0.5)
    assert spec.current_stddev == pytest.approx(0.2 / 1.01)
    spec.adapt(0.1)
    spec.adapt(0.1)
    assert spec.current_stddev == pytest.approx(0.2 * 1.01)


def test_random_streams_are_independent_and_reproducible():
    """The action noise and the learner's smoothing noise were once seeded with the same
    integer: the same standard normals, scaled by 0.1 and 0.2."""
    model = make_model(noise_type="normal_0.1", target_noise=0.2, seed=7)
    action_noise = model.action_noise()[0] / 0.1
    smoothing = model.smoothing_noise()[0, 0] / 0.2
    assert not np.allclose(action_noise, smoothing)
    streams = [rng.standard_normal(4) for rng in (model.noise_rng, model.learner_rng,
                                                  model.loop_rng)]
    for i in range(3):
        for j in range(i):
            assert not np.allclose(streams[i], streams[j])
    again = make_model(noise_type="normal_0.1", target_noise=0.2, seed=7)
    np.testing.assert_array_equal(again.action_noise()[0] / 0.1, action_noise)
    other = make_model(noise_type="normal_0.1", target_noise=0.2, seed=8)
    assert not np.allclose(other.action_noise()[0] / 0.1, action_noise)


# -- exact math -----------------------------------------------------------------------------------
def test_soft_target_update_is_exact():
    model = make_model(twin_q=True, tau=0.25)
    rng = np.random.default_rng(0)
    pairs = model.target_pairs()
    online = [rng.normal(size=s.shape).astype(np.float32) for s, _ in pairs]
    target = [rng.normal(size=s.shape).astype(np.float32) for s, _ in pairs]
    for (src, dst), a, b in zip(pairs, online, target):
        src.assign(a)
        dst.assign(b)
    tf.function(model.soft_update_targets, autograph=False)()
    for (_, dst), a, b in zip(pairs, online, target):
        np.testing.assert_allclose(dst.numpy(), 0.75 * b + 0.25 * a, rtol=1e-6, atol=1e-7)
    assert len(pairs) == len(model.actor.weights) + 2 * len(model.critics[0].weights)


def _hand_targets(rewards, next_obs, dones, noise, twin, clip=0.5, gamma=0.9):
    # Target actor: 3 ReLU units of weights 0.1, output tanh(sum(h) * 0.1 + 0.8).
    # Target critic 1: 3 units of weights 0.1 on [obs, action]; Q1 = 3 * 0.1 * relu(0.1 s).
    # Target critic 2: weights 0.2, output bias -0.1: Q2 = 3 * 0.2 * relu(0.2 s) - 0.1.
    h = np.maximum(0.1 * next_obs.sum(axis=1), 0.0)
    action = np.tanh(3 * 0.1 * h + 0.8)
    if noise is not None:
        action = np.clip(action + np.clip(noise[:, 0], -clip, clip), -1.0, 1.0)
    s = next_obs.sum(axis=1) + action
    q = 3 * 0.1 * np.maximum(0.1 * s, 0.0)
    if twin:
        q = np.minimum(q, 3 * 0.2 * np.maximum(0.2 * s, 0.0) - 0.1)
    return rewards + gamma * (1.0 - dones) * q


def _fill_for_hand_targets(model, twin: bool) -> None:
    fill(model.target_actor, 0.1, 0.8)
    fill(model.target_critics[0], 0.1)
    if twin:
        fill(model.target_critics[1], 0.2, -0.1)
    for net in [model.actor] + model.critics:  # the online nets must not matter
        fill(net, -1.0, 5.0)


@pytest.mark.parametrize("twin,smoothing", [(False, False), (True, False), (True, True)])
def test_critic_target_against_hand_computed_values(twin, smoothing):
    model = make_model(twin_q=twin)
    _fill_for_hand_targets(model, twin)
    next_obs = np.array([[1.0, 2.0], [0.5, -1.0], [0.0, 0.0], [3.0, 1.0]], np.float32)
    rewards = np.array([1.0, -0.5, 0.0, 2.0], np.float32)
    dones = np.array([0.0, 1.0, 0.0, 0.0], np.float32)
    noise = np.array([[0.7], [0.1], [-0.2], [-0.9]], np.float32) if smoothing else None
    got = model.critic_targets(rewards, next_obs, dones, noise).numpy()
    want = _hand_targets(rewards, next_obs, dones, noise, twin)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_training_sees_raw_observations_without_normalization():
    """normalize_observations=False (SB3's DDPG/TD3, the zoo's settings): the critic and its
    targets see the observations as they are. They were clipped to +-5 all the same, which hid
    Pendulum's fast states (angular velocity up to 8) and made TD3 learn it badly."""
    model = make_model()
    _fill_for_hand_targets(model, twin=False)
    obs = np.array([[-7.0, 1.0], [0.5, -1.0], [-6.0, -2.0], [2.0, 1.0]], np.float32)
    actions = np.array([[0.5], [-0.3], [0.9], [0.0]], np.float32)
    rewards = np.array([1.0, -0.5, 0.0, 2.0], np.float32)
    next_obs = np.array([[8.0, 1.0], [0.5, -1.0], [6.0, 0.0], [-9.0, 12.0]], np.float32)
    dones = np.zeros(4, np.float32)
    batch = tuple(x[None] for x in (obs, actions, rewards, next_obs, dones))
    stats = _train(model, batch)[0].numpy()
    # The online critic (kernels -1, output bias 5): Q = -3 relu(-(o1 + o2 + a)) + 5.
    q = -3.0 * np.maximum(-(obs.sum(axis=1) + actions[:, 0]), 0.0) + 5.0
    targets = _hand_targets(rewards, next_obs, dones, None, twin=False)
    np.testing.assert_allclose(stats[0], np.mean(np.square(q - targets)), rtol=1e-5)


def test_acting_sees_raw_observations_without_normalization():
    model = make_model(ob_dim=3)
    fill(model.actor, 0.1)
    obs = np.array([[1.0, 0.0, 8.0]], np.float32)  # Pendulum's top speed
    stats = model.obs_stats
    clean = model.act_fn(obs, stats.mean, stats.std)[0].numpy()
    # Actor: 3 ReLU units of 0.1 * 9, output tanh(3 * 0.1 * 0.9); clipped at 5 it was 0.6.
    np.testing.assert_allclose(clean, [[np.tanh(0.27)]], rtol=1e-6)


def test_dict_entries_pass_raw_without_normalization():
    from rlbase.ddpg.observations import ObservationStats

    space = gym.spaces.Dict({"v": gym.spaces.Box(-9.0, 9.0, (2,), np.float32),
                             "k": gym.spaces.Discrete(3)})
    stats = ObservationStats(space, enabled=False)
    obs = {"k": tf.constant([1]), "v": tf.constant([[8.0, -9.0]])}
    got = stats.normalize(obs, stats.mean, stats.std)
    np.testing.assert_array_equal(got["v"].numpy(), [[8.0, -9.0]])
    assert stats.network_space()["v"].high.tolist() == [9.0, 9.0]


def test_normalized_observations_are_still_clipped():
    model = make_model(normalize_observations=True)
    stats = model.obs_stats
    got = stats.normalize(tf.constant([[8.0, -9.0]]), np.zeros(2, np.float32),
                          np.ones(2, np.float32))
    np.testing.assert_array_equal(got.numpy(), [[5.0, -5.0]])


class EndsAtThreeBox(ie.EndsAtThree):
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)


@pytest.mark.parametrize("gamma", [0.9, 1.0])
def test_truncation_bootstraps_only_below_gamma_one(gamma):
    """Episodes cut by a time limit at step 3: with gamma < 1 the target bootstraps from the
    final observation's value; with gamma = 1 it is the reward alone (rlbase.common.
    transitions), or CartPole-like +1 rewards would make the targets grow without bound."""
    env = VecMonitor(DummyVecEnv([lambda: EndsAtThreeBox(True)]))
    model = learn("mlp", env, seed=0, total_timesteps=3, learning_starts=100, gamma=gamma,
                  noise_type="none", normalize_observations=False, layer_sizes=(3,),
                  jit_compile=False)
    buf = model.replay_buffer
    np.testing.assert_array_equal(buf.dones[:3], [0, 0, float(gamma == 1.0)])
    _fill_for_hand_targets(model, twin=False)
    got = model.critic_targets(buf.rewards[:3], buf.next_obs[:3], buf.dones[:3], None).numpy()
    want = _hand_targets(np.ones(3), np.array([[0.1], [0.2], [0.3]]),
                         np.array([0.0, 0.0, float(gamma == 1.0)]), None, False, gamma=gamma)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    if gamma == 1.0:
        assert got[2] == 1.0


def test_popart_keeps_the_critics_outputs():
    model = make_model(twin_q=True, popart=True)
    obs = np.random.default_rng(0).normal(size=(5, 2)).astype(np.float32)
    act = np.random.default_rng(1).uniform(-1, 1, size=(5, 1)).astype(np.float32)
    nets = model.critics + model.target_critics
    before = [model.q_value(c, obs, act).numpy() for c in nets]
    model.update_return_stats(tf.constant([10.0, 30.0, -5.0, 60.0]))
    assert model.returns.mean.numpy() > 10 and model.returns.var.numpy() > 100
    for c, b in zip(nets, before):
        np.testing.assert_allclose(model.q_value(c, obs, act).numpy(), b, rtol=1e-4,
                                   atol=1e-5)


def test_critic_l2_applies_to_hidden_kernels_only():
    model = make_model(sizes=(4, 3))
    kernels = model.critics[0].regularized_kernels()
    assert [tuple(k.shape) for k in kernels] == [(3, 4), (4, 3)]


def _batch(rng, g=1, b=4, ob_dim=2):
    return (rng.normal(size=(g, b, ob_dim)).astype(np.float32),
            rng.uniform(-1, 1, (g, b, 1)).astype(np.float32),
            rng.normal(size=(g, b)).astype(np.float32),
            rng.normal(size=(g, b, ob_dim)).astype(np.float32), np.zeros((g, b), np.float32))


def _train(model, batch, seed=1):
    mean, std = np.zeros(2, np.float32), np.ones(2, np.float32)
    noise = (0.2 * np.random.default_rng(seed).normal(size=batch[1].shape)).astype(np.float32)
    lr = np.float32(1e-3)
    return model.train_fn(*batch, noise, batch[0][0, :1], mean, std, lr, lr)


def test_policy_delay_and_every_variable_moving():
    model = make_model(twin_q=True, policy_delay=2, target_noise=0.2)
    rng = np.random.default_rng(0)
    actor, targets = snapshot(model.actor.weights), snapshot(model.target_actor.weights)
    critics = snapshot(model.critic_variables)
    _train(model, _batch(rng))
    assert all(not np.array_equal(a, b.numpy()) for a, b in zip(critics,
                                                                  model.critic_variables))
    assert all(np.array_equal(a, b.numpy()) for a, b in zip(actor, model.actor.weights))
    assert all(np.array_equal(a, b.numpy()) for a, b in zip(targets,
                                                            model.target_actor.weights))
    _train(model, _batch(rng))  # the second critic step also moves the actor and targets
    assert all(not np.array_equal(a, b.numpy()) for a, b in zip(actor, model.actor.weights))
    assert all(not np.array_equal(a, b.numpy()) for a, b in zip(targets,
                                                                model.target_actor.weights))
    assert int(model.updates.numpy()) == 2
    assert model.train_fn.function.experimental_get_tracing_count() == 1


def test_every_trainable_variable_changes_after_one_update():
    model = learn("mlp", "Pendulum-v1", seed=0, total_timesteps=20, learning_starts=20,
                  twin_q=True, popart=True, noise_type="adaptive-param_0.2,normal_0.1",
                  **dict(SMALL, layer_norm=True))
    variables = model.trainable_variables()  # actor, critics and their targets
    assert len(variables) == 6 * len(model.actor.trainable_variables)
    before = snapshot(variables)
    obs = model.replay_buffer.obs[:1]
    stats, actions = model.train_and_act(obs, 1e-3, 1e-3)
    unchanged = [v.path for v, b in zip(variables, before) if np.array_equal(v.numpy(), b)]
    assert unchanged == []
    assert set(stats) == {"critic_loss", "actor_loss", "q_mean"} and actions.shape == (1, 1)


def test_several_steps_in_one_call_equal_one_by_one():
    rng = np.random.default_rng(0)
    batch = _batch(rng, g=3)
    one = make_model(gradient_steps=1, twin_q=True)
    many = make_model(gradient_steps=3, twin_q=True)
    for a, b in zip(one.synced_variables, many.synced_variables):
        b.assign(a)
    for src, dst in many.target_pairs():
        dst.assign(src)
    noise = (0.2 * np.random.default_rng(1).normal(size=batch[1].shape)).astype(np.float32)
    mean, std, lr = np.zeros(2, np.float32), np.ones(2, np.float32), np.float32(1e-3)
    for i in range(3):
        one.train_fn(*(x[i:i + 1] for x in batch), noise[i:i + 1], batch[0][0, :1], mean,
                     std, lr, lr)
    many.train_fn(*batch, noise, batch[0][0, :1], mean, std, lr, lr)
    for a, b in zip(one.synced_variables, many.synced_variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_xla_gives_the_same_losses():
    rng = np.random.default_rng(0)
    batch = _batch(rng, g=2)
    kw = dict(gradient_steps=2, twin_q=True, target_noise=0.2, normalize_returns=True,
              popart=True, critic_l2_reg=0.01, max_grad_norm=1.0)
    plain, xla = make_model(**kw), make_model(**kw, jit_compile=True)
    for a, b in zip(plain.synced_variables, xla.synced_variables):
        b.assign(a)
    for src, dst in xla.target_pairs():
        dst.assign(src)
    for _ in range(2):
        s1, s2 = _train(plain, batch)[0].numpy(), _train(xla, batch)[0].numpy()
        np.testing.assert_allclose(s1, s2, rtol=1e-4, atol=1e-6)


def test_param_noise_leaves_layer_norm_alone():
    torso = build_torso("mlp", {"layer_sizes": (4,), "layer_norm": True}, "ddpg")
    actor = Actor(gym.spaces.Box(-1, 1, (2,)), 1, torso)
    names = {v.path for v in actor.perturbable_variables()}
    assert len(names) == 4 and not any("layer_normalization" in n for n in names)


# -- action scaling -----------------------------------------------------------------------------
def test_action_scaling_asymmetric_bounds():
    low, high = np.array([0.0, -1.0]), np.array([2.0, 3.0])
    a = np.array([[-1.0, -1.0], [1.0, 1.0], [0.0, 0.0], [0.5, -0.5]])
    scaled = scale_actions(a, low, high)
    np.testing.assert_allclose(scaled, [[0, -1], [2, 3], [1, 1], [1.5, 0]])
    np.testing.assert_allclose(unscale_actions(scaled, low, high), a)


class AsymmetricEnv(gym.Env):
    """Actions in [0, 2] x [-1, 3]; records what it receives; reward -|a - (1.5, 2.5)|^2."""

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


def test_actions_reach_the_env_within_asymmetric_bounds():
    inner = AsymmetricEnv()
    env = VecMonitor(DummyVecEnv([lambda: inner]))
    model = learn("mlp", env, seed=0, total_timesteps=400, noise_type="normal_0.5",
                  learning_starts=50, gamma=0.0, actor_lr=1e-2, critic_l2_reg=0.0, **SMALL)
    got = np.array(inner.received)
    assert (got >= AsymmetricEnv.action_space.low).all()
    assert (got <= AsymmetricEnv.action_space.high).all()
    # Random warm-up and noise cover the whole box, the upper end of the second bound included.
    assert got[:, 0].min() < 0.2 and got[:, 1].max() > 2.8
    actions = model.step(np.zeros((1, 2), np.float32), deterministic=True)[0]
    assert actions.dtype == np.float32 and np.abs(actions - [1.5, 2.5]).max() < 0.5
    mean, std = model.action_probabilities(np.zeros((1, 2), np.float32), None, None)
    np.testing.assert_array_equal(mean, actions)
    np.testing.assert_array_equal(std, 0.0)


# -- learn() ------------------------------------------------------------------------------------
@pytest.mark.parametrize("truncate", [True, False])
def test_buffer_keeps_final_observation_and_cuts_only_terminations(truncate):
    env = VecMonitor(DummyVecEnv([lambda: EndsAtThreeBox(truncate)]))
    model = learn("mlp", env, seed=0, total_timesteps=9, learning_starts=100, **SMALL)
    buf = model.replay_buffer
    np.testing.assert_allclose(buf.obs[:9, 0], [0, .1, .2] * 3, atol=1e-7)
    np.testing.assert_allclose(buf.next_obs[:9, 0], [.1, .2, .3] * 3, atol=1e-7)
    np.testing.assert_array_equal(buf.dones[:9], [0, 0, float(not truncate)] * 3)


def test_learns_a_continuous_bandit():
    env = VecMonitor(DummyVecEnv([lambda: ie.BoxIdentityEnv(1, episode_len=10)]))
    env.seed(0)
    model = learn("mlp", env, seed=0, total_timesteps=1200, noise_type="normal_0.2",
                  gamma=0.0, actor_lr=3e-3, critic_lr=3e-3, critic_l2_reg=0.0,
                  layer_sizes=(32, 32), batch_size=32, train_freq=1, gradient_steps=1,
                  learning_starts=100, jit_compile=False)
    eval_env = VecMonitor(DummyVecEnv([lambda: ie.BoxIdentityEnv(1, episode_len=10)]))
    eval_env.seed(1)
    mean, _ = evaluate_policy(model, eval_env, 10)
    assert mean > -0.3  # random actions score about -6.7 over 10 steps


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
    t + 4 are the multiples of train_freq in [t, t + 4), for t = 4, 8, 12, 16. The parameter
    noise adapts every 8 env steps: at the vector steps ending at 8 and 16."""
    env = VecMonitor(DummyVecEnv([lambda: ie.BoxIdentityEnv(1, episode_len=10)] * 4))
    model = registry.build_model(
        "ddpg", env.observation_space, env.action_space, 4, "mlp", {"layer_sizes": (8,)},
        dict(SMALL_HP, batch_size=4, learning_starts=0, seed=0, train_freq=train_freq,
             gradient_steps=gradient_steps, noise_type="adaptive-param_0.2",
             param_noise_adaption_interval=8))
    model.attach_env(env)
    adapted = []
    adapt = model.adapt_param_noise
    model.adapt_param_noise = lambda: adapted.append(model.num_timesteps) or adapt()
    train(model, env, 20, LoopOptions())
    assert model.num_timesteps == 20
    assert model.grad_steps == int(model.updates.numpy()) == want
    # Each vector step that trains is one compiled call of all its phases' gradient steps.
    assert sorted(model._train_fns) == [c * gradient_steps for c in counts]
    assert adapted == [4, 12]  # before the vector steps to 8 and to 16


def test_sb3_gradient_steps_minus_one_is_train_freq():
    model = make_model(train_freq=(2, "step"), gradient_steps=-1, num_envs=3)
    assert (model.config.train_freq, model.config.gradient_steps) == (6, 6)


def test_bad_input_is_a_clear_error():
    with pytest.raises(RLBaseError, match="Box"):
        learn("mlp", "CartPole-v1", total_timesteps=10)
    with pytest.raises(RLBaseError, match="not both"), pytest.warns(DeprecationWarning):
        learn("mlp", "Pendulum-v1", total_timesteps=10, nb_epochs=1)
    with pytest.raises(RLBaseError, match="noise_type"):
        learn("mlp", "Pendulum-v1", total_timesteps=10, noise_type="gaussian_0.1")
    with pytest.raises(RLBaseError, match="policy_delay"):
        learn("mlp", "Pendulum-v1", total_timesteps=10, policy_delay=0)
    with pytest.raises(RLBaseError, match="train_freq"):
        learn("mlp", "Pendulum-v1", total_timesteps=10, train_freq=0)
    with pytest.raises(RLBaseError, match="gradient_steps"):  # -1 is SB3's (train_freq)
        learn("mlp", "Pendulum-v1", total_timesteps=10, gradient_steps=-2)
    with pytest.raises(RLBaseError, match="env steps"):
        learn("mlp", "Pendulum-v1", total_timesteps=10, train_freq=(1, "episode"))
    with pytest.raises(RLBaseError, match="tau"):
        learn("mlp", "Pendulum-v1", total_timesteps=10, tau=0.0)
    with pytest.raises(RLBaseError, match="does not take"):
        learn("mlp", "Pendulum-v1", total_timesteps=10, num_hiden=3)


def test_baselines_spellings_are_deprecated_aliases():
    with pytest.warns(DeprecationWarning) as caught:
        model = learn("mlp", "Pendulum-v1", seed=0, nb_epochs=1, nb_epoch_cycles=2,
                      nb_rollout_steps=5, nb_train_steps=3, clip_norm=1.0, nb_eval_steps=10,
                      render_eval=False, layer_sizes=(8,), batch_size=4, jit_compile=False)
    warned = " ".join(str(w.message) for w in caught)
    for old in ("nb_epochs", "nb_epoch_cycles", "nb_rollout_steps", "nb_train_steps",
                "clip_norm"):
        assert f"'{old}' is deprecated" in warned
    # Baselines: nb_epochs * nb_epoch_cycles cycles of nb_rollout_steps steps per env.
    assert model.num_timesteps == 1 * 2 * 5
    hp = model.hyperparameters
    assert (hp["train_freq"], hp["gradient_steps"], hp["max_grad_norm"]) == (5, 3, 1.0)
    assert model.gradient_steps == 3 and model.grad_steps == 3  # trained once, at step 5


def test_baselines_evaluation_spellings_are_refused_where_they_would_act():
    # Without an eval_env Baselines' nb_eval_steps did nothing either; with one it would
    # have played that many steps, which rlbase does not do: refused, not ignored.
    with pytest.raises(RLBaseError, match="nb_eval_steps=10 is not supported.*eval_episodes"):
        learn("mlp", "Pendulum-v1", total_timesteps=10, eval_env="Pendulum-v1",
              nb_eval_steps=10)
    with pytest.raises(RLBaseError, match="render_eval=True is not supported"):
        learn("mlp", "Pendulum-v1", total_timesteps=10, render_eval=True)


def test_baselines_rollout_steps_count_steps_per_env():
    from rlbase.ddpg.config import DDPGConfig

    with pytest.warns(DeprecationWarning) as caught:
        config = DDPGConfig.build({"nb_rollout_steps": 5, "nb_train_steps": 3,
                                   "clip_norm": 0.5}, num_envs=4)
    assert "nb_rollout_steps * num_envs" in str(caught[0].message) and len(caught) == 3
    assert (config.train_freq, config.gradient_steps, config.max_grad_norm) == (20, 3, 0.5)
    # A model file written before: its old spellings load, silently (one env each).
    saved = DDPGConfig.from_saved({"nb_rollout_steps": 5, "clip_norm": 0.5, "train_freq_x": 1})
    assert saved == {"train_freq": 5, "max_grad_norm": 0.5}


def test_sb3_names_set_the_fields():
    from rlbase.ddpg.config import DDPGConfig

    config = DDPGConfig.build({"learning_rate": 5e-4, "target_policy_noise": 0.3,
                               "train_freq": (2, "step"), "gradient_steps": -1}, num_envs=2)
    assert (config.actor_lr, config.critic_lr, config.target_noise) == (5e-4, 5e-4, 0.3)
    assert (config.train_freq, config.gradient_steps) == (4, 4)


def test_logs_sb3_keys_and_never_a_nan_actor_loss(tmp_path):
    def make():
        return VecMonitor(DummyVecEnv([lambda: ie.BoxIdentityEnv(1, episode_len=5)]))

    with logger.scoped_configure(dir=str(tmp_path), format_strs=["csv"]):
        learn("mlp", make(), seed=0, total_timesteps=60, learning_starts=10, policy_delay=2,
              log_interval=2, noise_type="adaptive-param_0.2", eval_env=make(), eval_freq=30,
              eval_episodes=2, **SMALL)
    with open(tmp_path / "progress.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6
    for key in ("train/actor_loss", "train/critic_loss", "train/learning_rate",
                "train/n_updates", "train/q_mean", "train/param_noise_stddev",
                "rollout/ep_rew_mean", "time/total_timesteps", "eval/mean_reward"):
        assert key in rows[0], key
    trained = [r for r in rows if r["train/critic_loss"]]
    assert trained and all(np.isfinite(float(r["train/actor_loss"])) for r in trained)
    assert int(rows[-1]["train/n_updates"]) == 60 - 10 - 1  # after steps 11..59 (SB3's rule)


def test_no_retracing_over_several_training_calls():
    """The model classes call train() once per learn(): the compiled calls stay traced once."""
    env = VecMonitor(DummyVecEnv([lambda: ie.BoxIdentityEnv(1, episode_len=10)]))
    model = registry.build_model("ddpg", env.observation_space, env.action_space, 1, "mlp",
                                 {"layer_sizes": (8,)}, dict(SMALL_HP, learning_starts=20,
                                                             noise_type="adaptive-param_0.1"))
    model.attach_env(env)
    for _ in range(3):
        train(model, env, 30, LoopOptions())
    assert model.num_timesteps == 90 and model.grad_steps == 90 - 20 - 1
    for fn in (model.train_fn, model.act_fn, model.perturb_fn):
        assert fn.function.experimental_get_tracing_count() == 1


def test_td3_class_builds_twin_critics_on_this_model():
    from rlbase import TD3

    agent = TD3("MlpPolicy", "Pendulum-v1", seed=0, policy_kwargs={"layer_sizes": (8,)},
                train_freq=1, gradient_steps=1, batch_size=8, learning_starts=10,
                jit_compile=False)
    agent.learn(30)
    model = agent.model
    assert isinstance(model, Model) and len(model.critics) == 2
    assert (model.policy_delay, model.target_noise) == (2, 0.2)
    obs = np.zeros((2, 3), np.float32)
    mean, std = agent.action_probability(obs)
    np.testing.assert_array_equal(std, 0.0)
    np.testing.assert_allclose(mean, agent.predict(obs, deterministic=True)[0], rtol=1e-6)


def test_save_load_round_trip_with_statistics(tmp_path):
    kw = dict(SMALL, noise_type="adaptive-param_0.2", normalize_observations=True,
              normalize_returns=True, twin_q=True, learning_starts=20,
              param_noise_adaption_interval=5)
    model = learn("mlp", "Pendulum-v1", seed=0, total_timesteps=120, **kw)
    path = str(tmp_path / "ddpg.zip")
    model.save(path)
    other = learn("mlp", "Pendulum-v1", seed=1, total_timesteps=10, **kw)
    assert not np.allclose(other.obs_rms.mean, model.obs_rms.mean)
    other.load(path)
    np.testing.assert_array_equal(other.obs_rms.mean, model.obs_rms.mean)
    np.testing.assert_array_equal(other.obs_rms.var, model.obs_rms.var)
    assert other.obs_rms.count == model.obs_rms.count
    assert other.param_noise.current_stddev == model.param_noise.current_stddev != 0.2
    for name, group in model.variable_groups().items():
        for a, b in zip(group, other.variable_groups()[name]):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    obs = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    actions = model.step(obs, deterministic=True)[0]
    np.testing.assert_array_equal(other.step(obs, deterministic=True)[0], actions)
    # By every other path: the registry (from the file's own settings), and learn() asked
    # for no steps, which loads without training.
    loaded = registry.load(path)
    assert isinstance(loaded, Model) and loaded.num_timesteps == 120
    np.testing.assert_array_equal(loaded.step(obs, deterministic=True)[0], actions)
    untrained = learn("mlp", "Pendulum-v1", seed=3, total_timesteps=0, load_path=path,
                      **dict(kw, twin_q=False))  # the file's architecture wins
    assert untrained.num_timesteps == 120 and len(untrained.critics) == 2
    np.testing.assert_array_equal(untrained.step(obs, deterministic=True)[0], actions)
    assert untrained.grad_steps == model.grad_steps > 0
    resumed = learn("mlp", "Pendulum-v1", seed=2, total_timesteps=20, load_path=path, **kw)
    assert resumed.num_timesteps == 140
    smaller = learn("mlp", "Pendulum-v1", total_timesteps=0, **dict(kw, layer_sizes=(8, 8)))
    with pytest.raises(RLBaseError, match="shape"):
        smaller.load(path)


def test_cli_rejects_discrete_actions(capsys):
    code, _, err = cli_in_process(capsys, "--alg=ddpg", "--env=CartPole-v1",
                                  "--num_timesteps=100")
    assert code == 2 and "Box" in err, err[-500:]
    assert "Traceback" not in err


# -- MPI ------------------------------------------------------------------------------------------
def _mpiexec(*args, timeout=300):
    if importlib.util.find_spec("mpi4py") is None or shutil.which("mpiexec") is None:
        pytest.skip("mpi4py / mpiexec not installed (pip install -e .[mpi])")
    worker = os.path.join(os.path.dirname(__file__), "mpi_ddpg_worker.py")
    return subprocess.run(["mpiexec", "-n", "2", sys.executable, worker, *args],
                          capture_output=True, text=True, timeout=timeout)


def test_mpi_workers_stay_identical(tmp_path):
    proc = _mpiexec(str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    load = lambda r, k: np.load(tmp_path / f"rank{r}_of_2_{k}.npy")  # noqa: E731
    # Each worker steps its own env (seeded apart); only the averaging keeps them equal.
    assert not np.array_equal(load(0, "first_obs"), load(1, "first_obs"))
    for key in ("weights", "obs_rms", "param_noise"):
        np.testing.assert_array_equal(load(0, key), load(1, key), err_msg=key)


@pytest.mark.slow
def test_mpi_worker_death_ends_the_job(tmp_path):
    proc = _mpiexec(str(tmp_path), "die", timeout=200)
    assert proc.returncode != 0
    assert "worker 1 dies on purpose" in proc.stdout + proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("td3", [False, True])
def test_pendulum_at_the_zoo_settings(td3):
    # rl-baselines3-zoo's Pendulum settings (rlbase/hyperparams/ddpg.yml classic_control,
    # the peer's anchor): at 2e4 steps the peer evaluates at about -134; the issue asks for
    # -200 or better.
    # Broken variant it was seen to fail on (2026-11-28, TD3's options): trained on zeroed
    # rewards, the same evaluation gives -1556.
    from rlbase.common.envs.make import make_vec_env

    kw = env_type_defaults("ddpg", "classic_control")
    kw.pop("num_env")
    if td3:
        kw.update(registry.ALIASES["td3"][1])
    model = learn(env=make_vec_env("Pendulum-v1", num_env=1, seed=0), seed=0,
                  total_timesteps=20000, **kw)
    mean, _ = evaluate_policy(model, make_vec_env("Pendulum-v1", num_env=1, seed=123), 10)
    assert mean > -200


# -- checkpoints and resume -------------------------------------------------------------------
CKPT = dict(SMALL, noise_type="adaptive-param_0.2,ou_0.2,normal_0.1", twin_q=True,
            target_noise=0.2, normalize_returns=True, learning_starts=20, buffer_size=100,
            param_noise_adaption_interval=5)


def _noise_state(model):
    meta, arrays = model.action_noise.state("n")
    return meta, {k: v.copy() for k, v in arrays.items()}


def _assert_same_state(model, again):
    groups = {**model.variable_groups(), "perturbed": model.perturbed_actor.weights}
    other = {**again.variable_groups(), "perturbed": again.perturbed_actor.weights}
    for name, group in groups.items():
        assert len(group) == len(other[name])
        for a, b in zip(group, other[name]):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    np.testing.assert_array_equal(model.obs_rms.mean, again.obs_rms.mean)
    assert model.obs_rms.count == again.obs_rms.count
    assert model.param_noise.current_stddev == again.param_noise.current_stddev
    for a, b in ((model.noise_rng, again.noise_rng), (model.learner_rng, again.learner_rng),
                 (model.loop_rng, again.loop_rng)):
        assert a.bit_generator.state == b.bit_generator.state
    noise_meta, noise_arrays = _noise_state(model)
    again_noise = _noise_state(again)
    assert again_noise[0] == noise_meta
    for key, value in noise_arrays.items():
        np.testing.assert_array_equal(value, again_noise[1][key], err_msg=key)
    buf_meta, buf_arrays = object_state(model.replay_buffer, "b")
    again_meta, again_arrays = object_state(again.replay_buffer, "b")
    assert again_meta == buf_meta
    for key, value in buf_arrays.items():
        np.testing.assert_array_equal(value, again_arrays[key], err_msg=key)


def test_resume_restores_everything_exactly(tmp_path):
    """Resuming with nothing left to train hands back exactly the state that was saved."""
    folder = str(tmp_path / "ckpt")
    # 150 steps: the buffer (100) has wrapped.
    model = learn("mlp", "Pendulum-v1", seed=3, total_timesteps=150, checkpoint_interval=50,
                  checkpoint_path=folder, **CKPT)
    assert [s for s, _ in list_checkpoints(folder)] == [100, 150]
    np_state, py_state = np.random.get_state()[1].copy(), random.getstate()
    again = learn("mlp", "Pendulum-v1", seed=99, total_timesteps=150, checkpoint_path=folder,
                  resume=True, **CKPT)
    assert again.num_timesteps == 150
    np.testing.assert_array_equal(np.random.get_state()[1], np_state)
    assert random.getstate() == py_state
    assert model.actor_optimizer.iterations.numpy() > 0
    assert model.param_noise.current_stddev != 0.2
    meta = object_state(again.replay_buffer, "b")[0]
    assert meta["size"] == 100 and meta["pos"] == 50
    _assert_same_state(model, again)

    # Continuing: the count goes on from the checkpoint, with the old transitions kept.
    more = learn("mlp", "Pendulum-v1", seed=5, total_timesteps=210, checkpoint_interval=50,
                 checkpoint_path=folder, resume=True, **CKPT)
    assert more.num_timesteps == 210
    checkpoints = dict(list_checkpoints(folder))
    assert max(checkpoints) == 210  # the run's end leaves one too
    meta = load_file(checkpoints[200])[0]
    assert (meta["num_timesteps"], meta["resume"]["loop"]["iterations"]) == (200, 200)
    with pytest.raises(RLBaseError, match="buffer size"):
        learn("mlp", "Pendulum-v1", total_timesteps=300, checkpoint_path=folder,
              resume=True, **dict(CKPT, buffer_size=50))


def test_resume_continues_exactly(tmp_path):
    """Stopped at a checkpoint and resumed, a run ends exactly where an uninterrupted one
    does: weights, optimizers, statistics, buffer, noise, perturbation and generators."""
    kw = dict(CKPT, normalize_observations=True, learning_starts=15)

    def run(total, folder, resume=False):
        env = VecMonitor(DummyVecEnv([Ramp]))
        return learn("mlp", env, seed=4, total_timesteps=total, checkpoint_interval=30,
                     checkpoint_path=str(tmp_path / folder), resume=resume, **kw)

    whole = run(90, "whole")
    run(30, "cut")
    resumed = run(90, "cut", resume=True)
    assert resumed.num_timesteps == whole.num_timesteps == 90
    _assert_same_state(whole, resumed)


def test_stop_request_writes_a_checkpoint_at_that_step(tmp_path):
    folder = str(tmp_path / "ckpt")

    def stop_at_21(model, info):
        if info["num_timesteps"] == 21:
            request_stop()  # as Ctrl-C does; seen at the end of this env step

    try:
        model = learn("mlp", "Pendulum-v1", seed=0, total_timesteps=1000,
                      checkpoint_path=folder, callback=stop_at_21, **CKPT)
    finally:
        clear_stop()
    assert model.num_timesteps == 21
    steps, path = list_checkpoints(folder)[-1]
    loop = load_file(path)[0]["resume"]["loop"]
    assert steps == 21 and loop["iterations"] == 21
    again = learn("mlp", "Pendulum-v1", seed=0, total_timesteps=60, checkpoint_path=folder,
                  resume=True, **CKPT)
    assert again.num_timesteps == 60 and again.replay_buffer.size == 60


def test_bad_checkpoint_options_and_non_finite_loss(tmp_path):
    with pytest.raises(RLBaseError, match="checkpoint_interval .* got -5"):
        learn("mlp", "Pendulum-v1", total_timesteps=10, checkpoint_interval=-5,
              checkpoint_path=str(tmp_path))
    with pytest.raises(NonFiniteError, match="critic_loss became (nan|inf) at iteration 22 "):
        learn("mlp", "Pendulum-v1", seed=0, total_timesteps=100, reward_scale=float("inf"),
              **dict(SMALL, learning_starts=20, noise_type="normal_0.1"))


@pytest.mark.slow
def test_cli_sigkill_then_resume(tmp_path):
    ckpt_dir, interval = tmp_path / "ckpt", 200

    def cli(*args):
        return ["--alg=ddpg", "--env=Pendulum-v1", "--no_progress", "--layer_sizes=(16,16)",
                "--batch_size=16", "--buffer_size=1000", "--learning_starts=100",
                "--train_freq=1", "--gradient_steps=1",
                f"--checkpoint_interval={interval}", f"--checkpoint_path={ckpt_dir}", *args]

    first = start_cli(cli("--num_timesteps=1e6", "--seed=0"), tmp_path / "first.txt")
    steps, latest = kill_after_checkpoints(first, ckpt_dir, tmp_path / "first.txt", 180)
    assert steps >= 2 * interval and steps % interval == 0
    total = steps + interval
    model_path = tmp_path / "final.zip"
    proc = subprocess.run([sys.executable, "-m", "rlbase.run",
                           *cli(f"--num_timesteps={total}", "--seed=1", "--resume",
                                f"--save_path={model_path}")],
                          capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"Resumed from {latest} at {steps} timesteps" in proc.stdout
    assert load_file(str(model_path))[0]["num_timesteps"] == total
    final = load_file(list_checkpoints(str(ckpt_dir))[-1][1])[0]["resume"]["loop"]
    assert final["iterations"] == total and final["model"]["replay"]["size"] == min(1000, total)
