"""QR-DQN: the quantile Huber loss and the target quantiles by hand, termination against
truncation, every variable trains, no retracing, the numpy mirror, the class, the command line
and a CartPole learning check."""

import gymnasium as gym
import identity_envs as ie
import keras
import numpy as np
import pytest
import tensorflow as tf
from process_util import cli_in_process

import rlbase
from rlbase import registry
from rlbase.common.buffers.transitions import target_dones
from rlbase.common.envs.make import make_vec_env
from rlbase.common.families.q_learning.numpy_q import NumpyQ
from rlbase.common.loops.training_loop import LoopOptions
from rlbase.common.vec_env import DummyVecEnv, VecMonitor
from rlbase.qrdqn.config import QRDQNConfig
from rlbase.qrdqn.losses import quantile_huber_loss, quantile_midpoints, target_quantiles
from rlbase.qrdqn.model import build_model
from rlbase.qrdqn.qrdqn import learn, train

QUIET = dict(log_interval=10**9)


def identity_network():
    return keras.layers.Identity()


def test_quantile_midpoints():
    np.testing.assert_allclose(quantile_midpoints(4), [0.125, 0.375, 0.625, 0.875])
    np.testing.assert_allclose(quantile_midpoints(1), [0.5])


def test_quantile_huber_loss_by_hand():
    # Two quantiles at tau_hat = 0.25, 0.75: theta = (0, 2); three target atoms (0.5, -1, 3).
    #   theta_0 = 0 (tau 0.25): u = 0.5, -1, 3 -> Huber 0.125, 0.5, 2.5;
    #     weights |0.25 - 1{u<0}| = 0.25, 0.75, 0.25 -> 0.03125 + 0.375 + 0.625 = 1.03125, / 3
    #   theta_1 = 2 (tau 0.75): u = -1.5, -3, 1 -> Huber 1.0, 2.5, 0.5;
    #     weights 0.25, 0.25, 0.75 -> 0.25 + 0.625 + 0.375 = 1.25, / 3
    #   sum over i of the means over j: 1.03125 / 3 + 1.25 / 3 = 0.7604167 (73/96).
    # Second transition: every atom equals every quantile, no loss; the third repeats the
    # first (three transitions of two quantiles: the levels follow N, not the batch size).
    quantiles = tf.constant([[0.0, 2.0], [1.0, 1.0], [0.0, 2.0]])
    targets = tf.constant([[0.5, -1.0, 3.0], [1.0, 1.0, 1.0], [0.5, -1.0, 3.0]])
    np.testing.assert_allclose(quantile_huber_loss(quantiles, targets).numpy(),
                               [73 / 96, 0.0, 73 / 96], rtol=1e-6)
    # The asymmetry: the same values at the swapped levels give another loss. theta = (2, 0):
    #   theta_0 = 2 (tau 0.25): u = -1.5, -3, 1 -> Huber 1, 2.5, 0.5; weights 0.75, 0.75, 0.25
    #     -> 2.75; theta_1 = 0 (tau 0.75): u = 0.5, -1, 3 -> Huber 0.125, 0.5, 2.5; weights
    #     0.75, 0.25, 0.75 -> 2.09375. (2.75 + 2.09375) / 3.
    swapped = quantile_huber_loss(quantiles[:, ::-1], targets).numpy()[0]
    assert swapped == pytest.approx((2.75 + 2.09375) / 3, rel=1e-6)


def test_quantile_huber_loss_kappa():
    # kappa = 2: L_2(u) / 2 is u^2 / 4 within 2, |u| - 1 beyond. theta = 0 at tau 0.5 (N=1),
    # atoms u = 1 and -3: 0.5 * 0.25 + 0.5 * 2 = 1.125, mean over the two atoms 0.5625.
    loss = quantile_huber_loss(tf.constant([[0.0]]), tf.constant([[1.0, -3.0]]), kappa=2.0)
    np.testing.assert_allclose(loss.numpy(), [0.5625], rtol=1e-6)


def test_target_quantiles_by_hand_terminated_and_truncated():
    # Next quantiles [B=3, A=2, N=2]; a* is the action of the largest mean, not a
    # quantile-by-quantile max: s'0 has a0 (1, 6) mean 3.5 and a1 (3, 3.2) mean 3.1 -> a0.
    next_quantiles = tf.constant([[[1.0, 6.0], [3.0, 3.2]],
                                  [[1.0, 6.0], [3.0, 3.2]],
                                  [[0.0, 2.0], [4.0, -1.0]]])  # s'2: means 1, 1.5 -> a1
    rewards = tf.constant([1.0, 1.0, 1.0])
    # Transition 0 was truncated by a time limit, 1 terminated, 2 an ordinary step.
    dones = tf.constant(target_dones([False, True, False], [True, False, False], gamma=0.5))
    np.testing.assert_array_equal(dones.numpy(), [0.0, 1.0, 0.0])
    targets = target_quantiles(rewards, dones, 0.5, next_quantiles).numpy()
    # 1 + 0.5 * (1, 6); no bootstrap; 1 + 0.5 * (4, -1).
    np.testing.assert_allclose(targets, [[1.5, 4.0], [1.0, 1.0], [3.0, 0.5]], rtol=1e-6)
    # With gamma = 1 a truncation ends the return too (a finite sum).
    np.testing.assert_array_equal(target_dones([False], [True], gamma=1.0), [1.0])


