"""Evolution strategies: the ES math on exact and toy inputs, the noise table across
processes, the numpy policy against Keras, observation normalization, step accounting, the
monitor and the log, MPI, save/load (old files included), resume and learning."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest

from rlbase import registry
from rlbase.common.envs.make import make_vec_env
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.common.vec_env import DummyVecEnv, VecMonitor
from rlbase.es.es import learn, share
from rlbase.es.model import Model
from rlbase.es.networks import ESPolicy
from rlbase.es.noise_table import NoiseTable
from rlbase.es.optimizer import (
    Adam,
    ascent_step,
    centered_ranks,
    es_gradient,
    ranks,
    shape_fitness,
)
from rlbase.es.rollout import EpisodeRunner, gym_envs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- the math ------------------------------------------------------------------------------
def test_centered_ranks_hand_computed():
    np.testing.assert_allclose(centered_ranks(np.array([3.0, 1.0, 2.0, 10.0])),
                               [1 / 6, -0.5, -1 / 6, 0.5])
    # Ties share their mean rank: the equal pair gets (1 + 2) / 2 = 1.5 -> 1.5 / 3 - 0.5 = 0.
    np.testing.assert_allclose(centered_ranks(np.array([1.0, 2.0, 2.0, 5.0])),
                               [-0.5, 0.0, 0.0, 0.5])
    # Shape is kept ([pairs, 2]); ranks run over all entries.
    np.testing.assert_allclose(ranks(np.array([[5.0, 0.0], [7.0, 5.0]])), [[1.5, 0], [3, 1.5]])
    np.testing.assert_allclose(centered_ranks(np.array([[4.0, 4.0]])), [[0.0, 0.0]])


def test_shape_fitness_options():
    x = np.array([1.0, 2.0, 3.0, 6.0])
    np.testing.assert_allclose(shape_fitness(x, "normalize"), (x - 3.0) / np.sqrt(3.5))
    np.testing.assert_allclose(shape_fitness(x, "none"), x)
    with pytest.raises(RLBaseError, match="fitness_shaping 'rank'.*centered_rank"):
        shape_fitness(x, "rank")


def test_es_gradient_exact_on_tiny_table():
    table = NoiseTable(0, 4)
    table.noise = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    # Pairs at offsets 0 ([1, 2]) and 2 ([3, 4]); weights f+ - f- = 1 and -1; / (2 * 2).
    grad = es_gradient(table, np.array([0, 2]), np.array([[1.0, 0.0], [0.0, 1.0]]), 2, True)
    np.testing.assert_allclose(grad, [-0.5, -0.5])
    grad = es_gradient(table, np.array([0, 1]), np.array([2.0, -1.0]), 2, False)
    np.testing.assert_allclose(grad, [(2 - 2) / 2, (4 - 3) / 2])


def test_adam_first_step_and_weight_decay():
    adam = Adam(3, lr=0.1)
    grad = np.array([2.0, -0.5, 0.0])
    # Bias-corrected first step: -lr * g / (|g| + eps') = -lr * sign(g).
    np.testing.assert_allclose(adam.step(grad), [-0.1, 0.1, 0.0], atol=1e-6)
    # Weight decay alone (zero ES gradient) pulls theta toward 0.
    delta = ascent_step(Adam(2, lr=0.1), np.array([1.0, -2.0]), np.zeros(2), l2coeff=0.01)
    np.testing.assert_allclose(delta, [-0.1, 0.1], atol=1e-5)


def _quadratic(theta: np.ndarray, optimum: np.ndarray) -> float:
    return -float(np.sum(np.square(theta - optimum)))


def _pair_returns(table, dirs, theta, optimum, sigma, dim):
    return np.array([[_quadratic(theta + s * sigma * table.get(i, dim), optimum)
                      for s in (1, -1)] for i in dirs])


@pytest.mark.parametrize("shaping,min_cosine", [("none", 0.95), ("centered_rank", 0.9)])
def test_es_gradient_points_along_true_gradient(shaping, min_cosine):
    dim, sigma = 10, 0.05
    table = NoiseTable(1, 100_000)
    rng = np.random.default_rng(0)
    optimum, theta = rng.normal(size=dim), rng.normal(size=dim)
    dirs = table.sample_index(rng, dim, 1000)
    returns = _pair_returns(table, dirs, theta, optimum, sigma, dim)
    grad = es_gradient(table, dirs, shape_fitness(returns, shaping), dim, True)
    true_grad = -2.0 * (theta - optimum)
    cosine = grad @ true_grad / (np.linalg.norm(grad) * np.linalg.norm(true_grad))
    assert cosine > min_cosine
    if shaping == "none":  # unshaped, the estimate times 1/sigma is the gradient itself
        # (its error shrinks as 1/sqrt(pairs): ~0.1 of the norm for 1000 pairs in 10-D)
        error = np.linalg.norm(grad / sigma - true_grad) / np.linalg.norm(true_grad)
        assert error < 0.25


def test_es_converges_on_quadratic():
    dim, sigma = 10, 0.05
    table = NoiseTable(2, 100_000)
    rng = np.random.default_rng(1)
    optimum = rng.normal(size=dim)
    theta = np.zeros(dim)
    adam = Adam(dim, lr=0.05)
    for _ in range(300):
        dirs = table.sample_index(rng, dim, 20)
        fitness = centered_ranks(_pair_returns(table, dirs, theta, optimum, sigma, dim))
        theta = theta + ascent_step(adam, theta, es_gradient(table, dirs, fitness, dim, True),
                                    0.0)
    assert np.linalg.norm(theta - optimum) < 0.05 * np.linalg.norm(optimum)


def test_noise_table_same_in_two_processes():
    code = ("import json; from rlbase.es.noise_table import NoiseTable; "
            "print(json.dumps(NoiseTable(42, 100000).get(1234, 8).tolist()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    here = NoiseTable(42, 100_000).get(1234, 8)
    np.testing.assert_array_equal(np.array(json.loads(out), np.float32), here)
    assert not np.array_equal(NoiseTable(43, 100_000).get(1234, 8), here)


def test_share_splits_evenly():
    assert [share(10, r, 3) for r in range(3)] == [4, 3, 3]
    assert sum(share(7, r, 4) for r in range(4)) == 7


# -- the policy ------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [dict(num_layers=2, num_hidden=16),
                                    dict(num_layers=1, num_hidden=8, layer_norm=True,
                                         activation="relu"),
                                    dict(num_layers=0)])
def test_numpy_forward_matches_keras(kwargs):
    import tensorflow as tf

    env = gym.make("CartPole-v1")
    policy = ESPolicy(env.observation_space, env.action_space, "mlp", kwargs)
    rng = np.random.default_rng(0)
    thetas = rng.normal(size=(3, policy.dim)).astype(np.float32)
    x = rng.normal(size=(3, policy.ob_dim)).astype(np.float32)
    batched = policy.outputs(thetas, x)
    assert all(np.shares_memory(part, thetas) for part in policy.unflatten(thetas))
    for p in range(3):
        policy.set_flat(thetas[p])
        keras_out = policy.net(tf.constant(x)).numpy()
        np.testing.assert_allclose(policy.outputs(thetas[p:p + 1], x), keras_out, rtol=1e-4,
                                   atol=1e-5)
        np.testing.assert_allclose(batched[p], keras_out[p], rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(policy.get_flat(), thetas[p])


def test_box_actions_are_squashed_into_bounds():
    env = gym.make("Pendulum-v1")
    policy = ESPolicy(env.observation_space, env.action_space, "mlp", {"num_layers": 0})
    out = np.array([[-100.0], [0.0], [100.0]])
    np.testing.assert_allclose(policy.actions(out), [[-2.0], [0.0], [2.0]], atol=1e-5)
    discrete = ESPolicy(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(3, start=1), "mlp",
                        {})
    np.testing.assert_array_equal(discrete.actions(np.array([[0.1, 0.9, 0.2]])), [2])


def test_bad_input_is_a_clear_error():
    env = make_vec_env("CartPole-v1", num_env=1, seed=0)
    with pytest.raises(RLBaseError, match="popsize must be even"):
        learn("mlp", env, 100, popsize=7)
    with pytest.raises(RLBaseError, match="fitness_shaping must be one of 'centered_rank', "
                                          "'normalize', 'none', got 'best'"):
        learn("mlp", env, 100, fitness_shaping="best")
    with pytest.raises(RLBaseError, match="noise_stdev must be > 0, got -0.1"):
        learn("mlp", env, 100, noise_stdev=-0.1)
    with pytest.raises(RLBaseError, match="supports mlp networks.*'lstm'"):
        learn("lstm", env, 100)
    with pytest.raises(RLBaseError, match="center_episodes must be >= 0, got -1"):
        learn("mlp", env, 100, center_episodes=-1)
    # ES's eval_episodes once counted the unperturbed episodes: the error names the new one.
    with pytest.raises(RLBaseError, match="center_episodes=0 turns them off"):
        learn("mlp", env, 100, eval_episodes=0)
    multi = gym.spaces.MultiDiscrete([2, 3])
    with pytest.raises(RLBaseError, match="Discrete and 1-D Box action spaces, got Multi"):
        ESPolicy(env.observation_space, multi, "mlp", {})


def test_gym_envs_unwraps_or_refuses():
    from rlbase.common.vec_env import SubprocVecEnv, VecNormalize

    dummy = make_vec_env("CartPole-v1", num_env=2, seed=0)
    assert gym_envs(dummy) == dummy.unwrapped.envs
    sub = SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 2)
    try:
        remade = gym_envs(sub)
        assert [e.spec.id for e in remade] == ["CartPole-v1"] * 2
    finally:
        sub.close()
    with pytest.raises(RLBaseError, match="got VecNormalize; drop VecNormalize"):
        gym_envs(VecNormalize(dummy))


# -- observation normalization -------------------------------------------------------------
def _model(ob_space: gym.Space, ac_space: gym.Space, **hyperparameters) -> Model:
    return registry.build_model("es", ob_space, ac_space, 1, "mlp", {"num_layers": 0},
                                {"seed": 0, **hyperparameters})


def test_normalize_observations_floors_the_variance_not_the_std():
    # Salimans et al.'s code floors the variance at 1e-2 (std >= 0.1): a constant dimension
    # is scaled by at most 10. A std floor of 1e-2 scaled it by 100 (0.02 -> 2.0, not 0.2).
    model = _model(gym.spaces.Box(-10, 10, (2,)), gym.spaces.Discrete(2))
    model.obs_rms.update_from_moments(np.array([1.0, 0.0]), np.array([0.0, 4.0]), 1e6)
    model.sync_obs_stats()
    x = np.array([[1.02, 0.3], [0.97, -1.0]], np.float32)
    np.testing.assert_allclose(model.policy.normalize(x), [[0.2, 0.15], [-0.3, -0.5]],
                               atol=1e-5)
    deviations = np.linspace(-0.4, 0.4, 9, dtype=np.float32)
    constant = model.policy.normalize(np.stack([1.0 + deviations, deviations], 1))[:, 0]
    np.testing.assert_allclose(constant, 10 * deviations, atol=1e-5)
    # Off: the policy sees the raw observations (clipped alike), whatever the statistics.
    raw = _model(gym.spaces.Box(-10, 10, (2,)), gym.spaces.Discrete(2),
                 normalize_observations=False)
    raw.obs_rms.update_from_moments(np.array([1.0, 0.0]), np.array([0.0, 4.0]), 1e6)
    raw.sync_obs_stats()
    np.testing.assert_allclose(raw.policy.normalize(x), x)


def test_observation_normalization_is_a_deprecated_spelling():
    env = make_vec_env("CartPole-v1", num_env=1, seed=0)
    with pytest.warns(DeprecationWarning) as record:
        model = learn("mlp", env, 0, seed=0, num_layers=0, observation_normalization=False)
    assert [str(w.message) for w in record] == [
        "es: 'observation_normalization' is deprecated, use 'normalize_observations'"]
    assert model.config.normalize_observations is False and not model.normalize_observations
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = learn("mlp", env, 0, seed=0, num_layers=0, normalize_observations=False)
    assert model.config.normalize_observations is False and not model.normalize_observations


# -- training --------------------------------------------------------------------------------
class CountSteps(gym.Wrapper):
    steps = 0

    def step(self, action):
        CountSteps.steps += 1
        return self.env.step(action)


def test_timesteps_count_real_env_steps():
    CountSteps.steps = 0
    env = VecMonitor(DummyVecEnv([lambda: CountSteps(gym.make("CartPole-v1"))
                                  for _ in range(3)]))
    totals = []
    model = learn("mlp", env, 1500, seed=0, popsize=6, num_hidden=8, center_episodes=3,
                  log_interval=2, callback=lambda m, info: totals.append(info["num_timesteps"]))
    assert model.num_timesteps == totals[-1] >= 1500
    assert totals[-2] < 1500  # stopped after the crossing generation
    # Unperturbed episodes are played (3 per log row) but not counted in num_timesteps.
    assert model.center_timesteps > 0
    assert CountSteps.steps == model.num_timesteps + model.center_timesteps


def test_paired_starts_give_mirrored_episodes_the_same_start():
    envs = [gym.make("Pendulum-v1") for _ in range(3)]
    policy = ESPolicy(envs[0].observation_space, envs[0].action_space, "mlp",
                      {"num_layers": 0})
    runner = EpisodeRunner(envs, policy, [0, 1, 2], None, 0.0, np.random.default_rng(0))
    theta, table = policy.get_flat(), NoiseTable(0, 1000)
    indices, signs = np.array([5, 5, 9, 9]), np.array([1, -1, 1, -1])
    # sigma 0: every task runs the same policy, so only the start state differs.
    paired = runner.run(theta, table, 0.0, indices, signs, np.array([11, 11, 12, 12]))
    assert paired.returns[0] == paired.returns[1] and paired.returns[2] == paired.returns[3]
    assert paired.returns[0] != paired.returns[2]
    runner = EpisodeRunner(envs, policy, [0, 1, 2], None, 0.0, np.random.default_rng(0))
    unpaired = runner.run(theta, table, 0.0, indices, signs)
    assert len(set(unpaired.returns.tolist())) == 4
    assert paired.lengths.tolist() == [200] * 4 and paired.obs_count == 800


def test_cartpole_learns():
    # The classic_control defaults (a linear policy); seeds 0-4 reach 500 by 5e4 steps. Broken
    # variants, seeds 0 and 1: the ES gradient's sign flipped 9.0 and 9.0; no update (gradient
    # zeroed, the initial linear policy) 290.2 and 9.8, so 475 is not reached by chance.
    for seed in (0, 1):
        env = make_vec_env("CartPole-v1", num_env=8, seed=seed)
        model = learn("mlp", env, 50_000, seed=seed, popsize=8, noise_stdev=0.1, lr=0.05,
                      num_layers=0, paired_starts=False, log_interval=10**9,
                      center_episodes=0)
        mean, _ = evaluate_policy(model, make_vec_env("CartPole-v1", num_env=1, seed=99), 5)
        assert mean >= 475, (seed, mean)


def test_pendulum_runs_with_box_actions():
    env = make_vec_env("Pendulum-v1", num_env=4, seed=0)
    model = learn("mlp", env, 1700, seed=0, popsize=4, num_hidden=16, action_noise=0.01,
                  log_interval=10**9)
    obs = np.zeros((2, 3), np.float32)
    actions, values, state, extra = model.step(obs)
    assert actions.shape == (2, 1) and np.all(np.abs(actions) <= 2.0)
    assert values is None and state is None and extra is None  # no value function
    # A deterministic policy: its "distribution" is the action with a zero std.
    mean, std = model.action_probabilities(obs, model.initial_states(2), np.zeros(2))
    np.testing.assert_array_equal(mean, actions)
    np.testing.assert_array_equal(std, np.zeros((2, 1)))
    # Episodes are always 200 steps: 4 per generation, so the 3rd generation crosses 1700.
    assert model.num_timesteps == 2400


def test_discrete_action_probabilities_are_one_hot():
    model = _model(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(3, start=1))
    obs = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    (probs,) = model.action_probabilities(obs, model.initial_states(5), np.zeros(5))
    np.testing.assert_array_equal(probs.sum(axis=1), np.ones(5))
    np.testing.assert_array_equal(probs.argmax(axis=1) + 1, model.step(obs)[0])


def test_monitor_file_and_log_keys(tmp_path):
    import csv

    from rlbase.common.logs import logger

    totals = []
    with logger.scoped_configure(dir=str(tmp_path), format_strs=["csv"]):
        env = make_vec_env("CartPole-v1", num_env=2, seed=0, monitor_dir=str(tmp_path))
        model = learn("mlp", env, 600, seed=0, popsize=4, num_hidden=8, log_interval=2,
                      callback=lambda m, info: totals.append(info["episodes"]))
        env.close()
    monitor, = tmp_path.glob("*monitor.csv")
    rows = list(csv.DictReader(monitor.read_text().splitlines()[1:]))
    # One row per perturbed episode (popsize per generation); unperturbed ones are not rows.
    assert len(rows) == totals[-1] == 4 * model.generation
    assert sum(int(r["l"]) for r in rows) == model.num_timesteps
    with open(tmp_path / "progress.csv") as f:
        log = list(csv.DictReader(f))
    last = log[-1]
    assert not [k for k in last if k.startswith("es/")]
    for key in ("time/iterations", "time/total_timesteps", "time/fps", "rollout/ep_len_mean",
                "eval/mean_reward", "eval/mean_ep_length", "time/center_timesteps",
                "train/population_return_max", "train/update_norm", "train/learning_rate"):
        assert last[key] != "", key
    # rollout/ep_rew_mean: the last 100 perturbed episodes (all of them here), as monitored.
    assert len(rows) < 100
    assert float(last["rollout/ep_rew_mean"]) == pytest.approx(
        np.mean([float(r["r"]) for r in rows]))
    assert int(last["time/total_timesteps"]) == model.num_timesteps
    assert int(last["time/center_timesteps"]) == model.center_timesteps
    assert float(last["train/learning_rate"]) == 0.01


def test_eval_env_replaces_the_center_episodes(tmp_path):
    import csv

    from rlbase.common.logs import logger

    with logger.scoped_configure(dir=str(tmp_path), format_strs=["csv"]):
        model = learn("mlp", make_vec_env("CartPole-v1", num_env=2, seed=0), 300, seed=0,
                      popsize=4, num_hidden=8, log_interval=1, eval_env="CartPole-v1",
                      eval_episodes=2)
    assert model.center_timesteps == 0  # the shared evaluator scored the policy instead
    with open(tmp_path / "progress.csv") as f:
        log = list(csv.DictReader(f))
    assert len(log) == model.generation and all(row["eval/mean_reward"] for row in log)
    assert "time/center_timesteps" not in log[-1]
    assert registry.load(str(tmp_path / "best_model.zip")).algorithm == "es"


def test_save_load_round_trip(tmp_path):
    env = make_vec_env("CartPole-v1", num_env=2, seed=0)
    model = learn("mlp", env, 2000, seed=0, popsize=4, num_hidden=16, log_interval=10**9)
    path = str(tmp_path / "es.zip")
    model.save(path)
    obs = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
    assert not np.allclose(model.obs_rms.mean, 0.0)  # statistics were gathered and saved
    by_file = registry.build_model("es", env.observation_space, env.action_space, 1, "mlp",
                                   {"num_hidden": 16}, {})
    by_file.load(path)
    for loaded in (by_file, registry.load(path)):
        assert isinstance(loaded, Model)
        np.testing.assert_array_equal(loaded.theta, model.theta)
        np.testing.assert_array_equal(loaded.obs_rms.mean, model.obs_rms.mean)
        np.testing.assert_array_equal(loaded.optimizer.m, model.optimizer.m)
        assert loaded.optimizer.t == model.optimizer.t == model.generation
        assert loaded.num_timesteps == model.num_timesteps >= 2000
        np.testing.assert_array_equal(loaded.step(obs)[0], model.step(obs)[0])
    # total_timesteps=0 with load_path: loaded, not trained.
    same = learn("mlp", env, 0, load_path=path)
    np.testing.assert_array_equal(same.theta, model.theta)
    assert same.num_timesteps == model.num_timesteps and same.generation == model.generation
    resumed = learn("mlp", env, 1000, seed=1, popsize=4, num_layers=1, load_path=path,
                    log_interval=10**9)
    assert resumed.policy.num_layers == 2  # the file's network, whatever is passed
    assert resumed.num_timesteps >= model.num_timesteps + 1000
    assert resumed.optimizer.t > model.optimizer.t
    other = registry.build_model("es", env.observation_space, env.action_space, 1, "mlp",
                                 {"num_layers": 1}, {})
    with pytest.raises(RLBaseError, match="holds 6 'policy' arrays"):
        other.load(path)


def test_files_of_the_previous_version_load(tmp_path):
    # rlbase 0.1's ES file: the policy's arrays, obs_rms/*, adam/*, no "format" entry, and
    # eval_episodes meaning the unperturbed episodes.
    from rlbase.common.io.serialization import save_file, space_to_json

    ob_space, ac_space = gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(2)
    kernel = np.array([[1.0, -1.0], [0.5, 2.0]], np.float32)
    bias = np.array([0.0, 0.25], np.float32)
    meta = {"algorithm": "es", "network": "mlp", "network_kwargs": {"num_layers": 0},
            "observation_space": space_to_json(ob_space),
            "action_space": space_to_json(ac_space), "num_timesteps": 1234,
            "hyperparameters": {"network": "mlp", "total_timesteps": 1000, "seed": 0,
                                "popsize": 4, "eval_episodes": 0, "lr": 0.01,
                                "observation_normalization": True},
            "groups": ["policy"]}
    arrays = {"policy/0000": kernel, "policy/0001": bias,
              "obs_rms/mean": np.array([0.5, 0.0]), "obs_rms/var": np.array([4.0, 1e-4]),
              "obs_rms/count": np.asarray(100.0), "adam/m": np.arange(6.0),
              "adam/v": np.ones(6), "adam/t": np.asarray(7, np.int64)}
    path = str(tmp_path / "old.zip")
    save_file(path, meta, arrays)
    model = registry.load(path)
    assert model.num_timesteps == 1234 and model.generation == 7
    np.testing.assert_array_equal(model.theta, np.concatenate([kernel.ravel(), bias]))
    np.testing.assert_array_equal(model.optimizer.m, np.arange(6.0))
    # obs [0.5, 0.05] -> [(0.5 - 0.5) / 2, 0.05 / 0.1] = [0, 0.5] -> logits [0.25, 1.25].
    assert model.step(np.array([[0.5, 0.05]], np.float32))[0].tolist() == [1]
    # -> [-0.25, -0.5]: logits [-0.5, -0.5 + 0.25 - 1.0] -> action 0.
    assert model.step(np.array([[0.0, -0.05]], np.float32))[0].tolist() == [0]
    np.testing.assert_array_equal(model.get_parameters()["policy/0000"], kernel)
    # Its keys under today's names: eval_episodes was center_episodes then.
    assert model.config.normalize_observations is True and model.config.center_episodes == 0
    assert model.config.eval_episodes == 5
    # Saved without normalization: the policy sees raw observations, [0.5, 0.05] -> logits
    # [0.5 + 0.025, -0.5 + 0.1 + 0.25] = [0.525, -0.15] -> action 0.
    meta["hyperparameters"]["observation_normalization"] = False
    save_file(path, meta, arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an old file's spellings convert silently
        raw = registry.load(path)
    assert raw.config.normalize_observations is False and not raw.normalize_observations
    assert raw.step(np.array([[0.5, 0.05]], np.float32))[0].tolist() == [0]


def test_mpi_ranks_stay_identical(tmp_path):
    if importlib.util.find_spec("mpi4py") is None or shutil.which("mpiexec") is None:
        pytest.skip("mpi4py / mpiexec not installed (pip install -e .[mpi])")
    worker = os.path.join(ROOT, "tests", "mpi_es_worker.py")
    proc = subprocess.run(["mpiexec", "-n", "2", sys.executable, worker, "train",
                           str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rank0, rank1 = (np.load(tmp_path / f"rank{r}_of_2.npz") for r in (0, 1))
    # Each rank ran its own episodes on its own envs: only the exchanged returns keep the
    # parameters, observation statistics and logged episodes equal.
    for key in ("theta", "obs_mean", "obs_var", "num_timesteps", "steps", "center",
                "episodes", "episode_returns"):
        np.testing.assert_array_equal(rank0[key], rank1[key])
    assert int(rank0["num_timesteps"]) == rank0["steps"].sum() >= 3000
    # Each rank's monitor holds its own perturbed episodes (4 of the 8 per generation); the
    # logged episodes are every rank's.
    generations = len(rank0["steps"])
    assert int(rank0["monitored"]) == int(rank1["monitored"]) == 4 * generations
    assert int(rank0["episodes"]) == 8 * generations


def test_cli_trains_and_saves(tmp_path):
    path = tmp_path / "model.zip"
    proc = subprocess.run([sys.executable, "-m", "rlbase.run", "--alg=es", "--env=CartPole-v1",
                           "--num_timesteps=2000", "--seed=0", "--popsize=4",
                           f"--save_path={path}", "--no_progress"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert path.is_file()
    loaded = registry.load(str(path))
    assert loaded.num_timesteps >= 2000 and loaded.policy.num_layers == 0  # CLI defaults


# -- checkpoints, resume and Ctrl-C -----------------------------------------------------------
def _es_run(total: int, seed: int, **kwargs):
    # Paired starts seed every episode's reset from the ES generator, so a resumed run's
    # episodes (on fresh envs) are the ones the uninterrupted run played.
    env = make_vec_env("CartPole-v1", num_env=2, seed=seed)
    return learn("mlp", env, total, seed=seed, popsize=4, num_hidden=8, center_episodes=2,
                 log_interval=2, action_noise=0.05, paired_starts=True,
                 **{"noise_table_size": 10_000, **kwargs})


def _state(model) -> dict:
    return {"theta": model.theta.copy(), "m": model.optimizer.m.copy(),
            "v": model.optimizer.v.copy(), "t": model.optimizer.t,
            "obs_mean": model.obs_rms.mean.copy(), "obs_var": model.obs_rms.var.copy(),
            "obs_count": float(model.obs_rms.count), "steps": model.num_timesteps,
            "generation": model.generation, "rng": model.rng.bit_generator.state}


def _assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], np.ndarray):
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        else:
            assert a[key] == b[key], key


def test_resume_restores_everything_exactly_and_continues_bit_for_bit(tmp_path):
    import random

    from rlbase.common.io.checkpoint import list_checkpoints
    from rlbase.common.io.serialization import load_file

    folder = str(tmp_path / "ckpt")
    first = _es_run(1500, 0, checkpoint_interval=1, checkpoint_path=folder)
    saved, globals_ = _state(first), (np.random.get_state()[1].copy(), random.getstate())
    assert first.generation >= 2 and first.optimizer.t == first.generation
    # interval 1: a checkpoint after every generation; the newest two are kept.
    found = list_checkpoints(folder)
    assert len(found) == 2 and found[-1][0] == first.num_timesteps
    loop = load_file(found[-1][1])[0]["resume"]["loop"]
    assert loop["iterations"] == first.generation
    assert loop["model"]["noise_table"]["size"] == 10_000

    # Nothing left to train: the resumed run hands back exactly the saved state, whatever
    # its own seed and noise_table_size.
    again = _es_run(1500, 99, checkpoint_path=folder, resume=True)
    _assert_same(saved, _state(again))
    assert again.center_timesteps == first.center_timesteps > 0
    np.testing.assert_array_equal(np.random.get_state()[1], globals_[0])
    assert random.getstate() == globals_[1]

    # Continuing from the checkpoint gives the uninterrupted run's parameters bit for bit
    # (the unperturbed episodes of the first run's last log row change nothing).
    resumed = _es_run(3000, 7, checkpoint_path=folder, resume=True, noise_table_size=20_000)
    straight = _es_run(3000, 0)
    assert resumed.generation > first.generation
    _assert_same(_state(straight), _state(resumed))


def test_resume_with_an_empty_folder_starts_afresh_and_bad_state_is_an_error(tmp_path):
    from rlbase.common.io.serialization import load_file, save_file

    model = _es_run(600, 0, checkpoint_path=str(tmp_path), resume=True,
                    checkpoint_interval=600)
    assert model.num_timesteps >= 600 and model.generation >= 1
    with pytest.raises(RLBaseError, match="checkpoint_interval must be >= 0, got -5"):
        _es_run(600, 0, checkpoint_interval=-5, checkpoint_path=str(tmp_path))
    # A checkpoint whose resume state was damaged is refused with a clear error.
    from rlbase.common.io.checkpoint import list_checkpoints

    path = list_checkpoints(str(tmp_path))[-1][1]
    meta, arrays, _ = load_file(path)
    del meta["resume"]["loop"]["model"]["noise_table"]
    save_file(path, meta, arrays)
    with pytest.raises(RLBaseError, match="malformed resume state.*noise_table"):
        _es_run(600, 0, checkpoint_path=str(tmp_path), resume=True)


def test_ctrl_c_stops_after_the_generation_and_writes_a_checkpoint(tmp_path):
    import signal

    from rlbase.common.io.checkpoint import list_checkpoints
    from rlbase.common.loops.signals import graceful_interrupt, stop_requested

    def interrupt(model, info):
        if info["iteration"] == 2:
            os.kill(os.getpid(), signal.SIGINT)

    with graceful_interrupt():
        model = _es_run(10**6, 0, checkpoint_path=str(tmp_path), callback=interrupt)
        assert stop_requested()
    # The loop polls the request right after the callback, at the end of the generation in
    # which it came (under MPI the ranks then agree to stop there together).
    assert model.generation == 2
    assert [steps for steps, _ in list_checkpoints(str(tmp_path))] == [model.num_timesteps]


def test_non_finite_update_is_named(monkeypatch):
    from rlbase.common.errors import NonFiniteError
    from rlbase.es import generation

    monkeypatch.setattr(generation, "ascent_step", lambda *args: np.full(args[1].shape, np.nan))
    with pytest.raises(NonFiniteError, match="update became non-finite at generation 1"):
        _es_run(600, 0)


@pytest.mark.slow  # two CLI processes: ~16 s here
def test_cli_sigkill_then_resume(tmp_path):
    from process_util import ENV, kill_after_checkpoints, start_cli

    from rlbase.common.io.checkpoint import list_checkpoints
    from rlbase.common.io.serialization import load_file

    ckpt = tmp_path / "ckpt"
    base = ["--alg=es", "--env=CartPole-v1", "--popsize=4", "--no_progress",
            "--checkpoint_interval=1000", f"--checkpoint_path={ckpt}"]
    first = start_cli([*base, "--num_timesteps=1e7", "--seed=0"], tmp_path / "first.txt")
    steps, latest = kill_after_checkpoints(first, ckpt, tmp_path / "first.txt", 120)
    generation = load_file(latest)[0]["resume"]["loop"]["iterations"]
    total = steps + 2000
    model_path = tmp_path / "final.zip"
    proc = subprocess.run([sys.executable, "-m", "rlbase.run", *base,
                           f"--num_timesteps={total}", "--seed=1", "--resume",
                           f"--save_path={model_path}"],
                          capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"Resumed from {latest} at {steps} timesteps" in proc.stdout
    meta = load_file(str(model_path))[0]
    # The count went on from the checkpoint; the generation that crosses total finishes.
    assert total <= meta["num_timesteps"] < total + 4 * 500
    # The resumed run's own checkpoints continue the count and the generations (the last
    # generation writes one only when it crosses a multiple of checkpoint_interval).
    final_meta = load_file(list_checkpoints(str(ckpt))[-1][1])[0]
    assert final_meta["resume"]["loop"]["iterations"] > generation
    assert steps < final_meta["num_timesteps"] <= meta["num_timesteps"]


@pytest.mark.slow  # mpiexec -n 2, four short runs: ~17 s here
def test_mpi_resume_every_rank_restores_its_own_state(tmp_path):
    if importlib.util.find_spec("mpi4py") is None or shutil.which("mpiexec") is None:
        pytest.skip("mpi4py / mpiexec not installed (pip install -e .[mpi])")
    from rlbase.common.io.checkpoint import list_checkpoints
    from rlbase.common.io.serialization import load_file

    folder = tmp_path / "ckpt"
    worker = os.path.join(ROOT, "tests", "mpi_es_worker.py")
    proc = subprocess.run(["mpiexec", "-n", "2", sys.executable, worker, "resume",
                           str(tmp_path), str(folder)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ranks_out = [np.load(tmp_path / f"resume_rank{r}.npz") for r in (0, 1)]
    for out in ranks_out:
        # Each rank got its own generator back (they differ between ranks) ...
        assert str(out["first_rng"]) == str(out["again_rng"])
        np.testing.assert_array_equal(out["first"], out["again"])
        # ... and the resumed 2-rank run matches the uninterrupted one bit for bit.
        np.testing.assert_array_equal(out["resumed"], out["straight"])
        assert out["steps"][0] == out["steps"][1] >= 3000
    assert str(ranks_out[0]["first_rng"]) != str(ranks_out[1]["first_rng"])
    np.testing.assert_array_equal(ranks_out[0]["resumed"], ranks_out[1]["resumed"])
    loop = load_file(list_checkpoints(str(folder))[-1][1])[0]["resume"]["loop"]
    assert len(loop["model"]["rngs"]) == 2
