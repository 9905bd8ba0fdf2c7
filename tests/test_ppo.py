"""PPO: GAE and the clipped losses against hand-computed values, learning, memory, saving."""

import identity_envs as ie
import numpy as np
import pytest
import tensorflow as tf

from rlbase.common.envs.make import make_vec_env
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.common.tf_util import gae_advantages
from rlbase.common.vec_env import DummyVecEnv, VecMonitor
from rlbase.ppo.model import clipped_surrogate, value_loss_fn
from rlbase.ppo.ppo import learn

QUIET = dict(log_interval=10**9)


def vec(make, n=4, seed=0):
    env = VecMonitor(DummyVecEnv([make] * n))
    env.seed(seed)
    return env


def test_gae_by_hand():
    # One env, 4 steps; the episode ends after step 1 (terminated, or truncated with
    # gamma * V(final) already in its reward: both cut the recursion there).
    g, lam = 0.9, 0.8
    rewards = [[1.0, 2.0, 3.0, 4.0]]
    values = [[0.5, 1.0, 1.5, 2.0]]
    dones = [[0.0, 1.0, 0.0, 0.0]]
    last = [3.0]
    d3 = 4.0 + g * 3.0 - 2.0           # 4.7
    d2 = 3.0 + g * 2.0 - 1.5           # 3.3
    d1 = 2.0 - 1.0                     # 1.0: no bootstrap past the end
    d0 = 1.0 + g * 1.0 - 0.5           # 1.4
    a3 = d3
    a2 = d2 + g * lam * a3             # 3.3 + 0.72 * 4.7
    a1 = d1
    a0 = d0 + g * lam * a1             # 1.4 + 0.72
    got = gae_advantages(tf.constant(rewards), tf.constant(values), tf.constant(dones),
                         tf.constant(last), g, lam).numpy()
    np.testing.assert_allclose(got, [[a0, a1, a2, a3]], rtol=1e-6)


def test_clipped_surrogate_by_hand():
    # ratios 1.5, 0.5, 1.1 with cliprange 0.2 and advantages +1, +2, -1
    old = np.zeros(3, np.float32)
    neglogp = -np.log(np.array([1.5, 0.5, 1.1], np.float32))
    adv = np.array([1.0, 2.0, -1.0], np.float32)
    loss, ratio, clipfrac = clipped_surrogate(tf.constant(neglogp), tf.constant(old),
                                              tf.constant(adv), tf.constant(0.2))
    # sample 0: max(-1.5, -1.2) = -1.2; sample 1: max(-1.0, -1.6) = -1.0;
    # sample 2: max(1.1, 1.1) = 1.1
    assert loss.numpy() == pytest.approx((-1.2 - 1.0 + 1.1) / 3, rel=1e-5)
    np.testing.assert_allclose(ratio.numpy(), [1.5, 0.5, 1.1], rtol=1e-5)
    assert clipfrac.numpy() == pytest.approx(2 / 3)


def test_clipped_value_loss_by_hand():
    vpred = tf.constant([1.0, 3.0])
    old = tf.constant([0.0, 2.9])
    returns = tf.constant([2.0, 2.0])
    # sample 0: unclipped err (1-2)^2=1, clipped v=0.2 -> (0.2-2)^2=3.24 -> 3.24
    # sample 1: unclipped (3-2)^2=1, clipped v=3.0 (within 0.2) -> 1
    assert value_loss_fn(vpred, old, returns, tf.constant(0.2)).numpy() == \
        pytest.approx(0.5 * (3.24 + 1.0) / 2, rel=1e-5)
    assert value_loss_fn(vpred, old, returns, None).numpy() == pytest.approx(0.5)


