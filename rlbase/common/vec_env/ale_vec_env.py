"""AleVecEnv: Atari emulators stepped in C++ threads (``ale_py.vector_env.AtariVectorEnv``).

The emulators run the same DeepMind preprocessing as ``atari_wrappers.wrap_deepmind`` (no-op
starts, max-pooled 4-frame skip, fire on reset, 84x84 grayscale, 4 stacked frames) inside
ale-py's thread pool, so one ``step`` is one call into C++ instead of a round trip through a
pipe per env. What ale-py does not do the way rlbase needs, this class does in numpy:

- frames come channels last, ``(84, 84, 4)`` uint8, like the SubprocVecEnv path;
- a lost life ends the learner's episode (``terminated``) but not the game (DeepMind's
  episodic life; ale-py's own ``episodic_life`` restarts the whole game instead), and in
  games with a FIRE action the next step presses FIRE in place of the agent's action, as
  DeepMind's fire-on-reset does after every lost life (ale-py fires only at a game's start);
- rewards are sign-clipped for training while ``info["episode"]`` carries the real, unclipped
  score of each whole game, as ``GameScore`` does on the other path.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import gymnasium as gym
import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env.base import VecEnv, VecStepResult


def ale_game_name(env_id: str) -> str:
    """``PongNoFrameskip-v4`` / ``ALE/Pong-v5`` -> ``pong``; ``MsPacman...`` -> ``ms_pacman``."""
    match = re.fullmatch(r"(?:ALE/)?([A-Za-z0-9]+?)(?:NoFrameskip)?-v\d+", env_id)
    if match is None:
        raise RLBaseError(f"'{env_id}' is not an Atari id of the form GameNoFrameskip-v4 or "
                          "ALE/Game-v5")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", match.group(1)).lower()


def ale_vector_available() -> bool:
    try:
        from ale_py.vector_env import AtariVectorEnv  # noqa: F401
    except ImportError:
        return False
    return True


class AleVecEnv(VecEnv):
    """``num_envs`` preprocessed Atari games in one ale-py vector env.

    :param env_id: a ``*NoFrameskip-v4`` or ``ALE/*-v5`` id.
    :param episode_life: end the learner's episode at every lost life (training only).
    :param clip_rewards: sign-clip the training reward (the game score stays unclipped).
    :param repeat_action_probability: sticky actions; default 0 for v4 ids, 0.25 for v5 ids
        (what each family means in gymnasium's registry).
    :param num_threads: emulator threads (0: one per env, capped by ale-py at the CPU count).
    """

    def __init__(self, env_id: str, num_envs: int, episode_life: bool = True,
                 clip_rewards: bool = True, fire_reset: bool = True, noop_max: int = 30,
                 frame_skip: int = 4, screen_size: int = 84, frame_stack: int = 4,
                 repeat_action_probability: float | None = None, num_threads: int = 0,
                 full_action_space: bool = False, max_episode_frames: int = 108_000):
        from ale_py.vector_env import AtariVectorEnv

        if repeat_action_probability is None:
            repeat_action_probability = 0.25 if env_id.startswith("ALE/") else 0.0
        self.frame_skip = frame_skip
        self.vector_env = AtariVectorEnv(
            ale_game_name(env_id), num_envs, num_threads=num_threads, frameskip=frame_skip,
            stack_num=frame_stack, img_height=screen_size, img_width=screen_size,
            grayscale=True, maxpool=True, noop_max=noop_max, use_fire_reset=fire_reset,
            episodic_life=False, life_loss_info=episode_life, reward_clipping=False,
            repeat_action_probability=repeat_action_probability,
            full_action_space=full_action_space,
            max_num_frames_per_episode=max_episode_frames, autoreset_mode="SameStep")
        observation_space = gym.spaces.Box(0, 255, (screen_size, screen_size, frame_stack),
                                           np.uint8)
        super().__init__(num_envs, observation_space, self.vector_env.single_action_space)
        self.clip_rewards = clip_rewards
        self.fire_after_lost_life = fire_reset and episode_life and "FIRE" in \
            self.get_action_meanings()
        self._fire = self.get_action_meanings().index("FIRE") if self.fire_after_lost_life \
            else 0
        self._serve = np.zeros(num_envs, dtype=bool)  # envs that lost a life last step
        self._seed: int | None = None
        self._actions: np.ndarray | None = None
        self._scores = np.zeros(num_envs)
        self._lengths = np.zeros(num_envs, dtype=np.int64)
        self._frames = np.zeros(num_envs, dtype=np.int64)

    def seed(self, seed: int | Sequence[int] | None = None) -> None:
        if seed is not None and not isinstance(seed, (int, np.integer)):
            seed = int(seed[0])  # ale-py seeds env i with seed + i
        self._seed = None if seed is None else int(seed)

    def reset(self) -> np.ndarray:
        obs, info = self.vector_env.reset(seed=self._seed)
        self._seed = None  # seed once; later games continue the emulators' own streams
        self._scores[:] = 0.0
        self._lengths[:] = 0
        self._frames[:] = info["episode_frame_number"]
        self._serve[:] = False
        return _channels_last(obs)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.array(actions, dtype=np.int32).reshape(self.num_envs)
        self._actions[self._serve] = self._fire

    def step_wait(self) -> VecStepResult:
        obs, rewards, terminated, truncated, info = self.vector_env.step(self._actions)
        rewards = np.asarray(rewards, dtype=np.float64)
        self._scores += rewards
        self._lengths += 1
        frames = info["episode_frame_number"]
        # A game that ended was reset in this same step: its frame counter went back.
        game_over = frames < self._frames + self.frame_skip
        self._frames = frames.copy()
        infos: list[dict[str, Any]] = [{"lives": int(lives)} for lives in info["lives"]]
        ended = np.logical_or(terminated, truncated)
        if ended.any():
            final = _channels_last(info["final_obs"])
            for i in np.flatnonzero(ended):
                infos[i]["final_observation"] = final[i]
        for i in np.flatnonzero(game_over):
            infos[i]["episode"] = {"r": float(self._scores[i]), "l": int(self._lengths[i])}
            self._scores[i], self._lengths[i] = 0.0, 0
        # A game over is always the end of an episode, even when the life counter says no.
        terminated = np.logical_or(terminated, game_over & ~truncated)
        if self.fire_after_lost_life:
            self._serve = terminated & ~game_over
        if self.clip_rewards:
            rewards = np.sign(rewards)
        return _channels_last(obs), rewards.astype(np.float32), terminated, truncated, infos

    def close(self) -> None:
        self.vector_env.close()

    def get_action_meanings(self) -> list[str]:
        return [action.name for action in self.vector_env.ale.get_action_set()]


def _channels_last(obs: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(obs, 1, -1))
