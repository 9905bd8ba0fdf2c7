"""Port of Stable-Baselines3's tests/test_deterministic.py: the same seed gives the same
training and the same actions and rewards afterwards."""

from __future__ import annotations

import numpy as np
import pytest

from rlbase import A2C, DQN, PPO, SAC, TD3

N_STEPS_TRAINING = 500
SEED = 0


@pytest.mark.parametrize("algo", [A2C, DQN, pytest.param(PPO, marks=pytest.mark.slow),
                                  pytest.param(SAC, marks=pytest.mark.slow),
                                  pytest.param(TD3, marks=pytest.mark.slow)])
def test_deterministic_training_common(algo):
    results: list[list] = [[], []]
    rewards: list[list] = [[], []]
    kwargs: dict = {"policy_kwargs": dict(net_arch=[64])}
    env_id = "Pendulum-v1"
    if algo in [TD3, SAC]:
        # SB3 adds NormalActionNoise(0, 0.1) here; rlbase's TD3 explores with its own
        # Gaussian noise (action_noise is not taken by these classes in rlbase).
        kwargs.update({"learning_starts": 100, "train_freq": 4})
    elif algo is DQN:
        env_id = "CartPole-v1"
        kwargs.update({"learning_starts": 100, "target_update_interval": 100})
    elif algo is PPO:
        kwargs.update({"n_steps": 64, "n_epochs": 4})
    for i in range(2):
        model = algo("MlpPolicy", env_id, seed=SEED, **kwargs)
        model.learn(N_STEPS_TRAINING)
        env = model.get_env()
        obs = env.reset()
        for _ in range(100):
            action, _ = model.predict(obs, deterministic=False)
            obs, reward, _, _, _ = env.step(action)
            results[i].append(action)
            rewards[i].append(reward)
    assert sum(results[0]) == sum(results[1]), results
    assert sum(rewards[0]) == sum(rewards[1]), rewards
    assert np.array_equal(np.asarray(results[0]), np.asarray(results[1]))
