"""A run stopped at a checkpoint taken at an episode boundary and resumed ends exactly where
the uninterrupted run does (weights, optimizer state, VecNormalize statistics), for every
algorithm, with VecNormalize, a frame stack and Dict observations.

The env is deterministic with fixed-length episodes (every reset is the same), so a checkpoint
after a whole number of episodes of every env is a point where the uninterrupted run's envs had
just reset too: nothing the env holds is lost (see docs/architecture.md, 'Resuming').
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.io.checkpoint import list_checkpoints
from rlbase.common.vec_env import DummyVecEnv, SubprocVecEnv, VecMonitor
from rlbase.common.vec_env.base import VecEnv, VecEnvWrapper, find_wrapper
from rlbase.common.vec_env.vec_frame_stack import VecFrameStack
from rlbase.common.vec_env.vec_normalize import VecNormalize
from rlbase.registry import get_algorithm, resolve

EPISODE = 4   # steps per episode (then truncated)
NENVS = 2
CUT = 16      # the checkpoint: 2 whole episodes of each env
TOTAL = 32


class Clock(gym.Env):
    """Deterministic: observation (t/4, (t mod 3)/3), or a Dict {'t': Box(1), 'phase':
    Discrete(3)}; reward 1 for action t mod 2 (discrete) or -(a - t/4)^2 (continuous);
    truncated after EPISODE steps, and every reset is the same."""

    def __init__(self, continuous: bool = False, dict_obs: bool = False):
        self.continuous, self.dict_obs = continuous, dict_obs
        self.observation_space: gym.Space = gym.spaces.Dict(
            {"t": gym.spaces.Box(-1.0, 2.0, (1,), np.float32),
             "phase": gym.spaces.Discrete(3)}) if dict_obs else \
            gym.spaces.Box(-1.0, 2.0, (2,), np.float32)
        self.action_space: gym.Space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32) \
            if continuous else gym.spaces.Discrete(2)
        self.t = 0

    def _obs(self) -> Any:
        if self.dict_obs:
            return {"t": np.array([self.t / EPISODE], np.float32), "phase": self.t % 3}
        return np.array([self.t / EPISODE, (self.t % 3) / 3], np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any):
        if self.continuous:
            reward = -float((np.asarray(action).ravel()[0] - self.t / EPISODE) ** 2)
        else:
            reward = float(int(action) == self.t % 2)
        self.t += 1
        return self._obs(), reward, False, self.t >= EPISODE, {}


TINY = dict(network="mlp", num_layers=1, num_hidden=8, log_interval=10**9)
OFF_POLICY = dict(TINY, learning_starts=4, batch_size=4, buffer_size=64)
SETTINGS: dict[str, dict[str, Any]] = {
    "a2c": dict(TINY, nsteps=4),
    "acer": dict(TINY, nsteps=4, buffer_size_per_env=40, replay_start=8, replay_ratio=1),
    "ppo": dict(TINY, nsteps=4, nminibatches=2, noptepochs=2),
    "trpo": dict(TINY, nsteps=4, vf_batch_size=4),
    "gail": dict(TINY, nsteps=4, vf_batch_size=4, g_step=2, d_step=2),
    "dqn": dict(OFF_POLICY, train_freq=2, target_update_interval=4),
    "qrdqn": dict(OFF_POLICY, train_freq=2, target_update_interval=4, n_quantiles=3),
    "pqn": dict(TINY, nsteps=4, nminibatches=2, noptepochs=2),
    "qlearning": dict(network=None, log_interval=10**9, grid_size=3),
    "es": dict(TINY, popsize=4, max_episode_steps=EPISODE),
    "ddpg": dict(OFF_POLICY),
    "td3": dict(OFF_POLICY),
    "sac": dict(OFF_POLICY),
}
CONTINUOUS = ("ddpg", "td3", "sac")


def clock_expert() -> str:
    """An expert file for the Clock env (GAIL imitates it): two episodes of its right
    actions."""
    from rlbase.compat.sb3.pretraining.expert_traj import generate_expert_traj

    path = os.path.join(tempfile.mkdtemp(), "clock_expert.npz")
    generate_expert_traj(lambda obs: int(round(float(obs[0]) * EPISODE)) % 2, Clock(),
                         n_episodes=2, save_path=path)
    return path


SETTINGS["gail"]["expert_path"] = clock_expert()
# ES runs whole episodes on the bare envs and normalizes observations itself.
NORMALIZES = tuple(a for a in SETTINGS if a != "es")


def make_env(alg: str, normalize: bool, dict_obs: bool = False, stack: int = 0) -> VecEnv:
    continuous = alg in CONTINUOUS
    venv: VecEnv = VecMonitor(DummyVecEnv(
        [lambda: Clock(continuous, dict_obs) for _ in range(NENVS)]))
    # Replay stores raw stacks and normalizes them when sampled, so algorithms with a replay
    # buffer take the statistics above the stack; the on-policy ones take either order (this
    # one here).
    normalize_above_stack = alg in ("acer", "dqn", "qrdqn", "ddpg", "td3", "sac")
    if stack and normalize_above_stack:
        venv = VecFrameStack(venv, stack)
    if normalize:
        venv = VecNormalize(venv)
    return VecFrameStack(venv, stack) if stack and not normalize_above_stack else venv


def run(alg: str, folder: str, resume: bool, env_fn: Callable[[], VecEnv], stop_at: int = 0
        ) -> tuple[Any, VecEnv]:
    name, fixed = resolve(alg)
    learn = get_algorithm(name).learn
    env = env_fn()
    callback = (lambda m, info: m.num_timesteps < stop_at) if stop_at else None
    model = learn(env=env, seed=3, total_timesteps=TOTAL, checkpoint_interval=CUT,
                  checkpoint_path=folder, resume=resume, callback=callback,
                  **{**fixed, **SETTINGS[alg]})
    return model, env


def straight_and_resumed(tmp_path: Any, alg: str, env_fn: Callable[[], VecEnv]
                         ) -> tuple[Any, VecEnv, Any, VecEnv]:
    straight, straight_env = run(alg, str(tmp_path / "straight"), False, env_fn)
    cut = str(tmp_path / "cut")
    run(alg, cut, False, env_fn, stop_at=CUT)  # killed right after its checkpoint
    assert [s for s, _ in list_checkpoints(cut)][-1] == CUT
    resumed, resumed_env = run(alg, cut, True, env_fn)
    assert resumed.num_timesteps == straight.num_timesteps == TOTAL
    return straight, straight_env, resumed, resumed_env


def assert_same_parameters(a: Any, b: Any) -> None:
    pa, pb = a.get_parameters(), b.get_parameters()
    assert sorted(pa) == sorted(pb)
    different = [k for k in pa if not np.array_equal(pa[k], pb[k])]
    assert not different, f"resumed != uninterrupted in {different[:5]}"


def normalizer(env: VecEnv) -> VecNormalize:
    wrapper = find_wrapper(env, VecNormalize)
    assert isinstance(wrapper, VecNormalize)
    return wrapper


def assert_same_statistics(a: VecEnv, b: VecEnv) -> None:
    sa, sb = normalizer(a).state_dict(), normalizer(b).state_dict()
    assert sorted(sa) == sorted(sb)
    for key in sa:
        np.testing.assert_array_equal(sa[key], sb[key], err_msg=key)


# TD3 is DDPG's options (DDPG's row runs the same code); GAIL's sampler is TRPO's.
@pytest.mark.parametrize("alg", [pytest.param(a, marks=pytest.mark.slow) if a in ("td3", "gail")
                                 else a for a in NORMALIZES])
def test_resume_with_vec_normalize_equals_the_uninterrupted_run(tmp_path, alg):
    straight, s_env, resumed, r_env = straight_and_resumed(
        tmp_path, alg, lambda: make_env(alg, normalize=True))
    # Every observation counted once, as the uninterrupted run counts it: the first reset
    # (2 envs) and every step (TOTAL env steps); the resumed run's reset is not counted again.
    count = NENVS + TOTAL + 1e-4  # RunningMeanStd starts at a count of 1e-4
    assert normalizer(s_env).ob_rms.count == pytest.approx(count, abs=1e-9)
    assert normalizer(r_env).ob_rms.count == normalizer(s_env).ob_rms.count
    assert_same_statistics(s_env, r_env)
    assert_same_parameters(straight, resumed)


def test_resume_es_equals_the_uninterrupted_run(tmp_path):
    straight, _, resumed, _ = straight_and_resumed(
        tmp_path, "es", lambda: make_env("es", normalize=False))
    assert_same_parameters(straight, resumed)


@pytest.mark.parametrize("alg", ["ppo", "dqn", "acer"])
def test_resume_with_a_frame_stack_and_vec_normalize(tmp_path, alg):
    straight, s_env, resumed, r_env = straight_and_resumed(
        tmp_path, alg, lambda: make_env(alg, normalize=True, stack=2))
    assert_same_statistics(s_env, r_env)
    assert_same_parameters(straight, resumed)


@pytest.mark.parametrize("alg", ["a2c", "sac", "acer", "trpo"])
def test_resume_with_dict_observations_and_vec_normalize(tmp_path, alg):
    straight, s_env, resumed, r_env = straight_and_resumed(
        tmp_path, alg, lambda: make_env(alg, normalize=True, dict_obs=True))
    assert_same_statistics(s_env, r_env)
    assert_same_parameters(straight, resumed)


def test_vec_normalize_does_not_count_the_reset_after_a_restore():
    """One env, three resets: the first and the third count, the one right after a restore
    (``resumed``) does not (the uninterrupted PPO run had counted 401, the resumed one 402)."""
    env = VecNormalize(DummyVecEnv([lambda: Clock()]))
    env.reset()
    env.step(np.zeros(1, np.int64))
    assert env.ob_rms.count == pytest.approx(2 + 1e-4, abs=1e-12)
    env.resumed()
    env.reset()
    assert env.ob_rms.count == pytest.approx(2 + 1e-4, abs=1e-12)
    env.reset()  # only the reset right after the restore is skipped
    assert env.ob_rms.count == pytest.approx(3 + 1e-4, abs=1e-12)


def test_the_checkpointed_next_step_is_taken_only_for_the_observations_it_was_drawn_for():
    """On the TF act path (Dict observations) an update draws the next rollout's first actions;
    a resume takes them once, and only when the reset observations are those (at an episode
    boundary), never for others (a mid-episode checkpoint)."""
    learn = get_algorithm("a2c").learn
    model = learn(env=make_env("a2c", normalize=False, dict_obs=True), seed=0,
                  total_timesteps=8, **SETTINGS["a2c"])
    meta, arrays = model.resume_state()
    drawn_for = {"t": np.zeros((NENVS, 1), np.float32), "phase": np.zeros(NENVS, np.int64)}
    other = {"t": np.full((NENVS, 1), 0.25, np.float32), "phase": np.ones(NENVS, np.int64)}
    model.restore_resume_state(meta, arrays)
    assert model.resumed_step(other) is None
    model.restore_resume_state(meta, arrays)
    step = model.resumed_step(drawn_for)
    assert step is not None and step[0].shape == (NENVS,)
    np.testing.assert_array_equal(step[0], arrays["loop/next_step/0"])
    assert model.resumed_step(drawn_for) is None  # once


# -- stochastic envs: the resumed run repeats the envs' noted resets ----------------------
class EpisodeEnds(VecEnvWrapper):
    """Whether the last step ended an episode of every env: the run stops right there, at an
    episode boundary of a stochastic env."""

    def __init__(self, venv: VecEnv):
        super().__init__(venv)
        self.all_ended = False

    def reset(self) -> Any:
        self.all_ended = False
        return self.venv.reset()

    def step_wait(self) -> Any:
        obs, rewards, terminated, truncated, infos = self.venv.step_wait()
        self.all_ended = bool(np.all(terminated | truncated))
        return obs, rewards, terminated, truncated, infos


CARTPOLE = {"dqn": dict(TINY, learning_starts=50, batch_size=16, buffer_size=500, train_freq=4,
                        target_update_interval=50, best_model_interval=None),
            "ppo": dict(TINY, nsteps=8, nminibatches=2, noptepochs=2)}


def cartpole_run(alg: str, folder: str, resume: bool, subproc: bool, stop_after: int = 0
                 ) -> tuple[Any, list[float]]:
    make = [lambda: gym.make("CartPole-v1")]
    monitor = VecMonitor(SubprocVecEnv(make) if subproc else DummyVecEnv(make))
    env = EpisodeEnds(monitor)

    def stop_at_an_episode_end(model: Any, info: dict) -> bool:
        return not (model.num_timesteps >= stop_after and env.all_ended)

    try:
        model = get_algorithm(alg).learn(
            env=env, seed=3, total_timesteps=400, checkpoint_path=folder, resume=resume,
            callback=stop_at_an_episode_end if stop_after else None, **CARTPOLE[alg])
    finally:
        env.close()
    return model, list(monitor.episode_returns)


@pytest.mark.parametrize("alg, subproc", [("dqn", False), ("ppo", False), ("dqn", True)])
def test_resume_of_a_stochastic_env_at_an_episode_boundary_equals_the_uninterrupted_run(
        tmp_path, alg, subproc):
    # CartPole draws each episode's start from the env's own generator: the resumed run's
    # first reset repeats the reset the stopped run's env had just made, so the episodes go
    # on as in the uninterrupted run (re-seeding replayed the run's first episodes instead).
    straight, straight_returns = cartpole_run(alg, str(tmp_path / "straight"), False, subproc)
    cut = str(tmp_path / "cut")
    stopped, first_returns = cartpole_run(alg, cut, False, subproc, stop_after=150)
    assert 150 <= stopped.num_timesteps < 400  # stopped at an episode end, with a checkpoint
    resumed, resumed_returns = cartpole_run(alg, cut, True, subproc)
    assert resumed.num_timesteps == straight.num_timesteps == 400
    assert first_returns + resumed_returns == straight_returns[:len(first_returns) +
                                                               len(resumed_returns)]
    assert_same_parameters(straight, resumed)
