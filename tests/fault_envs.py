"""Envs that fail on purpose, for the reliability tests (importing this registers them)."""

from __future__ import annotations

import os
import time

import gymnasium as gym
import numpy as np


class FaultyEnv(gym.Env):
    """A 2-observation, 2-action env whose copy ``bad_index`` misbehaves at step ``at``.

    mode: 'raise' (ValueError), 'exit' (the process exits with code 7), 'hang' (sleeps),
        'nan_reward', 'nan_obs', 'huge_reward' (1e30 from step ``at`` on: a finite reward whose
        value loss overflows), 'ok'.
    """

    observation_space = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, index: int = 0, mode: str = "ok", bad_index: int = 1, at: int = 3):
        self.index, self.mode, self.bad_index, self.at = index, mode, bad_index, at
        self.t = 0
        self.total = 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.uniform(-1, 1, 2).astype(np.float32), {}

    def step(self, action):
        self.t += 1
        self.total += 1
        obs = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        reward = 1.0 if action == (obs[0] > 0) else 0.0
        if self.index == self.bad_index and self.total >= self.at:
            if self.mode == "raise":
                raise ValueError(f"env exploded at step {self.total}")
            if self.mode == "exit":
                os._exit(7)
            if self.mode == "hang":
                time.sleep(3600)
            if self.mode == "nan_reward":
                reward = float("nan")
            if self.mode == "nan_obs":
                obs[1] = np.inf
            if self.mode == "huge_reward":
                reward = 1e30
        return obs, reward, False, self.t >= 20, {}


gym.register("FaultyNanReward-v0", entry_point=lambda **kw: FaultyEnv(1, "nan_reward", 1, 50))


class HangingEnv(FaultyEnv):
    """Every copy's ``step()`` never returns from env step ``at`` on (a simulator stuck in a
    deadlock). Just before it hangs, it creates the file named by ``$RLBASE_TEST_HANG_MARK``
    (when set), so a test knows training is under way and the workers are stuck."""

    def __init__(self, at: int = 20):
        super().__init__(0, "ok", 0, at)

    def step(self, action):
        if self.total + 1 >= self.at:
            mark = os.environ.get("RLBASE_TEST_HANG_MARK")
            if mark:
                with open(mark, "a") as f:
                    f.write(f"{os.getpid()}\n")
            while True:  # time.sleep in a loop: nothing short of SIGKILL gets it out
                time.sleep(3600)
        return super().step(action)


gym.register("FaultyHang-v0", entry_point=lambda **kw: HangingEnv(**kw))


class HangingBoxEnv(HangingEnv):
    """:class:`HangingEnv` with a one-dimensional Box action (for DDPG, TD3, SAC)."""

    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def step(self, action):
        return super().step(int(np.asarray(action).reshape(-1)[0] > 0))


gym.register("FaultyHangBox-v0", entry_point=lambda **kw: HangingBoxEnv(**kw))


class HangingConstructor(FaultyEnv):
    """An env whose constructor never returns (a simulator waiting on a license server):
    everywhere, or with ``workers_only`` only in env worker processes (the main process's copy,
    made to read the spaces, is fine). Writes ``$RLBASE_TEST_HANG_MARK`` before it hangs."""

    def __init__(self, workers_only: bool = False):
        import multiprocessing

        super().__init__()
        if workers_only and multiprocessing.parent_process() is None:
            return
        mark = os.environ.get("RLBASE_TEST_HANG_MARK")
        if mark:
            with open(mark, "a") as f:
                f.write(f"{os.getpid()}\n")
        while True:
            time.sleep(3600)


gym.register("FaultyHangingConstructor-v0",
             entry_point=lambda **kw: HangingConstructor(**kw))


class StuckSetter(FaultyEnv):
    """Setting its ``stuck`` attribute never returns (a simulator locked while reconfigured)."""

    @property
    def stuck(self) -> int:
        return 0

    @stuck.setter
    def stuck(self, value: int) -> None:
        while True:
            time.sleep(3600)
