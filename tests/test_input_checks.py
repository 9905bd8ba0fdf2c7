"""Checks every algorithm shares: learning rates must be positive, and an env that changes its
observation shape is named (env id, step, both shapes) instead of numpy's bare error."""

from __future__ import annotations

import inspect

import gymnasium as gym
import numpy as np
import pytest

from rlbase import registry
from rlbase.common.envs.make import make_vec_env
from rlbase.common.errors import RLBaseError

ENV_OF = {"ddpg": "Pendulum-v1", "sac": "Pendulum-v1", "qlearning": "FrozenLake-v1"}
# learn() arguments that are learning rates (DDPG/TD3 have one per network; TRPO's is its
# value fit's).
LEARNING_RATE_NAMES = ("lr", "actor_lr", "critic_lr", "vf_lr")


def learning_rates() -> list[tuple[str, str]]:
    """(algorithm, learning-rate argument) for every algorithm of the registry."""
    cases = []
    for alg in registry.available_algorithms():
        params = inspect.signature(registry.get_algorithm(alg).learn).parameters
        names = [n for n in LEARNING_RATE_NAMES if n in params]
        assert names, f"{alg}.learn takes no learning rate the check knows"
        cases += [(alg, name) for name in names]
    return cases


@pytest.mark.parametrize("alg,name", learning_rates())
@pytest.mark.parametrize("value", [0.0, -1e-3, lambda frac: -1e-3 * frac])
def test_every_algorithm_refuses_a_learning_rate_that_is_not_positive(alg, name, value):
    learn = registry.get_algorithm(alg).learn
    takes_schedules = "Callable" in str(registry.config_class(alg).type_hints()[name])
    if callable(value) and not takes_schedules:  # ES's rate is one number
        expected, shown = f"{alg}: {name} must be float, got", "<function"
    else:
        expected = rf"{alg}: {name} must be (> 0|in \(0, 1\]), got"
        shown = "a schedule starting at -0.001" if callable(value) else repr(float(value))
    with pytest.raises(RLBaseError, match=expected) as err:
        learn(network="mlp", env=ENV_OF.get(alg, "CartPole-v1"), total_timesteps=10, seed=0,
              **{name: value})
    assert "\n" not in str(err.value)
    assert shown in str(err.value)


def test_a_model_class_refuses_a_negative_learning_rate():
    from rlbase.compat.sb3 import PPO

    with pytest.raises(RLBaseError, match="^ppo: lr must be > 0, got -0.5$"):
        PPO("MlpPolicy", "CartPole-v1", learning_rate=-0.5)


class ShapeShifter(gym.Env):
    """Observations of shape (3,) until step 4 of each episode, then (4,)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(3, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(3 if self.t < 4 else 4, np.float32), 1.0, False, False, {}


gym.register("ShapeShifter-v0", entry_point=ShapeShifter)


@pytest.mark.parametrize("vec_env", ["dummy", "subproc"])
def test_an_observation_of_another_shape_names_the_env_the_step_and_both_shapes(vec_env):
    env = make_vec_env("ShapeShifter-v0", num_env=2, seed=0, vec_env=vec_env)
    try:
        env.reset()
        for _ in range(3):
            env.step(np.zeros(2, np.int64))
        with pytest.raises(RLBaseError) as err:
            env.step(np.zeros(2, np.int64))
    finally:
        env.close()
    message = str(err.value)
    assert "(ShapeShifter-v0) returned an observation of shape (4,) at step 4 " in message
    assert "observation space has shape (3,)" in message


@pytest.mark.parametrize("alg", ["a2c", "acktr", "ppo", "trpo"])  # ACER: its buffer check
def test_a_rollout_that_cannot_fit_is_refused_before_the_envs_reset(alg):
    """--nsteps=1e12 was numpy's 116 TiB allocation traceback at the first rollout."""
    learn = registry.get_algorithm(alg).learn
    with pytest.raises(RLBaseError, match=r"rollout of nsteps=1,000,000,000,000 x 1 env\(s\) "
                                          r"\(the nsteps given\) needs .* lower nsteps"):
        learn("mlp", make_vec_env("CartPole-v1", num_env=1, seed=0), total_timesteps=10,
              seed=0, nsteps=10**12)