@pytest.mark.parametrize("make,steps,threshold", [
    (lambda: ie.DiscreteIdentityEnv(4), 6000, 18.0),
    (lambda: ie.MultiDiscreteIdentityEnv((3, 4)), 6000, 18.0),
    (lambda: ie.MultiBinaryIdentityEnv(3), 6000, 18.0),
    (lambda: ie.BoxIdentityEnv(1), 10000, -1.0),
], ids=["discrete", "multidiscrete", "multibinary", "box"])
def test_identity_learning(make, steps, threshold):
    model = learn("mlp", vec(make), total_timesteps=steps, seed=0, nsteps=64,
                  nminibatches=4, noptepochs=4, gamma=0.5, lr=3e-3, **QUIET)
    mean, _ = evaluate_policy(model, vec(make, 1, seed=100), n_eval_episodes=10)
    assert mean >= threshold


def test_lstm_remembers_and_mlp_cannot():
    make = lambda: ie.MemoryEnv(3)  # noqa: E731
    kwargs = dict(total_timesteps=10000, seed=0, nsteps=12, nminibatches=2, noptepochs=4,
                  lr=3e-3, gamma=0.9, **QUIET)
    lstm = learn("lstm", vec(make, 8), nlstm=32, **kwargs)
    mlp = learn("mlp", vec(make, 8), **kwargs)
    # Checked on seeds 0-3: the LSTM scores 1.0 every time. Without memory the best is 0.
    assert evaluate_policy(lstm, vec(make, 1, seed=100), 40)[0] >= 0.9
    assert evaluate_policy(mlp, vec(make, 1, seed=100), 100)[0] <= 0.5


def test_cartpole_reaches_475_by_1e5():
    env = make_vec_env("CartPole-v1", num_env=8, seed=0)
    model = learn("mlp", env, total_timesteps=100_000, seed=0, nsteps=32, nminibatches=1,
                  noptepochs=20, gamma=0.98, lam=0.8, lr=1e-3, ent_coef=0.0,
                  value_network="copy", **QUIET)
    mean, _ = evaluate_policy(model, make_vec_env("CartPole-v1", num_env=1, seed=123), 10)
    assert mean >= 475


def test_save_load_and_no_retracing(tmp_path):
    env = make_vec_env("Pendulum-v1", num_env=2, seed=0)
    model = learn("mlp", env, total_timesteps=512, seed=0, nsteps=64, nminibatches=4, **QUIET)
    assert model._train.function.experimental_get_tracing_count() == 1
    path = str(tmp_path / "ppo.zip")
    model.save(path)
    resumed = learn("mlp", env, total_timesteps=128, seed=1, nsteps=64, nminibatches=4,
                    load_path=path, **QUIET)
    assert resumed.num_timesteps == 512 + 128
    fresh = learn("mlp", env, total_timesteps=1, seed=5, nsteps=64, nminibatches=4, **QUIET)
    fresh.load(path)
    obs = np.random.default_rng(0).uniform(-1, 1, (16, 3)).astype(np.float32)
    np.testing.assert_allclose(fresh.step(obs, deterministic=True)[0],
                               model.step(obs, deterministic=True)[0], rtol=1e-6)
    np.testing.assert_allclose(fresh.value(obs), model.value(obs), rtol=1e-6)


@pytest.mark.parametrize("network", ["lstm", "lnlstm"])
def test_every_variable_trains_recurrent(network):
    env = make_vec_env("CartPole-v1", num_env=4, seed=0)
    model = learn(network, env, total_timesteps=1, seed=0, nsteps=8, nminibatches=2, nlstm=8,
                  ent_coef=0.01, **QUIET)
    before = [v.numpy().copy() for v in model.policy.trainable_variables]
    learn(network, env, total_timesteps=32, seed=0, nsteps=8, nminibatches=2, nlstm=8,
          ent_coef=0.01, model_fn=lambda *a, **k: model, **QUIET)
    after = [v.numpy() for v in model.policy.trainable_variables]
    assert before and all(not np.array_equal(a, b) for a, b in zip(after, before))


def test_bad_arguments_fail_before_training():
    env = make_vec_env("CartPole-v1", num_env=3, seed=0)
    with pytest.raises(RLBaseError, match="divisible by nminibatches"):
        learn("mlp", env, total_timesteps=100, nsteps=5, nminibatches=4)
    with pytest.raises(RLBaseError, match="must divide the number of envs"):
        learn("lstm", env, total_timesteps=100, nsteps=4, nminibatches=2)
    with pytest.raises(RLBaseError, match="cliprange must be > 0, got 0.0"):
        learn("mlp", env, total_timesteps=100, cliprange=0.0)


