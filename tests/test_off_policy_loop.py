"""The off-policy loop's one ``learning_starts`` rule (rlbase.common.loops.off_policy), the same
for SAC, DDPG and DQN: Stable-Baselines3's, training starts after the first vector step that
takes the env step count past ``learning_starts`` (``num_timesteps > learning_starts``), and
after that a phase follows every ``train_freq`` env steps (summed over envs).

The training calls are replaced by spies that note how many transitions the buffer holds and
how many phases are asked for, so no gradient step runs and the test is fast.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.vec_env import DummyVecEnv
from rlbase.ddpg import model as ddpg_model
from rlbase.ddpg.ddpg import learn as ddpg_learn
from rlbase.dqn import model as dqn_model
from rlbase.dqn.dqn import learn as dqn_learn
from rlbase.sac import model as sac_model
from rlbase.sac.sac import learn as sac_learn

LEARNING_STARTS = 10
TOTAL = 40
SMALL = {"num_layers": 1, "num_hidden": 8}


def sb3_updates(learning_starts: int, num_envs: int, train_freq: int, total: int
                ) -> list[tuple[int, int]]:
    """``(env steps collected, phases)`` of every training SB3's rule starts: after each
    vector step that brings ``num_timesteps`` past ``learning_starts``, one phase per
    multiple of ``train_freq`` among the step's env steps."""
    updates, collected = [], 0
    while collected < total:
        collected += num_envs
        phases = collected // train_freq - (collected - num_envs) // train_freq
        if collected > learning_starts and phases:
            updates.append((collected, phases))
    return updates


def _spy_fused(cls: type, seen: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch) -> None:
    """SAC's and DDPG's train_and_act(obs, ..., phases): notes the buffer's size and the
    phases, acts at random instead of training."""
    def train_and_act(self: Any, obs: Any, *args: Any) -> tuple[dict[str, float], np.ndarray]:
        seen.append((len(self.replay_buffer), args[-1]))
        return {}, self.random_actions()

    monkeypatch.setattr(cls, "train_and_act", train_and_act)


def _spy_dqn(seen: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch) -> None:
    """DQN's replay_update (one call per phase): notes the buffer's size, trains nothing."""
    def replay_update(self: Any, lr: float, beta: float, eps: float) -> dict[str, float]:
        stored = len(self.replay_buffer)
        if seen and seen[-1][0] == stored:  # another phase after the same vector step
            seen[-1] = (stored, seen[-1][1] + 1)
        else:
            seen.append((stored, 1))
        return {"loss": 0.0}

    monkeypatch.setattr(dqn_model.Model, "replay_update", replay_update)


def _run(alg: str, num_envs: int, train_freq: int, monkeypatch: pytest.MonkeyPatch
         ) -> list[tuple[int, int]]:
    seen: list[tuple[int, int]] = []
    env_id = "CartPole-v1" if alg == "dqn" else "Pendulum-v1"
    env = DummyVecEnv([lambda: gym.make(env_id) for _ in range(num_envs)])
    common = dict(seed=0, total_timesteps=TOTAL, learning_starts=LEARNING_STARTS,
                  train_freq=train_freq, gradient_steps=1, batch_size=4, buffer_size=100,
                  **SMALL)
    if alg == "sac":
        _spy_fused(sac_model.Model, seen, monkeypatch)
        sac_learn("mlp", env, **common)
    elif alg == "ddpg":
        _spy_fused(ddpg_model.Model, seen, monkeypatch)
        ddpg_learn("mlp", env, noise_type="none", jit_compile=False, **common)
    else:
        _spy_dqn(seen, monkeypatch)
        dqn_learn("mlp", env, best_model_interval=None, **common)
    return seen


@pytest.mark.parametrize("train_freq", [1, 4])
@pytest.mark.parametrize("num_envs", [1, 2])
@pytest.mark.parametrize("alg", ["sac", "ddpg", "dqn"])
def test_training_starts_past_learning_starts(alg, num_envs, train_freq, monkeypatch):
    """The first training phase follows the first vector step past learning_starts where a
    phase is due (1 env, train_freq 1: after 11 env steps; 2 envs: after 12), and every later
    one falls where SB3's rule puts it. SAC and DDPG run the phases owed for a vector step
    with the next step's acting (one compiled call), so the phases owed for the run's last
    step are not run; DQN runs them after the step."""
    seen = _run(alg, num_envs, train_freq, monkeypatch)
    want = sb3_updates(LEARNING_STARTS, num_envs, train_freq, TOTAL)
    assert seen[0] == want[0]
    assert seen[0][0] > LEARNING_STARTS
    if alg != "dqn":
        want = [u for u in want if u[0] < TOTAL]
    assert seen == want


def test_sb3_rule_by_hand():
    """The reference itself, on the cases the test above uses."""
    assert sb3_updates(10, 1, 1, 14) == [(11, 1), (12, 1), (13, 1), (14, 1)]
    assert sb3_updates(10, 1, 4, 20) == [(12, 1), (16, 1), (20, 1)]
    assert sb3_updates(10, 2, 1, 16) == [(12, 2), (14, 2), (16, 2)]
    assert sb3_updates(10, 2, 4, 20) == [(12, 1), (16, 1), (20, 1)]
    assert sb3_updates(0, 1, 1, 2) == [(1, 1), (2, 1)]
