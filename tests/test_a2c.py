"""A2C: learning on identity envs and CartPole, truncation bootstrapping, saving, tracing."""

import identity_envs as ie
import keras
import numpy as np
import pytest
from legacy_format import save_model

from rlbase.a2c.a2c import Model, learn
from rlbase.a2c.config import A2CConfig
from rlbase.common.envs.make import make_vec_env
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.common.loops.rollout import RolloutRunner
from rlbase.common.networks.policies import build_policy
from rlbase.common.vec_env import DummyVecEnv, VecMonitor

QUIET = dict(log_interval=10**9)


def vec(make, n=4, seed=0):
    env = VecMonitor(DummyVecEnv([make] * n))
    env.seed(seed)
    return env


# The identity envs have no temporal structure, so a short horizon (gamma 0.5) keeps the
# return's variance from drowning the one-step signal. Random play scores 5 (Discrete(4)),
# about 5.8 (MultiDiscrete(3, 4)) and 10 (MultiBinary(3)) of the best 20.
@pytest.mark.parametrize("make,steps", [
    (lambda: ie.DiscreteIdentityEnv(4), 5000),
    (lambda: ie.MultiDiscreteIdentityEnv((3, 4)), 10000),
    (lambda: ie.MultiBinaryIdentityEnv(3), 10000),
], ids=["discrete", "multidiscrete", "multibinary"])
def test_identity_learning(make, steps):
    model = learn("mlp", vec(make), seed=0, total_timesteps=steps, gamma=0.5, lr=3e-3, **QUIET)
    mean, _ = evaluate_policy(model, vec(make, 1, seed=100), n_eval_episodes=10)
    assert mean >= 0.9 * 20


def test_box_identity_learning():
    make = lambda: ie.BoxIdentityEnv(1)  # noqa: E731
    env = vec(make)
    policy = build_policy(env.observation_space, env.action_space, "mlp")
    untrained = Model(policy, 4, A2CConfig(nsteps=5, gamma=0.5))
    trained = learn("mlp", env, total_timesteps=10000, seed=0, gamma=0.5, lr=5e-3, **QUIET)
    before, _ = evaluate_policy(untrained, vec(make, 1, seed=100), 10)
    after, _ = evaluate_policy(trained, vec(make, 1, seed=100), 10)
    assert before < -5.0  # an action near 0 scores about -20/3: far below the threshold
    assert after > -1.0   # mean squared error under 0.05 per step (seeds 0-4: -0.06..-0.27)


def test_cartpole_reaches_475():
    # Checked on seeds 0-4: every one evaluates at 500 after 2e5 steps (see the closing note).
    env = make_vec_env("CartPole-v1", num_env=8, seed=0)
    model = learn("mlp", env, seed=0, total_timesteps=200_000, ent_coef=0.0,
                  value_network="copy", lrschedule="constant", **QUIET)
    mean, _ = evaluate_policy(model, make_vec_env("CartPole-v1", num_env=1, seed=123), 10)
    assert mean >= 475


def identity_network():
    layer = keras.layers.Identity()
    return layer


def test_runner_bootstraps_on_truncation_only():
    env = VecMonitor(DummyVecEnv([lambda: ie.EndsAtThree(False), lambda: ie.EndsAtThree(True)]))
    policy = build_policy(env.observation_space, env.action_space, identity_network)
    policy.value_head.set_weights([np.ones((1, 1), np.float32), np.zeros(1, np.float32)])
    model = Model(policy, num_envs=2, config=A2CConfig(
        nsteps=4, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5, rms_alpha=0.99,
        rms_epsilon=1e-5, gamma=0.9))
    rollout = RolloutRunner(env, model, nsteps=4, gamma=0.9).run()
    # V(obs) = obs. Env 1 is cut at step 3 in state 0.3: its reward becomes 1 + 0.9 * 0.3,
    # from the final observation, not from the reset one (0). Env 0 terminated: no bootstrap.
    np.testing.assert_allclose(rollout.rewards[0], [1, 1, 1, 1])
    np.testing.assert_allclose(rollout.rewards[1], [1, 1, 1 + 0.9 * 0.3, 1], rtol=1e-6)
    np.testing.assert_array_equal(rollout.dones, [[0, 0, 1, 0], [0, 0, 1, 0]])
    np.testing.assert_array_equal(rollout.starts.reshape(2, 4), [[1, 0, 0, 1], [1, 0, 0, 1]])
    np.testing.assert_allclose(rollout.obs.reshape(2, 4), [[0, .1, .2, 0], [0, .1, .2, 0]],
                               atol=1e-7)
    # With gamma = 1 a bootstrapped truncation would be an infinite return: it ends the
    # return like a termination (rlbase.common.buffers.transitions).
    rollout = RolloutRunner(env, model, nsteps=4, gamma=1.0).run()
    np.testing.assert_allclose(rollout.rewards, [[1, 1, 1, 1], [1, 1, 1, 1]])


