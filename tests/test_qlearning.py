"""Tabular Q-learning: exact values on a deterministic chain, state indexing, saving, the CLI."""

import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.evaluation import evaluate_policy
from rlbase.common.vec_env import DummyVecEnv, VecMonitor
from rlbase.qlearning.qlearning import Model, StateIndexer, learn

QUIET = dict(print_freq=None)


class Chain(gym.Env):
    """States 0..4 in a row; action 1 moves right, action 0 left (bounded at 0). Reaching
    state 4 pays 1 and terminates; every other step pays 0. Episodes are cut at 20 steps."""

    observation_space = gym.spaces.Discrete(5)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.s, self.t = 0, 0
        return self.s, {}

    def step(self, action):
        self.s = min(self.s + 1, 4) if action == 1 else max(self.s - 1, 0)
        self.t += 1
        done = self.s == 4
        return self.s, float(done), done, self.t >= 20 and not done, {}


def chain_env(n=1):
    env = VecMonitor(DummyVecEnv([Chain] * n))
    env.seed(0)
    return env


def test_solves_the_chain_exactly():
    gamma = 0.9
    model = learn(chain_env(), total_timesteps=3000, seed=0, lr=1.0, gamma=gamma, **QUIET)
    # A deterministic env and lr 1: each update copies r + gamma * max Q(s') exactly, so the
    # table reaches Q*: right from s is gamma^(3 - s); left reaches max(s - 1, 0), worth
    # gamma * gamma^(3 - max(s - 1, 0)). The goal state 4 is never updated (terminal).
    s = np.arange(4)
    np.testing.assert_allclose(model.q_table[:4, 1], gamma ** (3 - s), rtol=1e-12)
    np.testing.assert_allclose(model.q_table[:4, 0], gamma * gamma ** (3 - np.maximum(s - 1, 0)),
                               rtol=1e-12)
    assert not model.q_table[4].any()
    assert (model.step(np.arange(4), deterministic=True)[0] == 1).all()
    mean, _ = evaluate_policy(model, chain_env(), 5)
    assert mean == 1.0


def test_truncation_bootstraps_from_the_final_state():
    # A chain cut after 2 steps never reaches the goal; Q(1, right) learns to bootstrap on
    # state 2 (the true final state) and not on the reset state 0.
    class Short(Chain):
        def step(self, action):
            obs, reward, terminated, _, info = super().step(action)
            return obs, reward, terminated, self.t >= 2, info

    model = Model(Short.observation_space, Short.action_space, seed=0)
    model.q_table[2] = [0.0, 10.0]
    env = VecMonitor(DummyVecEnv([Short]))
    env.seed(0)
    obs = env.reset()
    for action in (1, 1):
        new_obs, rewards, terminated, truncated, infos = env.step(np.array([action]))
        nxt = np.array([infos[0]["final_observation"]]) if truncated[0] else new_obs
        model.update(model.states(obs), [action], rewards, model.states(nxt), terminated,
                     lr=1.0, gamma=0.5)
        obs = new_obs
    assert model.q_table[1, 1] == 5.0  # 0 + 0.5 * max Q(2) = 0.5 * 10


def test_state_indexing():
    box = StateIndexer(gym.spaces.Box(np.array([-1.0, 0.0], np.float32),
                                      np.array([1.0, 10.0], np.float32)), 4)
    assert box.num_states == 16
    np.testing.assert_array_equal(box(np.array([[-1.0, 0.0], [0.99, 9.9], [2.0, -5.0],
                                                [0.0, 5.0]])), [0, 15, 12, 10])
    multi = StateIndexer(gym.spaces.MultiDiscrete([2, 3]), 1)
    np.testing.assert_array_equal(multi(np.array([[0, 0], [1, 2], [0, 2]])), [0, 5, 2])
    with pytest.raises(RLBaseError, match="bounds are not all finite"):
        StateIndexer(gym.spaces.Box(-np.inf, np.inf, (2,)), 10)
    with pytest.raises(RLBaseError, match="Discrete action space, got Box"):
        Model(gym.spaces.Discrete(3), gym.spaces.Box(-1, 1, (1,)))
    with pytest.raises(RLBaseError, match="grid_size"):
        Model(gym.spaces.Box(0, 1, (30,)), gym.spaces.Discrete(2), grid_size=20)


