"""rlbase.compat.rlib: rlib's documented examples run as written (tiny budgets), the run folder, the
saved hyperparameters and git state, test(), save/load, plots, videos, and every mapped
parameter reaching the rlbase config it becomes."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess

import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env import VecNormalize, find_wrapper
from rlbase.compat.rlib import DDPG, PPO, DeepQLearning, EvolutionStrategy, QLearning
from rlbase.compat.rlib.records import git_state

VIDEO = importlib.util.find_spec("imageio_ffmpeg") is not None


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    """Runs write <save_folder>/run_<n> under the working directory: a fresh one per test."""
    monkeypatch.chdir(tmp_path)


def config(algo):
    return algo.model.model.config


def check_run_folder(algo, models, changed=()):
    """The run folder's layout, and its hyperparameters.json (written when training starts:
    ``changed`` names config fields that training changed since)."""
    folder = algo.save_folder
    assert sorted(os.listdir(folder)) == ["git.json", "hyperparameters.json", "models", "plots",
                                          "videos"]
    assert sorted(os.listdir(algo.models_folder)) == sorted(f"{m}.zip" for m in models)
    with open(os.path.join(folder, "hyperparameters.json")) as f:
        saved = json.load(f)
    assert saved["algorithm"] == type(algo).__name__
    expected = {k: (list(v) if isinstance(v, tuple) else v if isinstance(v, (int, float, str,
                                                                                 bool))
                    or v is None else repr(v)) for k, v in config(algo).to_dict().items()}
    assert {k: v for k, v in saved["rlbase"]["config"].items() if k not in changed} == \
        {k: v for k, v in json.loads(json.dumps(expected)).items() if k not in changed}
    with open(os.path.join(folder, "git.json")) as f:
        assert json.load(f) == {"git": "not a git repository", "directory": os.getcwd()}
    return saved


def check_plots_and_videos(algo, models):
    plots = algo.save_plots()
    assert sorted(os.path.basename(p) for p in plots) == ["episode_lengths.png", "rewards.png",
                                                          "train_rewards.png"]
    for path in plots:
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    if not VIDEO:
        pytest.skip("imageio-ffmpeg is not installed (pip install 'rlbase[video]')")
    videos = algo.save_videos()
    assert sorted(os.path.basename(v) for v in videos) == sorted(f"{m}.mp4" for m in models)
    assert all(os.path.getsize(v) > 0 for v in videos)


def same_actions(algo, other, n=16):
    obs = np.stack([algo.obs_space.sample() for _ in range(n)])
    a = algo.model.predict(obs, deterministic=True)[0]
    b = other.model.predict(obs, deterministic=True)[0]
    np.testing.assert_array_equal(a, b)


def test_both_import_paths():
    from rlbase.compat.rlib import learning

    assert learning.PPO is PPO and learning.DDPG is DDPG and learning.QLearning is QLearning
    assert learning.DeepQLearning is DeepQLearning
    assert learning.EvolutionStrategy is EvolutionStrategy


def test_evolution_strategy_example():
    # rlib's docstring example, num_iterations 300 -> 2 (and a test every iteration).
    env_kwargs = {'id': 'CartPole-v0'}
    agent_kwargs = {'hidden_sizes': [32, 32]}
    model = EvolutionStrategy(env_kwargs, agent_kwargs, num_agents=30, num_iterations=2,
                              test_every=1, num_test_episodes=2, verbose=False)
    model.train()
    assert model.save_folder == os.path.join("evolution_strategy", "run_0")
    saved = check_run_folder(model, ["iter_0", "iter_1", "iter_2"])
    assert saved["rlib"]["num_agents"] == 30 and saved["rlib"]["env_kwargs"] == env_kwargs
    c = config(model)
    assert (c.popsize, c.noise_stdev, c.lr, c.seed) == (30, 0.1, 0.03, 42)
    assert (c.antithetic, c.fitness_shaping, c.l2coeff, c.normalize_observations) == \
        (False, "normalize", 0.0, False)
    assert model.model.policy_kwargs == {"layer_sizes": [32, 32], "activation": "relu"}
    assert [row[0] for row in model.test_scores] == [1.0, 2.0]
    assert len(model.train_episodes) == 60  # 30 perturbed episodes per generation
    mean, std = model.test(num_episodes=3, seed=0)
    assert isinstance(mean, float) and isinstance(std, float) and mean >= 1
    check_plots_and_videos(model, ["iter_0", "iter_1", "iter_2"])


def test_qlearning_example_decays_epsilon_per_episode():
    # rlib's docstring example, with num_iterations 3 and episodes cut at 50 steps.
    env_kwargs = {'id': 'MountainCar-v0'}
    agent_kwargs = {'grid_size': 20}
    model = QLearning(env_kwargs, agent_kwargs, lr=0.03, discount=0.99, epsilon_greedy=0.1,
                      epsilon_decay=0.9999, epsilon_min=0.01, num_iterations=3, test_every=2,
                      max_episode_length=50, num_test_episodes=1, verbose=False)
    model.train()
    check_run_folder(model, ["iter_0", "iter_2", "iter_3"])
    c = config(model)
    assert (c.lr, c.gamma, c.exploration_initial_eps, c.exploration_final_eps, c.grid_size) == \
        (0.03, 0.99, 0.1, 0.01, 20)
    assert model.epsilon == pytest.approx(0.1 * 0.9999 ** 3, rel=1e-12)
    assert [ep[1:] for ep in model.train_episodes] == [[-50.0, 50.0]] * 3
    assert model.train_rewards == [-50.0] * 3
    assert model.mean_test_rewards == [-50.0, -50.0] and model.std_test_rewards == [0.0, 0.0]
    with pytest.raises(RLBaseError, match="make_env is not available"):
        model.make_env()
    assert model.test(num_episodes=2) == (-50.0, 0.0)
    model.save("q.zip")
    other = QLearning({'id': 'FrozenLake-v1'}, {}, verbose=False)
    other.load("q.zip", verbose=False)
    assert other.epsilon == model.epsilon and other.current_iteration == 3
    np.testing.assert_array_equal(other.model.model.q_table, model.model.model.q_table)
    same_actions(model, other)
    check_plots_and_videos(model, ["iter_0", "iter_2", "iter_3"])


def test_test_arguments():
    model = QLearning({'id': 'FrozenLake-v1'}, {}, num_iterations=1, verbose=False)
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="num_episodes should be a strictly positive"):
            model.test(num_episodes=bad)
    with pytest.raises(ValueError, match="display and save_video"):
        model.test(display=True, save_video=True, video_path="v.mp4")
    assert config(model).grid_size == 10  # rlib's QTable default


def test_deep_qlearning_example_and_round_trip():
    # rlib's docstring example, with num_time_steps 200 (learning_starts 64, tests every 100).
    env_kwargs = {'id': 'CartPole-v1'}
    agent_kwargs = {'hidden_sizes': [10]}
    model = DeepQLearning(env_kwargs, agent_kwargs, lr=0.03, discount=0.99, epsilon_start=0.1,
                          epsilon_min=0.01, num_time_steps=200, learning_starts=64,
                          test_every=100, num_test_episodes=2, verbose=False)
    model.train()
    model.test()
    check_run_folder(model, ["iter_0", "iter_100", "iter_200", "best"])
    c = config(model)
    assert (c.lr, c.gamma, c.exploration_initial_eps, c.exploration_final_eps) == \
        (0.03, 0.99, 0.1, 0.01)
    assert (c.exploration_fraction, c.learning_starts, c.train_freq, c.gradient_steps) == \
        (0.1, 64, 4, 4)
    assert (c.target_update_interval, c.batch_size, c.buffer_size, c.max_grad_norm) == \
        (10, 64, 100_000, 10.0)
    assert (c.hiddens, c.dueling, c.double_q, c.best_model_interval) == ((), False, False, None)
    assert model.model.num_timesteps == 200
    path = os.path.join(model.models_folder, "iter_200.zip")
    other = DeepQLearning({'id': 'CartPole-v1'}, {'hidden_sizes': [5]}, verbose=False)
    other.load(path, verbose=False)
    same_actions(model, other)
    assert other.test_scores == model.test_scores and other.current_iteration == 200
    assert other.save_folder == model.save_folder
    assert config(other).lr == 0.03 and other.kwargs["num_time_steps"] == 200
    with pytest.raises(RLBaseError, match="holds DeepQLearning, not a QLearning"):
        QLearning({'id': 'FrozenLake-v1'}, {}, verbose=False).load(path)
    check_plots_and_videos(model, ["iter_0", "iter_100", "iter_200", "best"])


def test_stop_max_score_stops_at_the_first_test_reaching_it():
    model = DeepQLearning({'id': 'CartPole-v1'}, {'hidden_sizes': [8]}, max_total_reward=5,
                          stop_max_score=True, num_time_steps=400, learning_starts=64,
                          test_every=100, num_test_episodes=2, verbose=False)
    model.train()  # every CartPole episode reaches a return of 5
    assert model.current_iteration == 100 and model.test_scores == [[100.0, 5.0, 0.0]]
    with pytest.raises(RLBaseError, match="stop_max_score=True .* give max_total_reward"):
        DeepQLearning({'id': 'CartPole-v1'}, {'hidden_sizes': [8]}, stop_max_score=True)


@pytest.mark.slow  # ~15 s on 2 shared cores
def test_ddpg_example_anneals_and_round_trips():
    # rlib's docstring example on Pendulum-v1 (BipedalWalker's episodes are too long for a
    # test), num_episodes 2_000 -> 3 and episodes cut at 40 steps.
    env_kwargs = {'id': 'Pendulum-v1'}
    mu_kwargs = {'hidden_sizes': [16, 16]}
    q_kwargs = {'hidden_sizes': [16, 16]}
    model = DDPG(env_kwargs, mu_kwargs, q_kwargs, max_episode_length=40, max_total_reward=-1,
                 save_folder="ddpg", q_lr=3e-4, mu_lr=3e-4, action_noise=0.1,
                 target_noise=0.2, delay_policy_update=2, twin_q=True, discount=0.99,
                 num_episodes=3, learning_starts=0, target_update_tau=0.005,
                 num_test_episodes=1, verbose=False)
    model.train()
    model.test()
    saved = check_run_folder(model, ["iter_0", "iter_3", "best"], ("actor_lr", "critic_lr"))
    assert saved["rlbase"]["config"]["actor_lr"] == 3e-4
    c = config(model)
    # Pendulum's actions are in [-2, 2]: rlib's noises (env units) are halved in [-1, 1].
    assert (c.noise_type, c.target_noise, c.target_noise_clip) == ("normal_0.05", 0.1, math.inf)
    assert (c.twin_q, c.policy_delay, c.tau, c.gamma, c.learning_starts) == \
        (True, 2, 0.005, 0.99, 64)
    assert (c.train_freq, c.gradient_steps, c.batch_size, c.buffer_size) == (40, 10, 64, 100_000)
    assert (c.max_grad_norm, c.critic_l2_reg, c.normalize_observations) == (10.0, 0.0, False)
    # lr_annealing: episode 3 of 3 trains at 3e-4 * (1 - 1 / 2).
    assert (c.actor_lr, c.critic_lr) == pytest.approx((1.5e-4, 1.5e-4))
    assert [ep[2] for ep in model.train_episodes] == [40.0] * 3
    other = DDPG(env_kwargs, mu_kwargs, q_kwargs, max_episode_length=40, verbose=False)
    other.load(os.path.join(model.models_folder, "iter_3.zip"), verbose=False)
    same_actions(model, other)
    assert other.model.model.normalization is not None  # use_norm_wrappers' statistics
    check_plots_and_videos(model, ["iter_0", "iter_3", "best"])


def test_ddpg_parameters_reach_the_config():
    model = DDPG({'id': 'Pendulum-v1'}, {'hidden_sizes': [8], 'activation': 'tanh'},
                 {'hidden_sizes': [8], 'activation': 'tanh'}, q_lr=1e-3, mu_lr=2e-4,
                 lr_annealing=False, action_noise=0.4, target_noise=0.3,
                 num_updates_per_iter=7, delay_policy_update=3, twin_q=False, discount=0.9,
                 learning_starts=10, target_update_tau=0.02, batch_size=32,
                 size_replay_buffer=500, max_grad_norm=1.0, use_norm_wrappers=False)
    c = config(model)
    assert (c.critic_lr, c.actor_lr, c.noise_type, c.target_noise) == \
        (1e-3, 2e-4, "normal_0.2", 0.15)
    # Pendulum's own time limit (200 steps) is the episode cap: 7 gradient steps per 200.
    assert (c.train_freq, c.gradient_steps, c.policy_delay, c.twin_q, c.gamma) == \
        (200, 7, 3, False, 0.9)
    assert (c.learning_starts, c.tau, c.batch_size, c.buffer_size, c.max_grad_norm) == \
        (32, 0.02, 32, 500, 1.0)
    assert model.model.policy_kwargs == {"layer_sizes": [8], "activation": "tanh"}
    assert model.model.model.normalization is None  # use_norm_wrappers=False


def test_ddpg_refusals():
    with pytest.raises(RLBaseError, match="same hidden_sizes and activation"):
        DDPG({'id': 'Pendulum-v1'}, {'hidden_sizes': [8]}, {'hidden_sizes': [16]})
    with pytest.raises(RLBaseError, match="continuous .*Box.* action space"):
        DDPG({'id': 'CartPole-v1'}, {'hidden_sizes': [8]}, {'hidden_sizes': [8]})


def test_ppo_example_and_round_trip():
    # rlib's docstring example: num_steps_per_iter 2_000 -> 20, total_timesteps 200_000 -> 400.
    env_kwargs = {'id': 'CartPole-v1'}
    actor_kwargs = {'hidden_sizes': [64, 64]}
    critic_kwargs = {'hidden_sizes': [64, 64]}
    ppo = PPO(env_kwargs, actor_kwargs, critic_kwargs, batch_size=10,
              num_steps_per_iter=20, total_timesteps=400,
              num_envs=10, seed=42, num_test_agents=2, test_every=200)
    ppo.train()
    check_run_folder(ppo, ["iter_0", "iter_200", "iter_400"])
    assert [row[0] for row in ppo.test_scores] == [0.0, 200.0, 400.0]  # rlib tests at 0 too
    c = config(ppo)
    assert (c.nsteps, c.nminibatches, c.noptepochs, c.gamma, c.lam) == (20, 20, 10, 0.99, 0.95)
    assert (c.cliprange, c.clip_value, c.vf_coef, c.ent_coef, c.max_grad_norm) == \
        (0.2, True, 0.5, 0.01, 0.5)
    assert repr(c.lr) == "linear(0.0003)" and c.lr(0.5) == pytest.approx(1.5e-4)
    assert ppo.model.policy_kwargs["value_network"] == "copy"
    ppo.save("ppo.zip")
    other = PPO(env_kwargs, actor_kwargs, critic_kwargs, num_envs=2)
    other.load("ppo.zip", verbose=False)
    same_actions(ppo, other)
    assert other.num_envs == 10 and other.test_scores == ppo.test_scores
    assert repr(config(other).lr) == "linear(0.0003)"  # the schedule comes back, not lr's default


def test_ppo_readme_example_continuous_actions():
    # rlib's README: a 256x256 actor and rlib's default critic (64x64 tanh), which rlbase's
    # critic (a copy of the actor's shape) cannot be.
    env_kwargs = {'id': 'BipedalWalker-v3'}
    agent_kwargs = {'hidden_sizes': [256, 256], 'activation': 'tanh'}
    with pytest.raises(RLBaseError, match="critic is a copy of the actor's network shape"):
        PPO(env_kwargs, agent_kwargs)
    agent = PPO(env_kwargs, agent_kwargs, agent_kwargs)  # constructed only
    assert agent.model.policy_kwargs == {"layer_sizes": [256, 256], "activation": "tanh",
                                         "value_network": "copy"}
    assert agent.model.env.num_envs == 10 and config(agent).nsteps == 2048
    # rlib's wrappers for continuous actions: rewards normalized above the monitor,
    # observations clipped to [-10, 10].
    normalizer = find_wrapper(agent.model.env, VecNormalize)
    assert normalizer is not None and normalizer.stats.ret and not normalizer.stats.ob
    assert np.all(agent.obs_space.high <= 10) and np.all(agent.obs_space.low >= -10)


def test_normalize_observation_is_a_vec_normalize():
    model = DeepQLearning({'id': 'CartPole-v1'}, {'hidden_sizes': [8]},
                          normalize_observation=True, verbose=False)
    normalizer = find_wrapper(model.model.env, VecNormalize)
    assert normalizer is not None and normalizer.stats.ob and not normalizer.stats.ret
    assert model.model.model.normalization is not None


def test_ppo_refusals_and_gae_off():
    kw = {"actor_kwargs": {'hidden_sizes': [8]}, "critic_kwargs": {'hidden_sizes': [8]}}
    env = {'id': 'CartPole-v1'}
    with pytest.raises(RLBaseError, match="always normalizes the advantages"):
        PPO(env, norm_advantages=False, **kw)
    with pytest.raises(RLBaseError, match="value_loss_clip=policy_loss_clip"):
        PPO(env, value_loss_clip=0.3, **kw)
    with pytest.raises(RLBaseError, match="actor_kwargs must be a dict with hidden_sizes"):
        PPO(env, [64, 64])
    assert PPO(env).model.policy_kwargs == {"layer_sizes": [64, 64], "activation": "tanh",
                                            "value_network": "copy"}  # rlib's defaults
    with pytest.raises(RLBaseError, match="no parameter|must divide"):
        PPO(env, batch_size=7, num_steps_per_iter=10, num_envs=1, **kw)
    ppo = PPO(env, use_gae=False, lr_annealing=False, learning_rate=1e-3, num_envs=2,
              num_steps_per_iter=32, **kw)
    assert (config(ppo).lam, config(ppo).lr) == (1.0, 1e-3)


def test_git_state(tmp_path):
    assert git_state(str(tmp_path))["git"] == "not a git repository"
    run = {"cwd": tmp_path, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q"], **run)
    (tmp_path / "a.txt").write_text("a")
    subprocess.run(["git", "add", "a.txt"], **run)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "a"],
                   **run)
    head = subprocess.run(["git", "rev-parse", "HEAD"], text=True, **run).stdout.strip()
    assert git_state(str(tmp_path)) == {"commit": head, "dirty": False,
                                        "directory": str(tmp_path)}
    (tmp_path / "a.txt").write_text("b")
    assert git_state(str(tmp_path))["dirty"] is True


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(RLBaseError, match="env_kwargs must be a dict with the env's 'id'"):
        EvolutionStrategy({'env_name': 'CartPole-v1'}, {'hidden_sizes': [4]})
    with pytest.raises(RLBaseError, match="test_every must be a positive integer"):
        EvolutionStrategy({'id': 'CartPole-v1'}, {'hidden_sizes': [4]}, test_every=0)
    with pytest.raises(RLBaseError, match="activation.* must be 'relu', 'tanh' or 'sigmoid'"):
        EvolutionStrategy({'id': 'CartPole-v1'}, {'hidden_sizes': [4], 'activation': 'elu'})
    with pytest.raises(RLBaseError, match="agent_kwargs takes grid_size"):
        QLearning({'id': 'MountainCar-v0'}, {'hidden_sizes': [4]})