def test_a2c_lam_one_is_n_step_returns_and_gae_otherwise():
    import tensorflow as tf

    env = VecMonitor(DummyVecEnv([lambda: ie.EndsAtThree(True)]))
    policy = build_policy(env.observation_space, env.action_space, identity_network)
    policy.value_head.set_weights([np.ones((1, 1), np.float32), np.zeros(1, np.float32)])
    rewards = tf.constant([[1.0, 1.0, 1.0]])
    dones = tf.constant([[0.0, 0.0, 0.0]])
    values = tf.constant([0.0, 0.1, 0.2])
    last = tf.constant([0.3])
    gamma, lam = 0.9, 0.5
    n_step = Model(policy, 1, A2CConfig(nsteps=3, ent_coef=0.0, gamma=gamma))._returns(
        rewards, dones, values, last).numpy()
    np.testing.assert_allclose(n_step, [1 + .9 + .81 + .729 * .3, 1 + .9 + .81 * .3,
                                        1 + .9 * .3], rtol=1e-6)
    gae = Model(policy, 1, A2CConfig(nsteps=3, ent_coef=0.0, gamma=gamma, lam=lam))._returns(
        rewards, dones, values, last).numpy()
    v = [0.0, 0.1, 0.2, 0.3]
    deltas = [1 + gamma * v[t + 1] - v[t] for t in range(3)]
    adv = [0.0, 0.0, deltas[2]]
    adv[1] = deltas[1] + gamma * lam * adv[2]
    adv[0] = deltas[0] + gamma * lam * adv[1]
    np.testing.assert_allclose(gae, np.array(adv) + v[:3], rtol=1e-6)


@pytest.mark.parametrize("env_id,network,kwargs,numpy_act", [
    ("CartPole-v1", "mlp", {}, "1"),
    ("CartPole-v1", "mlp", {}, "0"),
    ("CartPole-v1", "mlp", {"value_network": "copy"}, "1"),
    ("Pendulum-v1", "mlp", {}, "1"),
    ("Pendulum-v1", "mlp", {}, "0"),
    ("CartPole-v1", "lstm", {"nlstm": 16}, "1"),
])
def test_every_variable_trains_and_no_retracing(env_id, network, kwargs, numpy_act,
                                                 monkeypatch):
    monkeypatch.setenv("RLBASE_NUMPY_ACT", numpy_act)
    env = make_vec_env(env_id, num_env=2, seed=0)
    model = learn(network, env, seed=0, total_timesteps=10, nsteps=5, **kwargs, **QUIET)
    variables = model.policy.trainable_variables
    assert variables, "the policy has no trainable variables"
    before = [v.numpy().copy() for v in variables]
    runner = RolloutRunner(env, model, nsteps=5)
    stats, runner.pending = model.train(runner.run(), 7e-4)  # one update
    unchanged = [v.path for v, b in zip(variables, before) if np.array_equal(v.numpy(), b)]
    assert not unchanged, f"variables that never train: {unchanged}"
    assert model._train.function.experimental_get_tracing_count() == 1
    assert (model.calls.actor is None) == (numpy_act == "0" or network == "lstm")
    if model.calls.actor is None:  # acting went through the compiled TF call
        assert model.calls.step_fn.function.experimental_get_tracing_count() == 1
    else:  # the numpy mirror followed the updates
        np.testing.assert_allclose(model.calls.actor.act(runner.obs, deterministic=True),
                                   model.step(runner.obs, deterministic=True)[0],
                                   rtol=1e-4, atol=1e-4)
    assert np.isfinite(list(stats.values())).all()