def test_mountain_car_grid_and_save_load(tmp_path):
    model = learn("MountainCar-v0", total_timesteps=2000, seed=0, grid_size=10, **QUIET)
    assert model.q_table.shape == (100, 3) and np.abs(model.q_table).sum() > 0
    path = str(tmp_path / "q.zip")
    model.save(path)
    fresh = learn("MountainCar-v0", total_timesteps=1, seed=1, grid_size=10, **QUIET)
    fresh.load(path)
    np.testing.assert_array_equal(fresh.q_table, model.q_table)
    assert fresh.num_timesteps == 2000
    resumed = learn("MountainCar-v0", total_timesteps=100, grid_size=10, load_path=path,
                    **QUIET)
    assert resumed.num_timesteps == 2100
    with pytest.raises(RLBaseError, match="Q-table has shape"):
        learn("MountainCar-v0", total_timesteps=1, grid_size=5, load_path=path, **QUIET)
    with pytest.raises(RLBaseError, match="observation space"):
        learn("Acrobot-v1", total_timesteps=1, grid_size=2, load_path=path, **QUIET)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_taxi_and_frozen_lake(seed):
    # Measured with these settings (the toy_text defaults): Taxi-v4 evaluates at 7.7-8.1 and
    # FrozenLake-v1 learns the optimal policy (0.74 success within its 100-step limit).
    kwargs = dict(total_timesteps=100_000, seed=seed, lr=0.5, lrschedule="linear", **QUIET)
    taxi = learn("Taxi-v4", **kwargs)
    assert evaluate_policy(taxi, fresh_env("Taxi-v4", seed), 100)[0] >= 7.0
    lake = learn("FrozenLake-v1", **kwargs)
    assert evaluate_policy(lake, fresh_env("FrozenLake-v1", seed), 1000)[0] >= 0.68


def fresh_env(env_id, seed):
    from rlbase.common.cmd_util import make_vec_env

    return make_vec_env(env_id, seed=100 + seed)


def test_retired_taxi_v3_is_taxi_v4():
    """gymnasium 1.4 only has Taxi-v4; rlbase registers the v3 id the issue's command uses,
    and it plays exactly as v4 does."""
    from rlbase.common.cmd_util import check_env_id

    check_env_id("Taxi-v3")
    envs = [gym.make(env_id) for env_id in ("Taxi-v3", "Taxi-v4")]
    actions = np.random.default_rng(0).integers(0, 6, size=300)
    traces = []
    for env in envs:
        obs, _ = env.reset(seed=5)
        trace = [obs]
        for a in actions:
            obs, r, term, trunc, _ = env.step(int(a))
            trace.append((obs, r, term, trunc))
            if term or trunc:
                trace.append(env.reset()[0])
        traces.append(trace)
    assert traces[0] == traces[1] and envs[0].spec.max_episode_steps == 200


def test_cli_taxi_train_save_play(tmp_path):
    path = tmp_path / "taxi.zip"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, "-m", "rlbase.run", "--alg=qlearning",
                           "--env=Taxi-v3", "--num_timesteps=3e4", "--seed=0",
                           f"--save_path={path}", "--play", "--play_episodes=2"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert path.is_file() and "episode 2: return" in proc.stdout


def test_checkpoint_resume_restores_table_exploration_and_rngs(tmp_path):
    from rlbase.common.cmd_util import make_vec_env

    def run(steps, seed, resume):
        env = make_vec_env("FrozenLake-v1", num_env=2, seed=seed)
        model = learn(env, total_timesteps=steps, seed=seed, print_freq=None,
                      checkpoint_interval=500, checkpoint_path=str(tmp_path), resume=resume)
        env.close()
        return model

    first = run(1000, 0, False)
    table, epsilon = first.q_table.copy(), first.epsilon
    rng_state = first.rng.bit_generator.state
    # A differently seeded run resuming with nothing left to do gets it all back exactly.
    again = run(1000, 7, True)
    np.testing.assert_array_equal(again.q_table, table)
    assert again.epsilon == epsilon and again.num_timesteps == 1000
    assert again.rng.bit_generator.state == rng_state
    # And it goes on from there: the count covers the whole run.
    longer = run(1500, 7, True)
    assert longer.num_timesteps == 1500 and longer.epsilon <= epsilon
    assert not np.array_equal(longer.q_table, table)
