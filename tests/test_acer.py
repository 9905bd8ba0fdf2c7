"""ACER: Retrace and trust-region math, exact losses, truncation bootstraps recomputed at every
update, the optimizer, the sequence buffer, learning on identity envs, tracing, bad input and
the CLI. (Model files and checkpoints: test_acer_checkpoints.py.)"""

import os
import subprocess
import sys

import gymnasium as gym
import identity_envs as ie
import keras
import numpy as np
import pytest
import tensorflow as tf

from rlbase.acer.acer import learn
from rlbase.acer.buffer import Buffer, normalized
from rlbase.acer.config import ACERConfig
from rlbase.acer.model import AcerPolicy, Model, q_retrace, trust_region_adjust
from rlbase.acer.runner import Runner, Sequences
from rlbase.common.buffers.raw_replay import RawReplay
from rlbase.common.config import describe
from rlbase.common.envs.make import make_vec_env
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.common.vec_env import DummyVecEnv, VecFrameStack, VecMonitor, VecNormalize

QUIET = dict(log_interval=10**9)


def vec(make, n=4, seed=0):
    env = VecMonitor(DummyVecEnv([make] * n))
    env.seed(seed)
    return env


def identity_network():
    return keras.layers.Identity()


# -- the math ------------------------------------------------------------------------------

def test_retrace_targets_by_hand():
    # Env 0: 3 steps, the episode ends at step 1. gamma 0.9, bootstrap V(s_3) = 2.
    #   t=2: Qret = 3 + 0.9 * 2 = 4.8
    #   t=1: Qret = 2 (episode end: no bootstrap)
    #   t=0: Qret = 1 + 0.9 * (rho_1 (Qret_1 - Q_1) + V_1) = 1 + 0.9 * (1.0 * (2 - 1) + 0.8)
    #        = 2.62
    # Env 1: no end; rho_bar 0 cuts the trace to V: Qret_0 = 1 + 0.9 * V_1, ...
    rewards = np.array([[1, 2, 3], [1, 1, 1]], np.float32)
    dones = np.array([[0, 1, 0], [0, 0, 0]], np.float32)
    q_i = np.array([[0.5, 1.0, 1.5], [5, 5, 5]], np.float32)
    values = np.array([[0.4, 0.8, 1.2, 2.0], [1, 2, 3, 4]], np.float32)
    rho_bar = np.array([[0.5, 1.0, 0.25], [0, 0, 0]], np.float32)
    qret = q_retrace(rewards, dones, q_i, values, rho_bar, 0.9).numpy()
    np.testing.assert_allclose(qret, [[2.62, 2.0, 4.8], [2.8, 3.7, 4.6]], rtol=1e-6)


def test_trust_region_adjustment():
    k = np.array([[1.0, 0.0], [1.0, 1.0], [-2.0, 1.0]], np.float32)
    g = np.array([[3.0, 0.0], [0.2, 0.3], [-1.0, 0.5]], np.float32)
    z, k_dot_g, adj = (t.numpy() for t in trust_region_adjust(g, k, 1.0))
    # Row 0: k.g = 3 > 1, adj = (3 - 1) / |k|^2 = 2, z = g - 2k. Row 1: k.g = 0.5, inside.
    # Row 2: k.g = 2.5, adj = 1.5 / 5 = 0.3.
    np.testing.assert_allclose(k_dot_g, [3.0, 0.5, 2.5])
    np.testing.assert_allclose(adj, [2.0, 0.0, 0.3], rtol=1e-5)
    np.testing.assert_allclose(z, [[1.0, 0.0], [0.2, 0.3], [-0.4, 0.2]], rtol=1e-5)
    rng = np.random.default_rng(0)
    g = rng.normal(size=(500, 4)).astype(np.float32) * 3
    k = rng.normal(size=(500, 4)).astype(np.float32)
    z = trust_region_adjust(g, k, 0.5)[0].numpy()
    kz, kg = (k * z).sum(-1), (k * g).sum(-1)
    assert (kz <= 0.5 + 1e-4).all()  # the linearized KL bound holds for every sample
    inside = kg <= 0.5
    assert 50 < inside.sum() < 450
    np.testing.assert_array_equal(z[inside], g[inside])  # untouched inside the bound
    np.testing.assert_allclose(kz[~inside], 0.5, atol=1e-4)  # projected onto its edge
    # The change is along k only: the smallest one that satisfies the bound.
    d = z - g
    np.testing.assert_allclose(d[:, 0] * k[:, 1], d[:, 1] * k[:, 0], atol=1e-4)