@pytest.mark.parametrize("gamma", [0.9, 1.0])
def test_truncation_bootstraps_and_termination_never_through_the_model(gamma):
    """The stored transitions and one update's per-transition losses, by hand."""
    env = VecMonitor(DummyVecEnv([lambda: ie.EndsAtThree(False), lambda: ie.EndsAtThree(True)]))
    model = learn(identity_network, env, seed=0, total_timesteps=8, learning_starts=10**6,
                  batch_size=2, n_quantiles=2, gamma=gamma, **QUIET)
    step3 = model.replay_buffer.get(np.array([4, 5]))  # both episodes end at the 3rd step
    np.testing.assert_allclose(step3.next_obs[:, 0], [0.3, 0.3], rtol=1e-6)
    # theta(s, a0) = (s, 2s), theta(s, a1) = (3s, 4s) online and in the target.
    model.q.advantage.out.kernel.assign([[1.0, 2.0, 3.0, 4.0]])
    model.q.advantage.out.bias.assign([0.0] * 4)
    model._target_stale = True
    model.update_target()
    # s = 0.2, action 0: quantiles (0.2, 0.4). s' = 0.3: a* = a1 (means 0.45, 1.05), so the
    # truncated target is 1 + 0.9 (0.9, 1.2) = (1.81, 2.08) (gamma 1: (1, 1)), the
    # terminated one (1, 1).
    #   targets (1, 1): tau 0.25: u = 0.8 twice -> 0.25 * 0.32; tau 0.75: u = 0.6 -> 0.75 * 0.18;
    #     0.08 + 0.135 = 0.215.
    #   targets (1.81, 2.08): tau 0.25: u = 1.61, 1.88 -> 0.25 * (1.11 + 1.38) / 2 = 0.31125;
    #     tau 0.75: u = 1.41, 1.68 -> 0.75 * (0.91 + 1.18) / 2 = 0.78375; 1.095.
    losses, stats = model.train(step3.obs[None], np.zeros((1, 2), np.int32),
                                step3.rewards[None], step3.next_obs[None], step3.dones[None],
                                np.ones((1, 2), np.float32), lr=0.0)
    truncated = 0.215 if gamma == 1.0 else 1.095
    np.testing.assert_allclose(losses[0], [0.215, truncated], rtol=1e-5)
    assert stats["loss"] == pytest.approx((0.215 + truncated) / 2, rel=1e-5)
    assert stats["q_mean"] == pytest.approx(0.3, rel=1e-5)


def make_model(ob_space, net_kwargs=None, **hyperparameters):
    return build_model(ob_space, gym.spaces.Discrete(3), 1, "mlp", dict(net_kwargs or {}),
                       QRDQNConfig(**{"jit_compile": False, **hyperparameters}))


def test_numpy_mirror_matches_tf_and_every_variable_trains():
    ob_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    model = make_model(ob_space, dict(num_hidden=16, activation="relu"), n_quantiles=5,
                       hiddens=[8], gradient_steps=2, batch_size=8, seed=0)
    assert model.q(np.zeros((2, 4), np.float32)).shape == (2, 3, 5)
    ob_space.seed(0)
    obs = np.stack([ob_space.sample() for _ in range(16)])
    np.testing.assert_allclose(NumpyQ(model.q).q_values(obs), model.q.q_values(obs).numpy(),
                               rtol=1e-5, atol=1e-6)
    variables = model.trainable_variables()
    assert len(variables) == len(model.q.trainable_variables) > 0
    before = [v.numpy().copy() for v in variables]
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 16, size=16)
    stack = lambda x: x.reshape(2, 8, *x.shape[1:])  # noqa: E731
    model.train(stack(obs[idx]), rng.integers(0, 3, (2, 8)).astype(np.int32),
                rng.normal(size=(2, 8)).astype(np.float32), stack(obs[idx[::-1]]),
                np.zeros((2, 8), np.float32), np.ones((2, 8), np.float32), lr=1e-2)
    for v, b in zip(variables, before):
        assert not np.array_equal(v.numpy(), b), v.name
    # The mirror acting follows the new weights; the target (not trainable) did not move.
    np.testing.assert_allclose(model.q_values(obs), model.q.q_values(obs).numpy(), rtol=1e-5,
                               atol=1e-6)
    assert not model.target.trainable_variables


