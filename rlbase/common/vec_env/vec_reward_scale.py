"""VecRewardScale: the rewards an algorithm trains on, multiplied by a constant."""

from __future__ import annotations

import numpy as np

from rlbase.common.vec_env.base import VecEnv, VecEnvWrapper, VecStepResult


class VecRewardScale(VecEnvWrapper):
    """Multiply every reward by ``scale`` (``--reward_scale``). It belongs above the
    VecMonitor, so logged and evaluated returns stay the env's own reward sums."""

    changes_rewards = True

    def __init__(self, venv: VecEnv, scale: float):
        super().__init__(venv)
        self.scale = float(scale)

    def step_wait(self) -> VecStepResult:
        obs, rewards, terminated, truncated, infos = self.venv.step_wait()
        return obs, np.asarray(rewards) * self.scale, terminated, truncated, infos