def test_jit_and_graph_updates_agree():
    losses = []
    for jit in (False, True):
        env = make_vec_env("CartPole-v1", num_env=2, seed=0)
        policy = build_policy(env.observation_space, env.action_space, "mlp")
        keras.utils.set_random_seed(0)
        for v in policy.trainable_variables:
            v.assign(np.full(v.shape, 0.05, np.float32))
        model = Model(policy, 2, A2CConfig(nsteps=5), jit_compile=jit)
        rollout = RolloutRunner(env, model, nsteps=5).run()
        losses.append([model.train(rollout, 7e-4)[0] for _ in range(3)])
    for a, b in zip(*losses):
        for key in ("policy_loss", "value_loss", "entropy_loss"):
            assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-6)


def test_save_load_round_trip(tmp_path):
    env = make_vec_env("CartPole-v1", num_env=2, seed=0)
    model = learn("mlp", env, seed=0, total_timesteps=400, **QUIET)
    path = str(tmp_path / "a2c.zip")
    model.save(path)
    policy = build_policy(env.observation_space, env.action_space, "mlp")
    fresh = Model(policy, 2, A2CConfig(nsteps=5))
    obs = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
    assert not np.array_equal(fresh.step(obs, deterministic=True)[1],
                              model.step(obs, deterministic=True)[1])
    fresh.load(path)
    np.testing.assert_array_equal(fresh.step(obs, deterministic=True)[0],
                                  model.step(obs, deterministic=True)[0])
    np.testing.assert_allclose(fresh.value(obs), model.value(obs))
    for a, b in zip(fresh.optimizer.variables, model.optimizer.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert fresh.num_timesteps == model.num_timesteps == 400
    resumed = learn("mlp", env, seed=1, total_timesteps=200, load_path=path, **QUIET)
    assert resumed.num_timesteps == 600


def test_load_rejects_other_spaces_and_algorithms(tmp_path):
    cartpole = make_vec_env("CartPole-v1", num_env=1, seed=0)
    path = str(tmp_path / "cartpole.zip")
    learn("mlp", cartpole, seed=0, total_timesteps=10, **QUIET).save(path)
    acrobot = make_vec_env("Acrobot-v1", num_env=1, seed=0)
    with pytest.raises(RLBaseError, match="observation space"):
        learn("mlp", acrobot, total_timesteps=10, load_path=path, **QUIET)
    with pytest.raises(RLBaseError, match="not found"):
        learn("mlp", cartpole, total_timesteps=10, load_path=str(tmp_path / "nope.zip"))
    other = str(tmp_path / "other.zip")
    policy = build_policy(cartpole.observation_space, cartpole.action_space, "mlp")
    save_model(other, "ppo", {"policy": policy.weights}, cartpole.observation_space,
               cartpole.action_space, "mlp", {}, {}, 0)
    with pytest.raises(RLBaseError, match="'ppo' model, not 'a2c'"):
        learn("mlp", cartpole, total_timesteps=10, load_path=other, **QUIET)


def test_callback_can_stop_training():
    env = make_vec_env("CartPole-v1", num_env=2, seed=0)
    seen = []

    def stop_after_three(model, info):
        seen.append(info["iteration"])
        return info["iteration"] < 3

    model = learn("mlp", env, seed=0, total_timesteps=10_000, callback=stop_after_three,
                  **QUIET)
    assert seen == [1, 2, 3]
    assert model.num_timesteps == 3 * 2 * 5


def test_seeded_runs_are_reproducible():
    results = []
    for _ in range(2):
        env = make_vec_env("CartPole-v1", num_env=2, seed=3)
        model = learn("mlp", env, seed=3, total_timesteps=200, **QUIET)
        obs = np.linspace(-1, 1, 40, dtype=np.float32).reshape(10, 4)
        results.append(model.value(obs))
    np.testing.assert_array_equal(results[0], results[1])


def test_bad_arguments():
    env = make_vec_env("CartPole-v1", num_env=1, seed=0)
    with pytest.raises(RLBaseError, match="nsteps"):
        learn("mlp", env, nsteps=0, total_timesteps=10)
    with pytest.raises(RLBaseError, match="unknown network 'nope'"):
        learn("nope", env, total_timesteps=10)
    with pytest.raises(RLBaseError, match="lrschedule|schedule"):
        learn("mlp", env, total_timesteps=10, lrschedule="sideways")


def test_rmsprop_names_old_spellings_and_sb3s():
    env = make_vec_env("CartPole-v1", num_env=1, seed=0)
    model = learn("mlp", env, seed=0, total_timesteps=5, rms_alpha=0.9, rms_epsilon=1e-3,
                  **QUIET)
    assert (model.config.rms_alpha, model.config.rms_epsilon) == (0.9, 1e-3)
    assert (model.optimizer.rho, model.optimizer.epsilon) == (0.9, 1e-3)
    # A2C's old names are deprecated (the warning points at this file), same values.
    with pytest.warns(DeprecationWarning) as caught:
        old = learn("mlp", env, seed=0, total_timesteps=5, alpha=0.8, epsilon=1e-2, **QUIET)
    messages = [str(w.message) for w in caught if w.category is DeprecationWarning]
    assert "a2c: 'alpha' is deprecated, use 'rms_alpha'" in messages
    assert "a2c: 'epsilon' is deprecated, use 'rms_epsilon'" in messages
    assert all(w.filename == __file__ for w in caught if "a2c:" in str(w.message))
    assert (old.config.rms_alpha, old.config.rms_epsilon) == (0.8, 1e-2)
    assert (old.optimizer.rho, old.optimizer.epsilon) == (0.8, 1e-2)
    from rlbase import A2C

    with pytest.warns(DeprecationWarning), \
            pytest.raises(RLBaseError, match="rms_epsilon is given twice"):
        A2C("MlpPolicy", "CartPole-v1", epsilon=1e-3, rms_epsilon=1e-3)
    sb3 = A2C("MlpPolicy", "CartPole-v1", rms_prop_eps=1e-4, use_rms_prop=True)
    assert sb3.model.config.rms_epsilon == 1e-4
    with pytest.raises(RLBaseError, match="use_rms_prop must be True"):
        A2C("MlpPolicy", "CartPole-v1", use_rms_prop=False)


def test_a_file_saved_with_the_old_rmsprop_names_loads(tmp_path):
    import warnings

    from rlbase import A2C, registry
    from rlbase.common.io.serialization import load_file, save_file

    env = make_vec_env("CartPole-v1", num_env=2, seed=0)
    model = learn("mlp", env, seed=0, total_timesteps=20, rms_alpha=0.9, rms_epsilon=1e-3,
                  **QUIET)
    path = str(tmp_path / "old.zip")
    model.save(path)
    meta, arrays, _ = load_file(path)
    hp = meta["hyperparameters"]
    hp["alpha"], hp["epsilon"] = hp.pop("rms_alpha"), hp.pop("rms_epsilon")
    hp["total_timesteps"] = 20  # older files kept learn()'s every argument
    save_file(path, meta, arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # converted silently
        loaded = registry.load(path)
        cls_loaded = A2C.load(path)
        resumed = learn("mlp", env, seed=0, total_timesteps=10, load_path=path, **QUIET)
    for m in (loaded, cls_loaded.model):
        assert (m.config.rms_alpha, m.config.rms_epsilon) == (0.9, 1e-3)
        assert (m.optimizer.rho, m.optimizer.epsilon) == (0.9, 1e-3)
        assert m.num_timesteps == 20
    obs = np.linspace(-1, 1, 40, dtype=np.float32).reshape(10, 4)
    np.testing.assert_array_equal(loaded.value(obs), model.value(obs))
    assert resumed.num_timesteps == 30