@pytest.mark.parametrize("numpy_act", ["1", "0"])
def test_trace_counts_stay_flat_over_learn_calls(numpy_act, monkeypatch):
    monkeypatch.setenv("RLBASE_NUMPY_ACT", numpy_act)
    env = make_vec_env("CartPole-v1", num_env=2, seed=0)
    model = learn("mlp", env, seed=0, total_timesteps=0, learning_starts=20, batch_size=8,
                  train_freq=10, gradient_steps=2, n_quantiles=4, num_hidden=8, **QUIET)
    for calls in range(1, 4):
        train(model, env, 100, LoopOptions(log_interval=10**9))
        assert model.num_timesteps == 100 * calls and model.updates == 16 * calls
        assert model.train_fn.function.experimental_get_tracing_count() == 1
        if numpy_act == "0":
            assert model.q_fn.function.experimental_get_tracing_count() == 1


def test_class_takes_sb3_contrib_names_and_saves(tmp_path):
    agent = rlbase.QRDQN("MlpPolicy", "CartPole-v1", seed=0, learning_starts=50,
                         policy_kwargs=dict(n_quantiles=7, net_arch=[16]), train_freq=4,
                         target_update_interval=100, exploration_fraction=0.5)
    config = agent.model.config
    assert (config.n_quantiles, config.hiddens, agent.model.network_kwargs["layer_sizes"]) \
        == (7, (), [16])
    agent.learn(300)
    assert agent.model.updates > 0 and 0.0 < agent.exploration_rate < 1.0
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    actions, _ = agent.predict(obs, deterministic=True)
    agent.save(str(tmp_path / "qr.zip"))
    loaded = rlbase.QRDQN.load(str(tmp_path / "qr.zip"))
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], actions)
    assert loaded.exploration_rate == agent.exploration_rate
    reloaded = registry.load(str(tmp_path / "qr.zip"))
    assert reloaded.algorithm == "qrdqn" and reloaded.config.n_quantiles == 7


def test_exported_greedy_actions_equal_predict(tmp_path):
    from rlbase.common.export import runners
    from rlbase.common.export.graph import input_names

    agent = rlbase.QRDQN("MlpPolicy", "CartPole-v1", seed=1, policy_kwargs=dict(n_quantiles=5))
    obs = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
    expected = agent.predict(obs, deterministic=True)[0]
    run = runners.load(agent.model.export(str(tmp_path / "sm"), format="saved_model"))
    name = input_names(agent.model.observation_space)[0]
    np.testing.assert_array_equal(run(**{name: obs})["actions"], expected)


def test_non_discrete_actions_are_refused():
    from rlbase.common.errors import RLBaseError

    with pytest.raises(RLBaseError, match="qrdqn needs a Discrete action space"):
        learn("mlp", "Pendulum-v1", total_timesteps=10)


def test_cli_trains_and_saves(tmp_path):
    from rlbase.run import main

    path = str(tmp_path / "m.zip")
    main(["--alg=qrdqn", "--env=CartPole-v1", "--num_timesteps=400", "--seed=0",
          "--learning_starts=100", "--n_quantiles=3", f"--save_path={path}"])
    model = registry.load(path)
    assert model.algorithm == "qrdqn" and model.config.n_quantiles == 3
    # classic_control's row: the zoo's CartPole settings under the flags.
    assert model.config.target_update_interval == 10 and model.config.lr == 0.0023


def test_bad_cli_value_is_one_line(capsys):
    code, _, err = cli_in_process(capsys, "--alg=qrdqn", "--env=CartPole-v1",
                                  "--n_quantiles=0")
    assert code == 2 and "n_quantiles" in err and "Traceback" not in err


@pytest.mark.slow
def test_cartpole_learns_at_the_zoo_settings():
    """rl-baselines3-zoo's qrdqn CartPole-v1 row (rlbase/hyperparams/qrdqn.yml) for 5e4 steps,
    seed 0, handing back the best model scored every 2560 steps by 5 greedy episodes on a
    separate env (DQN's classic_control rule; the last model's greedy policy swings between
    solving and failing from one training phase to the next, as DQN's does: 231.7 here):
    10 fresh greedy episodes reach 475 (measured: 500.0). The broken variant run once at the
    same settings, terminations bootstrapped (done dropped from target_quantiles), scored 9.4.
    Two variants this check cannot catch, for the record: rewards zeroed scored 500.0 (the
    positive initial quantiles decay only where episodes terminate, so termination alone
    teaches CartPole), and the quantile levels reversed leave the quantiles' mean, the
    Q-value acted on, unchanged."""
    from rlbase.common.loops.evaluation import evaluate_policy
    from rlbase.hyperparams import env_type_defaults

    row = env_type_defaults("qrdqn", "classic_control")
    network = row.pop("network")
    row.pop("num_env", None)
    env = make_vec_env("CartPole-v1", num_env=1, seed=0)
    model = learn(network, env, total_timesteps=50000, seed=0,
                  eval_env=make_vec_env("CartPole-v1", num_env=1, seed=1000),
                  best_model_interval=2560, eval_freq=2560, eval_episodes=5, **row, **QUIET)
    check_env = make_vec_env("CartPole-v1", num_env=1, seed=2000)
    mean, _ = evaluate_policy(model, check_env, n_eval_episodes=10, deterministic=True)
    assert mean >= 475, mean
