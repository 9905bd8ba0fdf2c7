"""AleVecEnv: Atari emulators stepped in C++ threads (``ale_py.vector_env.AtariVectorEnv``).

The emulators run the same DeepMind preprocessing as ``atari_wrappers.wrap_deepmind`` (no-op
starts, max-pooled 4-frame skip, 84x84 grayscale, frame stacking) in ale-py's C++ threads: a
step sends every game its action, then collects the results, with no pipe round trip per env.
What ale-py does not do the way rlbase needs, this class does:

- frames come channels last, ``(84, 84, 4)`` uint8, like the SubprocVecEnv path;
- a lost life ends the learner's episode (``terminated``) but not the game (DeepMind's
  episodic life; ale-py's own ``episodic_life`` restarts the whole game instead);
- the presses wrap_deepmind makes inside ``reset`` are made here too, as steps of the game
  alone that the agent never sees: a NOOP step after a lost life (``EpisodicLife``), then, in
  games with a FIRE action, a FIRE step after every lost life and every game start
  (``FireReset``; ale-py's own fire reset presses FIRE for one frame before the no-ops). So
  the observation after a lost life is already the served one, every action the agent sends
  is the one executed, and both paths give the same transitions (frame for frame with no-op
  starts and sticky actions off: the two draw those from different random generators);
- rewards are sign-clipped for training while ``info["episode"]`` carries the real, unclipped
  score of each whole game (the presses above included), as ``GameScore`` does on the other
  path.

Each game is its own one-game ``AtariVectorEnv`` with one thread: ale-py steps the games of a
vector env only all together, and those presses must step one game alone.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, NamedTuple, Sequence

import gymnasium as gym
import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env.base import VecEnv, VecStepResult


def ale_game_name(env_id: str) -> str:
    """``PongNoFrameskip-v4`` / ``ALE/Pong-v5`` -> ``pong``; ``MsPacman...`` -> ``ms_pacman``."""
    match = re.fullmatch(r"ALE/([A-Za-z0-9]+)-v\d+|([A-Za-z0-9]+)NoFrameskip-v\d+", env_id)
    if match is None:
        # Pong-v0/-v4 skip 2-4 frames at random (v0: sticky actions too): the emulator here
        # skips 4 itself, so training them here would be another env than the id says.
        raise RLBaseError(f"'{env_id}' is not an Atari id of the form GameNoFrameskip-v4 or "
                          "ALE/Game-v5 (ids such as Pong-v4 skip frames themselves): use "
                          "its NoFrameskip-v4 or ALE/-v5 form")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", match.group(1) or match.group(2)).lower()


def ale_vector_available() -> bool:
    try:
        from ale_py.vector_env import AtariVectorEnv  # noqa: F401
    except ImportError:
        return False
    return True


class _GameStep(NamedTuple):
    """What one emulator step of one game gave."""

    reward: float
    terminated: bool  # the game is over, or (with episodic life) a life was lost
    truncated: bool
    lives: int
    episode: dict[str, Any] | None  # the game's score when the step ended it (and restarted it)
    final_obs: np.ndarray | None  # (stack, height, width) when terminated or truncated


class AleVecEnv(VecEnv):
    """``num_envs`` preprocessed Atari games stepped in ale-py's C++ threads.

    :param env_id: a ``*NoFrameskip-v4`` or ``ALE/*-v5`` id.
    :param episode_life: end the learner's episode at every lost life (training only).
    :param clip_rewards: sign-clip the training reward (the game score stays unclipped).
    :param fire_reset: press FIRE after every game start and lost life (games with FIRE).
    :param repeat_action_probability: sticky actions; default 0 for v4 ids, 0.25 for v5 ids
        (what each family means in gymnasium's registry).
    """

    def __init__(self, env_id: str, num_envs: int, episode_life: bool = True,
                 clip_rewards: bool = True, fire_reset: bool = True, noop_max: int = 30,
                 frame_skip: int = 4, screen_size: int = 84, frame_stack: int = 4,
                 repeat_action_probability: float | None = None,
                 full_action_space: bool = False, max_episode_frames: int = 108_000):
        from ale_py.vector_env import AtariVectorEnv  # the atari extra

        if repeat_action_probability is None:
            repeat_action_probability = 0.25 if env_id.startswith("ALE/") else 0.0
        game = ale_game_name(env_id)
        self.emulators = [AtariVectorEnv(
            game, 1, num_threads=1, frameskip=frame_skip, stack_num=frame_stack,
            img_height=screen_size, img_width=screen_size, grayscale=True, maxpool=True,
            noop_max=noop_max, use_fire_reset=False, episodic_life=False,
            life_loss_info=episode_life, reward_clipping=False,
            repeat_action_probability=repeat_action_probability,
            full_action_space=full_action_space,
            max_num_frames_per_episode=max_episode_frames, autoreset_mode="SameStep")
            for _ in range(num_envs)]
        observation_space = gym.spaces.Box(0, 255, (screen_size, screen_size, frame_stack),
                                           np.uint8)
        super().__init__(num_envs, observation_space, self.emulators[0].single_action_space)
        self.frame_skip = frame_skip
        self.clip_rewards = clip_rewards
        meanings = self.get_action_meanings()
        self._noop = meanings.index("NOOP")
        self._fire: int | None = meanings.index("FIRE") \
            if fire_reset and "FIRE" in meanings else None
        self._seeds: list[int] | None = None
        self._actions = np.zeros(num_envs, dtype=np.int32)
        self._strength = np.ones(1, dtype=np.float32)  # paddle strength: full, as gymnasium's
        self._obs = np.zeros((num_envs, frame_stack, screen_size, screen_size), np.uint8)
        self._scores = np.zeros(num_envs)
        self._lengths = np.zeros(num_envs, dtype=np.int64)
        self._frames = np.zeros(num_envs, dtype=np.int64)

    def seed(self, seed: int | Sequence[int] | None = None) -> None:
        if seed is None or isinstance(seed, (int, np.integer)):
            self._seeds = None if seed is None else \
                [int(seed) + i for i in range(self.num_envs)]
        else:
            self._seeds = [int(s) for s in seed]

    def reset(self) -> np.ndarray:
        for i, emulator in enumerate(self.emulators):
            obs, info = emulator.reset(seed=None if self._seeds is None else self._seeds[i])
            self._obs[i] = obs[0]
            self._frames[i] = info["episode_frame_number"][0]
        self._seeds = None  # seed once; later games continue the emulators' own streams
        self._scores[:] = 0.0
        self._lengths[:] = 0
        if self._fire is not None:
            self._press({i: [self._fire] for i in range(self.num_envs)}, None)
        return _channels_last(self._obs)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, dtype=np.int32).reshape(self.num_envs)

    def step_wait(self) -> VecStepResult:
        steps = self._step(range(self.num_envs), self._actions)
        rewards = np.array([step.reward for step in steps], dtype=np.float32)
        terminated = np.array([step.terminated for step in steps])
        truncated = np.array([step.truncated for step in steps])
        infos: list[dict[str, Any]] = []
        presses: dict[int, list[int]] = {}
        for i, step in enumerate(steps):
            info: dict[str, Any] = {"lives": step.lives}
            if step.final_obs is not None:
                info["final_observation"] = np.moveaxis(step.final_obs, 0, -1).copy()
            if step.episode is not None:  # the game is over and already restarted
                info["episode"] = step.episode
                # A game over is always the end of an episode, even when the lives say no.
                terminated[i] = not step.truncated
                if self._fire is not None:
                    presses[i] = [self._fire]  # FireReset
            elif step.terminated:  # a lost life: EpisodicLife's NOOP, then FireReset's FIRE
                presses[i] = [self._noop] if self._fire is None else [self._noop, self._fire]
            infos.append(info)
        if presses:
            self._press(presses, infos)
        if self.clip_rewards:
            rewards = np.sign(rewards)
        return _channels_last(self._obs), rewards, terminated, truncated, infos

    def _press(self, presses: dict[int, list[int]],
               infos: list[dict[str, Any]] | None) -> None:
        """Make each game's presses in order, as steps of those games alone.

        They are what wrap_deepmind's ``FireReset(EpisodicLife(...)).reset`` steps, also when
        a press ends something: a NOOP that ends the game (ale-py restarts it at once) is still
        followed by the FIRE; a FIRE that ends the game is followed by nothing, and one that
        loses a life by EpisodicLife's NOOP alone (FireReset resets once more). Their rewards
        count in the game's score, not in the agent's reward; a game they end is reported in
        ``infos`` when given.
        """
        while presses:
            games = list(presses)
            pressed = np.array([presses[i].pop(0) for i in games], dtype=np.int32)
            for i, press, step in zip(games, pressed, self._step(games, pressed)):
                if step.episode is not None:
                    if infos is not None:
                        infos[i].setdefault("episode", step.episode)
                elif step.terminated and press == self._fire:
                    presses[i] = [self._noop]
                if not presses[i]:
                    del presses[i]

    def _step(self, games: Iterable[int], actions: np.ndarray) -> list[_GameStep]:
        """Step the given games once each, in parallel; their frames go to ``self._obs``."""
        games = list(games)
        for k, i in enumerate(games):  # every game starts at once, then all are collected
            self.emulators[i].ale.send(actions[k:k + 1], self._strength)
        steps = []
        for i in games:
            obs, rewards, terminated, truncated, info = self.emulators[i].ale.recv()
            self._obs[i] = obs[0]
            reward, ended = float(rewards[0]), bool(terminated[0] or truncated[0])
            frames = int(info["episode_frame_number"][0])
            self._scores[i] += reward
            self._lengths[i] += 1
            episode, final_obs = None, None
            # A game that ended was restarted in this same step: its frame counter went back.
            if ended and frames < self._frames[i] + self.frame_skip:
                episode = {"r": float(self._scores[i]), "l": int(self._lengths[i])}
                self._scores[i], self._lengths[i] = 0.0, 0
                final_obs = info["final_obs"][0]
            elif ended:  # a lost life: ale-py fills final_obs only when it restarts a game
                final_obs = obs[0]
            self._frames[i] = frames
            steps.append(_GameStep(reward, bool(terminated[0]), bool(truncated[0]),
                                   int(info["lives"][0]), episode, final_obs))
        return steps

    def close(self) -> None:
        for emulator in self.emulators:
            emulator.close()
        self.emulators = []  # frees the C++ envs and joins their threads

    def get_action_meanings(self) -> list[str]:
        return [action.name for action in self.emulators[0].ale.get_action_set()]


def _channels_last(obs: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(obs, 1, -1))