def constant_model(num_envs=1, nsteps=2, q_slope=0.0, jit_compile=False, **kwargs):
    """Identity torso on a 1-d observation s: uniform pi and Q(s) = (1 + q_slope s,
    3 + q_slope s), so V(s) = 2 + q_slope s."""
    ob, ac = gym.spaces.Box(-1.0, 1.0, (1,), np.float32), gym.spaces.Discrete(2)
    policy, average = (AcerPolicy(ob, ac, identity_network) for _ in range(2))
    config = ACERConfig(**{"nsteps": nsteps, "gamma": 0.5, "buffer_size_per_env": 10,
                           "replay_start": 10, **kwargs})
    model = Model(policy, average, num_envs, config, jit_compile=jit_compile)
    policy.pd_head.dense.set_weights([np.zeros((1, 2), np.float32), np.zeros(2, np.float32)])
    set_q(model, q_slope)
    return model


def set_q(model, slope, bias=(1.0, 3.0)):
    model.policy.q_head.set_weights([np.full((1, 2), slope, np.float32),
                                     np.array(bias, np.float32)])
    model.calls.sync()


def sequences(nsteps=2, mus=None, truncated_at=None, final=0.8):
    """One env: observations linspace(-0.5, 0.5), actions 0, 1, ..., rewards 1; with
    ``truncated_at`` a time limit ends the episode at that step, in final observation
    ``final``."""
    obs = np.linspace(-0.5, 0.5, nsteps + 1, dtype=np.float32).reshape(1, -1, 1)
    mus = np.full((1, nsteps, 2), 0.5, np.float32) if mus is None else mus.reshape(1, -1, 2)
    dones, truncated = np.zeros((1, nsteps), np.float32), np.zeros((1, nsteps), np.float32)
    starts = np.zeros((1, nsteps + 1), np.float32)
    final_obs = np.zeros((0, 1), np.float32)
    if truncated_at is not None:
        dones[0, truncated_at] = truncated[0, truncated_at] = starts[0, truncated_at + 1] = 1
        final_obs = np.array([[final]], np.float32)
    return Sequences(obs, np.array([[0, 1] * (nsteps // 2)], np.int64),
                     np.ones((1, nsteps), np.float32), dones, mus, starts,
                     np.zeros((1, 0), np.float32), truncated, final_obs,
                     np.zeros((len(final_obs), 0), np.float32))


def stats_of(model, seq):
    return {k: v.numpy() for k, v in model.gradients(*model.batch(seq))[1].items()}


def test_losses_by_hand():
    model = constant_model()
    s = stats_of(model, sequences())
    # Retrace (gamma 0.5, rho 1): Qret_1 = 1 + 0.5 * 2 = 2; Qret_0 = 1 + 0.5 * (2 - 3 + 2)
    # = 1.5. Q_i = (1, 3). value_loss = mean(0.5 * (0.5^2, 1^2)) = 0.3125.
    assert s["value_loss"] == pytest.approx(0.3125, rel=1e-5)
    # Advantages Qret - V = (-0.5, 0); the truncated-weight loss = -mean(log(0.5) * adv).
    assert s["truncated_policy_loss"] == pytest.approx(np.log(0.5) / 4, rel=1e-4)
    assert s["bias_correction_loss"] == 0.0  # rho = 1 < c: nothing truncated
    assert s["policy_loss"] == pytest.approx(np.log(0.5) / 4, rel=1e-4)
    assert s["entropy_loss"] == pytest.approx(-np.log(2), rel=1e-4)  # SB3's sign
    assert s["explained_variance"] == pytest.approx(1 - 0.5625 / 0.0625, rel=1e-4)
    assert s["loss"] == pytest.approx(np.log(0.5) / 4 + 0.5 * 0.3125 - 0.01 * np.log(2),
                                      rel=1e-4)
    # Behaviour probabilities (0.9, 0.01) for actions 0, 1: rho = (5/9, 50). Action 1 is
    # truncated to c = 10 and bias-corrected: gain_bc = sum_a log f_a (Q_a - V)
    # relu(1 - c / rho_a) f_a over the step, only action 1 (rho 50) counts:
    # log(0.5) * (3 - 2) * 0.8 * 0.5.
    mus = np.array([[0.9, 0.1], [0.9, 0.01]], np.float32)
    s = stats_of(model, sequences(mus=mus))
    rho1 = 0.5 / (0.01 + 1e-6)
    bc_row1 = np.log(0.5) * 1.0 * (1 - 10 / rho1) * 0.5
    rho0 = 0.5 / (0.1 + 1e-6)  # step 0, action 1: rho 5 < c, no correction
    assert rho0 < 10
    assert s["bias_correction_loss"] == pytest.approx(-bc_row1 / 2, rel=1e-4)


def test_replayed_truncation_bootstraps_from_the_current_weights():
    # A time limit ends the episode at step 0, in the final observation 0.8 (the sequence
    # goes on from the reset observation 0). Collected while V(s) = 2: the bootstrap was
    # 0.5 * 2 = 1, so Qret_0 = 2, Q_0 = 1; Qret_1 = 1 + 0.5 V(0.5) = 2, Q_1 = 3:
    # value_loss = 0.5 * mean(1^2, 1^2) = 0.5.
    model = constant_model(replay_ratio=1)
    seq = sequences(truncated_at=0)
    assert stats_of(model, seq)["value_loss"] == pytest.approx(0.5, rel=1e-6)
    buffer = model.replay_buffer
    buffer.configure(DummyVecEnv([lambda: ie.EndsAtThree(True)]))
    buffer.put(seq)
    # Training moved the weights: now V(s) = 2 + s. Replayed, the truncation bootstraps
    # from V(0.8) = 2.8: Qret_0 = 1 + 0.5 * 2.8 = 2.4, Q_0 = Q(-0.5, 0) = 0.5;
    # Qret_1 = 1 + 0.5 * V(0.5) = 2.25, Q_1 = 3. value_loss = 0.25 * (1.9^2 + 0.75^2)
    # = 1.043125 (a bootstrap kept from collection would give 0.703125).
    set_q(model, 1.0)
    replayed = buffer.get(np.random.default_rng(0))
    np.testing.assert_array_equal(replayed.final_obs, np.float32([[0.8]]))
    assert stats_of(model, replayed)["value_loss"] == pytest.approx(1.043125, rel=1e-6)
    # The same number from the compiled training call (its statistics precede its step).
    assert model.train(replayed, 0.0)["value_loss"] == pytest.approx(1.043125, rel=1e-6)


def test_gamma_one_truncation_does_not_bootstrap():
    # gamma = 1: the truncated step's target is its reward alone (Qret_0 = 1 = Q_0), and
    # Qret_1 = 1 + V(0.5) = 3 = Q_1: no error. Bootstrapping would give Qret_0 = 1 + 2.
    model = constant_model(gamma=1.0)
    s = stats_of(model, sequences(truncated_at=0))
    assert s["value_loss"] == 0.0
    boot = model.truncation_bootstrap(*model.batch(sequences(truncated_at=0))[7:])
    np.testing.assert_array_equal(boot.numpy(), [[0.0, 0.0]])
    assert constant_model(gamma=0.5).truncation_bootstrap(
        *model.batch(sequences(truncated_at=0))[7:]).numpy().tolist() == [[1.0, 0.0]]


def test_rmsprop_is_tf1s():
    # The documented optimizer: the mean square starts at 1 and epsilon is inside the root,
    # so one step moves w by lr * g / sqrt(0.99 + 0.01 g^2 + eps) (eps 0.1 makes the
    # placement of epsilon visible; a mean square from 0 would step by about 10 * lr).
    model = constant_model(max_grad_norm=None, rms_epsilon=0.1, rms_alpha=0.99)
    seq = sequences(mus=np.array([[0.9, 0.1], [0.2, 0.8]], np.float32))
    variables = model.policy.trainable_variables
    before = [v.numpy().copy() for v in variables]
    grads = [g.numpy() for g in model.gradients(*model.batch(seq))[0]]
    model.train(seq, 0.01)
    for v, b, g in zip(variables, before, grads):
        expected = b - 0.01 * g / np.sqrt(0.99 + 0.01 * g**2 + 0.1)
        np.testing.assert_allclose(v.numpy(), expected, rtol=1e-5, atol=1e-7)
    assert any(np.abs(g).max() > 0.1 for g in grads)
    # ...and what the config's fields (the parameter table's source) and the page say.
    doc = {row["name"]: row["doc"] for row in describe(ACERConfig)}
    assert doc["rms_epsilon"].startswith("RMSProp epsilon, added inside the square root")
    assert doc["rms_alpha"].startswith("RMSProp decay of the mean square, which starts at 1")
    page = os.path.join(os.path.dirname(__file__), "..", "rlbase", "docs", "algorithms",
                        "acer.md")
    with open(page, encoding="utf-8") as f:
        assert "the mean square starts at 1 and `rms_epsilon` is added inside the square " \
            "root" in f.read()


def test_the_average_policy_moves_by_tau():
    # average <- (1 - tau) * average + tau * policy, after the policy's step.
    model = constant_model(tau=0.25, q_slope=0.5)
    for v in model.average.trainable_variables:  # an average away from the policy
        v.assign(v + 1.0)
    before = [v.numpy().copy() for v in model.average.trainable_variables]
    model.train(sequences(), 0.01)
    after = [v.numpy() for v in model.policy.trainable_variables]
    assert any(not np.allclose(a, b - 1.0) for a, b in zip(after, before))  # it stepped
    for avg, b, p in zip(model.average.trainable_variables, before, after):
        np.testing.assert_allclose(avg.numpy(), 0.75 * b + 0.25 * p, rtol=1e-6, atol=1e-7)


def test_deprecated_spellings_are_converted():
    cartpole = make_vec_env("CartPole-v1", num_env=1, seed=0)
    with pytest.warns(DeprecationWarning) as caught:
        model = learn("mlp", cartpole, seed=0, total_timesteps=5, nsteps=5, replay_ratio=0,
                      rprop_alpha=0.9, rprop_epsilon=1e-3, alpha=0.75, **QUIET)
    messages = {str(w.message) for w in caught if w.category is DeprecationWarning}
    assert {"acer: 'rprop_alpha' is deprecated, use 'rms_alpha'",
            "acer: 'rprop_epsilon' is deprecated, use 'rms_epsilon'",
            "acer: 'alpha' is deprecated, use 'tau' (the average's decay: tau = 1 - alpha)"} \
        <= messages
    assert all(w.filename == __file__ for w in caught if "acer:" in str(w.message))
    config = model.config
    assert (config.rms_alpha, config.rms_epsilon, config.tau) == (0.9, 1e-3, 0.25)
    assert (model.optimizer.rho, model.optimizer.epsilon, model.tau) == (0.9, 1e-3, 0.25)
    with pytest.warns(DeprecationWarning):
        assert ACERConfig.build({"alpha": 0.9}).tau == 1 - 0.9
    assert ACERConfig().tau == 0.01  # the reference's alpha=0.99
    with pytest.warns(DeprecationWarning), pytest.raises(RLBaseError, match="tau is given twice"):
        ACERConfig.build({"alpha": 0.9, "tau": 0.1})
    with pytest.raises(RLBaseError, match=r"tau must be in \[0, 1\], got 1.5"):
        learn("mlp", cartpole, total_timesteps=5, tau=1.5)


@pytest.mark.parametrize("trust_region", [False, True])
def test_gradient_through_the_probabilities_is_the_loss_gradient(trust_region):
    # Without a trust region (or inside it: a huge delta) the chain rule through f must give
    # exactly the gradient of the total loss.
    env = vec(lambda: ie.DiscreteIdentityEnv(3), n=2)
    policy, average = (AcerPolicy(env.observation_space, env.action_space, "mlp")
                       for _ in range(2))
    model = Model(policy, average, 2, ACERConfig(nsteps=4, trust_region=trust_region,
                                                 delta=1e9))
    keras.utils.set_random_seed(1)
    for v in average.trainable_variables:  # a different average policy
        v.assign(v + tf.random.normal(v.shape, stddev=0.1))
    seq = Runner(env, model, 4).run()
    with tf.GradientTape() as tape:
        grads, stats = model.gradients(*model.batch(seq))
    direct = tape.gradient(stats["loss"], policy.trainable_variables)
    for a, b in zip(grads, direct):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6)


def test_trust_region_shrinks_the_step_towards_the_average():
    strict = constant_model(delta=1e-3)
    loose = constant_model(trust_region=False)
    for model in (strict, loose):  # an average policy that prefers action 0
        model.average.pd_head.dense.set_weights([np.zeros((1, 2), np.float32),
                                                 np.array([1.0, -1.0], np.float32)])
    g_strict, g_loose = stats_of(strict, sequences()), stats_of(loose, sequences())
    assert g_strict["avg_norm_adj"] > 0 and g_loose["avg_norm_adj"] == 0
    assert g_strict["policy_grad_norm"] < g_loose["policy_grad_norm"]


def test_runner_records_truncations_and_the_model_bootstraps_them():
    env = VecMonitor(DummyVecEnv([lambda: ie.EndsAtThree(False), lambda: ie.EndsAtThree(True)]))
    model = constant_model(num_envs=2, nsteps=4, gamma=0.9)
    set_q(model, 1.0, bias=(0.0, 0.0))  # Q(s, .) = (s, s) so V(s) = s
    seq = Runner(env, model, nsteps=4).run()
    # Rewards stay as the env gave them; env 1 was cut at step 2 in state 0.3 (its final
    # observation, not the reset one); env 0 terminated there.
    np.testing.assert_array_equal(seq.rewards, np.ones((2, 4)))
    np.testing.assert_array_equal(seq.dones, [[0, 0, 1, 0], [0, 0, 1, 0]])
    np.testing.assert_array_equal(seq.truncated, [[0, 0, 0, 0], [0, 0, 1, 0]])
    np.testing.assert_allclose(seq.final_obs, [[0.3]], atol=1e-7)
    np.testing.assert_array_equal(seq.starts, [[1, 0, 0, 1, 0]] * 2)
    np.testing.assert_allclose(seq.obs[:, :, 0], [[0, .1, .2, 0, .1]] * 2, atol=1e-7)
    np.testing.assert_allclose(seq.mus, 0.5)
    # The training call adds gamma * V(0.3) = 0.27 there, and only there.
    boot = model.truncation_bootstrap(*model.batch(seq)[7:]).numpy()
    np.testing.assert_allclose(boot, [[0, 0, 0, 0], [0, 0, 0.27, 0]], rtol=1e-6)


# -- the buffer ----------------------------------------------------------------------------

class CountingImages(gym.Env):
    """uint8 2x2x1 frames showing 10 * env + t (t counts all steps); episodes of ``length``
    steps, ended by termination or (``truncate``) by a time limit. Reward t."""

    observation_space = gym.spaces.Box(0, 255, (2, 2, 1), np.uint8)
    action_space = gym.spaces.Discrete(3)

    def __init__(self, env_index, length, truncate=False):
        self.base, self.length, self.truncate = 10 * env_index, length, truncate
        self.t = self.in_episode = 0

    def _obs(self):
        return np.full((2, 2, 1), self.base + self.t % 10, np.uint8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.in_episode = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        self.in_episode += 1
        ends = self.in_episode == self.length
        return self._obs(), float(self.t), ends and not self.truncate, \
            ends and self.truncate, {}


class RandomModel:
    """Acts uniformly with random behaviour probabilities; its state counts steps."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def initial_states(self, n):
        return np.zeros((n, 1), np.float32)

    def act_with_probabilities(self, obs, state, mask):
        n = len(obs)
        mus = self.rng.dirichlet(np.ones(3), size=n).astype(np.float32)
        return self.rng.integers(0, 3, n), mus, state + 1


def finals_of(seq, env):
    rows = np.nonzero(seq.truncated)[0] == env
    return seq.final_obs[rows], seq.final_state[rows]


def buffer_for(env, nsteps, size, state_size=1):
    buffer = Buffer(env.observation_space, env.action_space, env.num_envs, nsteps, size,
                    state_size)
    buffer.configure(env)
    return buffer


@pytest.mark.parametrize("nstack", [1, 3])
def test_buffer_returns_whole_aligned_sequences(nstack):
    makers = [lambda: CountingImages(0, 3), lambda: CountingImages(1, 5, truncate=True),
              lambda: CountingImages(2, 2, truncate=True)]
    env = VecFrameStack(DummyVecEnv(makers), nstack) if nstack > 1 else DummyVecEnv(makers)
    runner = Runner(env, RandomModel(), nsteps=4)
    buffer = buffer_for(env, nsteps=4, size=4 * 5)  # keeps the last 5 rollouts
    assert buffer.frames.dtype == np.uint8 and buffer.frames.shape[-1] == 1
    put = []
    for _ in range(8):
        seq = runner.run()
        put.append(seq)
        buffer.put(seq)
    assert buffer.num_in_buffer == 5 and buffer.has_atleast(20) and not buffer.has_atleast(24)
    kept = put[3:]
    assert any(s.dones.any() and (s.starts[:, 1:] == 1).any() for s in kept)
    assert len(buffer.final_frames) == sum(int(s.truncated.sum()) for s in kept)
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(30):
        got = buffer.get(rng)
        assert got.obs.dtype == got.final_obs.dtype == np.uint8
        for e in range(3):
            matches = [i for i, s in enumerate(kept) if np.array_equal(s.obs[e], got.obs[e])
                       and np.array_equal(s.actions[e], got.actions[e])
                       and np.array_equal(s.rewards[e], got.rewards[e])
                       and np.array_equal(s.dones[e], got.dones[e])
                       and np.array_equal(s.truncated[e], got.truncated[e])
                       and np.array_equal(s.mus[e], got.mus[e])
                       and np.array_equal(s.starts[e], got.starts[e])
                       and np.array_equal(s.state[e], got.state[e])
                       and all(np.array_equal(a, b) for a, b in zip(finals_of(s, e),
                                                                    finals_of(got, e)))]
            assert len(matches) == 1, f"env {e}: no stored sequence matches"
            seen.add((e, matches[0]))
    assert len(seen) >= 12  # sampling reaches most of the stored sequences


def test_buffer_rebuilds_stacks_across_episode_starts():
    env = VecFrameStack(DummyVecEnv([lambda: CountingImages(0, 2, truncate=True)]), 3)
    seq = Runner(env, RandomModel(), nsteps=5).run()
    buffer = buffer_for(env, nsteps=5, size=5)
    buffer.put(seq)
    # Episode of 2 steps: obs 0 starts, obs 2 and 4 start again, their older frames are 0.
    np.testing.assert_array_equal(seq.starts[0], [1, 0, 1, 0, 1, 0])
    np.testing.assert_array_equal(seq.obs[0, :, 0, 0], [[0, 0, 0], [0, 0, 1], [0, 0, 2],
                                                        [0, 2, 3], [0, 0, 4], [0, 4, 5]])
    # The time limit cut the episodes at steps 1 and 3: their own last stacks.
    np.testing.assert_array_equal(seq.final_obs[:, 0, 0], [[0, 1, 2], [2, 3, 4]])
    got = buffer.get(np.random.default_rng(0))
    np.testing.assert_array_equal(got.obs, seq.obs)
    np.testing.assert_array_equal(got.final_obs, seq.final_obs)


def test_frame_stack_above_a_normalization_of_observations_is_refused_with_replay():
    makers = [lambda: CountingImages(0, 3, truncate=True)]
    with pytest.raises(RLBaseError, match="VecNormalize.VecFrameStack.venv, n..") as err:
        learn("mlp", VecFrameStack(VecNormalize(DummyVecEnv(makers)), 2), total_timesteps=0,
              nsteps=4, buffer_size_per_env=8, replay_start=4, **QUIET)
    assert "\n" not in str(err.value)
    # On-policy ACER keeps no buffer: any order.
    model = learn("mlp", VecFrameStack(VecNormalize(DummyVecEnv(makers)), 2),
                  total_timesteps=4, nsteps=4, replay_ratio=0, **QUIET)
    assert model.num_timesteps == 4


def normalized_by_hand(stats, obs, rewards):
    rms = stats.ob_rms
    obs = np.clip((obs - rms.mean) / np.sqrt(rms.var + stats.epsilon), -10, 10)
    return obs, np.clip(rewards / np.sqrt(stats.ret_rms.var + stats.epsilon), -10, 10)


@pytest.mark.parametrize("nstack", [1, 2])
def test_buffer_keeps_raw_rollouts_and_replays_them_normalized_now(nstack):
    makers = [lambda: CountingImages(0, 3, truncate=True), lambda: CountingImages(1, 2)]

    def stacked(venv):
        return VecFrameStack(venv, nstack) if nstack > 1 else venv

    env = VecNormalize(stacked(DummyVecEnv(makers)))
    twin = stacked(DummyVecEnv(makers))  # the same raw data, unnormalized
    raw = RawReplay(env)
    runner = Runner(env, RandomModel(), nsteps=4, raw=raw)
    twin_runner = Runner(twin, RandomModel(), nsteps=4)
    buffer = buffer_for(env, nsteps=4, size=4)
    assert buffer.nstack == nstack and buffer.frames.dtype == np.uint8  # raw images
    seq, expected = runner.run(), twin_runner.run()
    assert seq.raw is not None and seq.raw.final_obs.dtype == np.uint8
    for name in ("obs", "rewards", "final_obs", "actions", "mus", "dones", "starts"):
        np.testing.assert_array_equal(getattr(seq.raw, name), getattr(expected, name))
    assert seq.final_obs.dtype == np.float32 and len(seq.final_obs) == 1
    buffer.put(seq.raw)
    np.testing.assert_array_equal(buffer.rewards, expected.rewards[None])  # raw: t
    for _ in range(3):
        runner.run()  # the statistics move on
    got = normalized(buffer.get(np.random.default_rng(0)), raw)
    obs, rewards = normalized_by_hand(env.stats, expected.obs, expected.rewards)
    final_obs, _ = normalized_by_hand(env.stats, expected.final_obs, expected.rewards)
    np.testing.assert_allclose(got.obs, obs, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got.rewards, rewards, rtol=1e-6)
    np.testing.assert_allclose(got.final_obs, final_obs, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got.mus, expected.mus)  # the behaviour policy's, as taken
    assert not np.allclose(got.obs, seq.obs)  # not the statistics of collection


@pytest.mark.parametrize("nstack", [1, 2])
def test_learn_stores_raw_rollouts_behind_vecnormalize(nstack):
    makers = [lambda: CountingImages(0, 3, truncate=True), lambda: CountingImages(1, 2)]
    venv = DummyVecEnv(makers)
    env = VecNormalize(VecFrameStack(venv, nstack) if nstack > 1 else venv)
    model = learn("mlp", env, seed=0, total_timesteps=24, nsteps=4, buffer_size_per_env=8,
                  replay_start=4, **QUIET)
    buffer = model.replay_buffer
    assert buffer.num_in_buffer == 2 and buffer.nstack == nstack
    # Three rollouts in a ring of two: slot 0 holds the third (observations at t = 8..12),
    # slot 1 the second (t = 4..8), raw: frames 10 * env + t % 10, rewards t + 1.
    assert buffer.frames.dtype == np.uint8
    frames = np.array([[8, 9, 0, 1, 2], [4, 5, 6, 7, 8]])
    np.testing.assert_array_equal(buffer.frames[:, :, :, 0, 0, 0],
                                  np.stack([frames, 10 + frames], axis=1))
    rewards = np.array([[9, 10, 11, 12], [5, 6, 7, 8]])
    np.testing.assert_array_equal(buffer.rewards, np.stack([rewards] * 2, axis=1))


# -- learning ------------------------------------------------------------------------------

@pytest.mark.parametrize("replay_ratio", [0, 4])
def test_identity_learning(replay_ratio):
    # Random play scores 5 of 20 (Discrete(4)); gamma 0.5 keeps the return's variance low.
    # Seeds 0-5 all evaluate at 20, on-policy (replay_ratio 0) and with replay.
    make = lambda: ie.DiscreteIdentityEnv(4)  # noqa: E731
    model = learn("mlp", vec(make), seed=0, total_timesteps=6000, nsteps=5, gamma=0.5,
                  lr=3e-3, replay_ratio=replay_ratio, replay_start=100, buffer_size_per_env=1000,
                  **QUIET)
    mean, _ = evaluate_policy(model, vec(make, 1, seed=100), n_eval_episodes=10)
    assert mean >= 0.9 * 20


class ObsSpaceEnv(gym.Env):
    """Observations from ``space``; action 1 earns 1. Episodes of ``length`` steps, cut by a
    time limit when ``truncate``."""

    action_space = gym.spaces.Discrete(2)

    def __init__(self, space, length=10, truncate=False):
        self.observation_space = space
        self.length, self.truncate = length, truncate
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.t += 1
        ends = self.t == self.length
        return self.observation_space.sample(), float(action == 1), \
            ends and not self.truncate, ends and self.truncate, {}


@pytest.mark.parametrize("space,network,kwargs", [
    (gym.spaces.Box(-1, 1, (3,), np.float32), "mlp", {"value_network": "copy"}),
    (gym.spaces.MultiDiscrete([3, 4]), "mlp", {}),
    (gym.spaces.MultiBinary(3), "lstm", {"nlstm": 8}),
    (gym.spaces.Box(0, 255, (12, 12, 1), np.uint8), "conv_only",
     {"convs": [(4, 3, 1)]}),
], ids=["box", "multidiscrete", "multibinary-lstm", "image-framestack"])
def test_every_variable_trains_without_retracing(space, network, kwargs, monkeypatch):
    monkeypatch.setenv("RLBASE_NUMPY_ACT", "0")  # also trace the TF act path
    # Env 0 ends by termination every 10 steps, env 1 by a time limit every 2: batches
    # hold 0 to 3 truncations (the bootstrap inputs change size, the call does not retrace).
    env = VecMonitor(DummyVecEnv([lambda: ObsSpaceEnv(space),
                                  lambda: ObsSpaceEnv(space, 2, truncate=True)]))
    if space.dtype == np.uint8:
        env = VecFrameStack(env, 2)
    seen = []
    model = learn(network, env, seed=0, total_timesteps=5 * 2 * 3, nsteps=5, replay_ratio=2,
                  replay_start=5, buffer_size_per_env=50, lr=1e-2,
                  callback=lambda m, info: seen.append(info), **kwargs, **QUIET)
    assert sum(info["replay_updates"] for info in seen) > 0
    assert {"policy_loss", "value_loss", "entropy_loss", "learning_rate",
            "bias_correction_loss", "avg_norm_k"} <= set(seen[0])
    variables = model.trainable_variables()  # the policy's and the average's
    assert len(variables) > len(model.policy.trainable_variables)
    before = [v.numpy().copy() for v in variables]
    model.train(Runner(env, model, 5).run(), 1e-2)  # one update
    unchanged = [v.path for v, b in zip(variables, before) if np.array_equal(v.numpy(), b)]
    assert not unchanged, f"variables one update does not change: {unchanged}"
    for _ in range(3):  # replayed batches go through the same compiled call
        model.train(model.replay_buffer.get(model.replay_rng), 1e-2)
    assert model._train.function.experimental_get_tracing_count() == 1
    assert model._act.function.experimental_get_tracing_count() == 1


def test_act_with_probabilities_and_step():
    env = vec(lambda: ie.DiscreteIdentityEnv(4), n=2)
    model = learn("mlp", env, seed=0, total_timesteps=200, nsteps=5, replay_start=20,
                  buffer_size_per_env=100, **QUIET)
    assert model.calls.actor is not None
    obs, state, mask = np.arange(4), model.initial_states(4), np.zeros(4, np.float32)
    actions, mus, _ = model.act_with_probabilities(obs, state, mask)
    logits = model.policy.forward(obs, state, mask)[0]
    np.testing.assert_allclose(mus, tf.nn.softmax(logits).numpy(), rtol=1e-5, atol=1e-6)
    assert actions.shape == (4,)
    # step() is every actor-critic's: (actions, values, state, neglogp).
    actions, values, _, neglogp = model.step(obs, deterministic=True)
    np.testing.assert_array_equal(actions, np.argmax(mus, axis=1))
    np.testing.assert_allclose(neglogp, -np.log(mus.max(axis=1)), rtol=1e-4)
    np.testing.assert_allclose(values, model.value(obs), rtol=1e-6)


def test_bad_input():
    with pytest.raises(RLBaseError, match="Discrete action space, got Box"):
        learn("mlp", make_vec_env("Pendulum-v1", num_env=1, seed=0), total_timesteps=10)
    cartpole = make_vec_env("CartPole-v1", num_env=1, seed=0)
    with pytest.raises(RLBaseError,
                       match="replay_start=2000 is larger than buffer_size_per_env=1000"):
        learn("mlp", cartpole, total_timesteps=10, buffer_size_per_env=1000, replay_start=2000)
    with pytest.raises(RLBaseError, match="lrschedule|schedule"):
        learn("mlp", cartpole, total_timesteps=10, lrschedule="sideways")
    with pytest.raises(RLBaseError, match="replay_ratio"):
        learn("mlp", cartpole, total_timesteps=10, replay_ratio=-1)
    with pytest.raises(RLBaseError, match="buffer_size_per_env=5 holds no sequence of nsteps=20"):
        learn("mlp", cartpole, total_timesteps=10, buffer_size_per_env=5, replay_start=5)
    # Baselines' name for the buffer's size, counted per env as Baselines did.
    with pytest.warns(DeprecationWarning, match="'buffer_size' is deprecated, use "
                                                r"'buffer_size_per_env' \(counted per env"):
        config = ACERConfig.build({"buffer_size": 123, "replay_start": 100})
    assert config.buffer_size_per_env == 123
    # On-policy ACER needs no buffer, so its size is not checked.
    model = learn("mlp", cartpole, total_timesteps=10, nsteps=5, replay_ratio=0,
                  buffer_size_per_env=1, replay_start=2000, **QUIET)
    assert model.replay_buffer is None and model.num_timesteps == 10


@pytest.mark.slow  # three subprocesses that each start TensorFlow
def test_cli_trains_saves_loads_and_plays(tmp_path):
    path = str(tmp_path / "acer.zip")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    cmd = [sys.executable, "-m", "rlbase.run", "--alg=acer", "--env=CartPole-v1", "--seed=0"]
    proc = subprocess.run([*cmd, "--num_timesteps=800", f"--save_path={path}",
                           "--replay_start=100"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "train/bias_correction_loss" in proc.stdout and "train/value_loss" in proc.stdout
    assert "train/replay_updates" in proc.stdout and "rollout/ep_rew_mean" in proc.stdout
    proc = subprocess.run([*cmd, "--num_timesteps=1", f"--load_path={path}", "--play",
                           "--play_episodes=1"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "mean return over 1 episodes" in proc.stdout
    proc = subprocess.run([*cmd, "--env=Pendulum-v1", "--num_timesteps=10"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2 and "Discrete action space" in proc.stderr


@pytest.mark.slow  # XLA compiles the update: ~10 s
def test_jit_and_graph_updates_agree():
    stats = []
    for jit in (False, True):
        model = constant_model(jit_compile=jit, q_slope=0.5)
        keras.utils.set_random_seed(0)
        for v in model.policy.trainable_variables:
            v.assign(tf.random.normal(v.shape, stddev=0.5))
        stats.append([model.train(sequences(truncated_at=t), 1e-2) for t in (None, 0, 1)])
    for a, b in zip(*stats):
        for key in ("loss", "value_loss", "policy_loss", "entropy_loss", "avg_norm_adj"):
            assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-6)


def test_learns_cartpole_with_vec_normalize():
    # --normalize with the classic_control defaults: replay normalizes raw rollouts with the
    # current statistics. Seed 0 evaluates at 500 (10 deterministic episodes) after 5e4 steps.
    env = VecNormalize(make_vec_env("CartPole-v1", num_env=8, seed=0))
    model = learn("mlp", env, seed=0, total_timesteps=50000, lr=0.002, buffer_size_per_env=5000,
                  replay_start=1000, **QUIET)
    eval_env = model.normalized_like_training(make_vec_env("CartPole-v1", num_env=1, seed=100))
    mean, _ = evaluate_policy(model, eval_env, n_eval_episodes=10)
    assert mean >= 475


def test_resuming_an_older_checkpoint_behind_vecnormalize_is_refused(tmp_path, monkeypatch):
    # An older rlbase's ACER checkpoint holds rollouts normalized when collected: read as raw
    # ones they would be normalized twice, so the resume is refused in one line.
    from rlbase.common.io.checkpoint import object_state

    def make():
        return VecNormalize(DummyVecEnv([lambda: CountingImages(0, 3, truncate=True)]))

    kw = dict(seed=0, nsteps=4, buffer_size_per_env=8, replay_start=4, checkpoint_interval=8,
              checkpoint_path=str(tmp_path), **QUIET)
    monkeypatch.setattr(RawReplay, "buffer_state",
                        lambda self, buffer: object_state(buffer, "replay"))  # the old writer
    learn("mlp", make(), total_timesteps=8, **kw)
    monkeypatch.undo()
    with pytest.raises(RLBaseError, match="older rlbase") as info:
        learn("mlp", make(), total_timesteps=16, resume=True, **kw)
    assert "\n" not in str(info.value)