def test_normalization_statistics_save_with_the_model(tmp_path):
    from rlbase.common.vec_env import VecNormalize

    env = VecNormalize(make_vec_env("Pendulum-v1", num_env=2, seed=0))
    model = learn("mlp", env, total_timesteps=256, seed=0, nsteps=64, nminibatches=2, **QUIET)
    path = str(tmp_path / "ppo_norm.zip")
    model.save(path)
    other = VecNormalize(make_vec_env("Pendulum-v1", num_env=2, seed=1))
    assert not np.allclose(other.ob_rms.mean, env.ob_rms.mean)
    loaded = learn("mlp", other, total_timesteps=1, seed=0, nsteps=64, nminibatches=2, **QUIET)
    loaded.load(path)
    np.testing.assert_array_equal(other.ob_rms.mean, env.ob_rms.mean)
    np.testing.assert_array_equal(other.ob_rms.var, env.ob_rms.var)
    frozen = loaded.normalized_like_training(make_vec_env("Pendulum-v1", num_env=1, seed=3))
    assert isinstance(frozen, VecNormalize) and not frozen.training
    np.testing.assert_array_equal(frozen.ob_rms.mean, env.ob_rms.mean)


# target_kl=0.01 exercises everything None does, and the averaged stop flag too.
@pytest.mark.parametrize("target_kl", [pytest.param(None, marks=pytest.mark.slow), 0.01])
def test_mpi_workers_stay_identical(tmp_path, target_kl):
    """With target_kl the stop flag is averaged too (in the gradient's allreduce: a second,
    independent allreduce could run in another order on each worker)."""
    from process_util import two_worker_arrays

    extra = [] if target_kl is None else [str(target_kl)]
    rank0, rank1 = two_worker_arrays("mpi_ppo_worker.py", tmp_path, *extra)
    # Each rank trained on its own envs (seeded apart), so only gradient averaging keeps
    # the parameters equal.
    np.testing.assert_array_equal(rank0, rank1)


@pytest.mark.parametrize("rows_per_block", [4, 3])
def test_behaviour_policy_in_blocks_is_the_whole_pass(monkeypatch, rows_per_block):
    # A feed-forward policy on images recomputes its rollout's behaviour policy in blocks of
    # BEHAVIOUR_ROWS frames (memory); 2 envs x 5 steps = 10 rows: blocks of 4+4+2 or 3+3+3+1.
    import gymnasium as gym
    import tensorflow as tf

    from rlbase.common.families import actor_critic as on_policy_model
    from rlbase.ppo.config import PPOConfig
    from rlbase.ppo.model import build_model

    space = gym.spaces.Box(0, 255, (16, 16, 2), np.uint8)
    config = PPOConfig.build({"nsteps": 5, "nminibatches": 1}, 2)
    model = build_model(space, gym.spaces.Discrete(3), 2, "conv_only",
                        {"convs": [(4, 3, 2)], "pad": "SAME"}, config)
    rng = np.random.default_rng(0)
    obs = tf.constant(rng.integers(0, 256, (10, 16, 16, 2), dtype=np.uint8))
    state, starts = tf.zeros([10, 0]), tf.constant((rng.random(10) < 0.2).astype(np.float32))
    actions = tf.constant(rng.integers(0, 3, 10))
    whole = model.behaviour(obs, state, starts, actions)
    monkeypatch.setattr(on_policy_model, "BEHAVIOUR_ROWS", rows_per_block)
    seen, forward = [], model.policy.forward
    monkeypatch.setattr(model.policy, "forward", lambda o, *a: seen.append(o.shape[0]) or
                        forward(o, *a))
    blocks = tf.function(model.behaviour, autograph=False)(obs, state, starts, actions)
    assert seen and 10 not in seen  # traced once, for a block of the rollout
    for a, b in zip(whole, blocks):
        assert b.shape == (10,)
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)
