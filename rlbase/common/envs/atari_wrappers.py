"""DeepMind-style Atari preprocessing, assembled from gymnasium's wrappers.

gymnasium's ``AtariPreprocessing`` does the no-op starts, 4-frame max-and-skip, 84x84
grayscale; this module adds what it lacks (episodic life as DeepMind meant it, fire on reset,
sign-clipped rewards, full-game scores) and stacks 4 frames across the vector env
(``VecFrameStack``, channels last). Frames stay uint8 all the way to the network.
ROMs ship inside ``ale-py``: nothing is downloaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import gymnasium as gym
import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.misc_util import env_seed
from rlbase.common.mpi_util import mpi_rank
from rlbase.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv
from rlbase.common.vec_env.ale_vec_env import AleVecEnv, ale_vector_available
from rlbase.common.vec_env.vec_frame_stack import VecFrameStack

if TYPE_CHECKING:
    from ale_py import AtariEnv


class GameScore(gym.Wrapper):
    """Puts the whole game's unclipped score in ``info["episode"]`` when the game is over.

    Sits below the training wrappers: episodic life ends episodes at every lost life and
    reward clipping changes the reward, but results tables compare full-game scores.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._return, self._length = 0.0, 0

    def reset(self, **kwargs: Any):
        self._return, self._length = 0.0, 0
        return self.env.reset(**kwargs)

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._return += float(reward)
        self._length += 1
        if terminated or truncated:
            info = dict(info, episode={"r": self._return, "l": self._length})
        return obs, reward, terminated, truncated, info


class EpisodicLife(gym.Wrapper):
    """A lost life ends the episode for the learner, but only a game over resets the game.

    On the reset after a lost life the emulator keeps going (one no-op step), so value
    estimates learn that losing a life is bad without the agent replaying the game's start.
    ``AleVecEnv`` makes the same presses as this reset and ``FireReset``'s: change them together.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._lives = 0
        self._game_over = True

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._game_over = terminated or truncated
        lives = _ale_env(self.env).ale.lives()
        if 0 < lives < self._lives:
            terminated = True
        self._lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs: Any):
        if self._game_over:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:  # the no-op ended the game after all
                obs, info = self.env.reset(**kwargs)
        self._lives = _ale_env(self.env).ale.lives()
        return obs, info


class FireReset(gym.Wrapper):
    """Press FIRE after every reset, for games that wait for it (Breakout, Pong...).

    Wrapped around ``EpisodicLife``, that is after every game start and every lost life: these
    presses are steps of the env, not the agent's actions (its next action runs as sent).
    """

    def reset(self, **kwargs: Any):
        self.env.reset(**kwargs)
        obs, _, terminated, truncated, info = self.env.step(1)
        if terminated or truncated:
            obs, info = self.env.reset(**kwargs)
        return obs, info


def wrap_deepmind(env: gym.Env, episode_life: bool = True, clip_rewards: bool = True,
                  fire_reset: bool = True, noop_max: int = 30, frame_skip: int = 4,
                  screen_size: int = 84) -> gym.Env:
    """DeepMind preprocessing of one Atari env made with ``frameskip=1`` (frame stacking is
    done across the vector env). ``episode_life`` and ``clip_rewards`` are for training only.
    """
    env = gym.wrappers.AtariPreprocessing(env, noop_max=noop_max, frame_skip=frame_skip,
                                          screen_size=screen_size, grayscale_obs=True,
                                          grayscale_newaxis=True, scale_obs=False)
    env = GameScore(env)
    if episode_life:
        env = EpisodicLife(env)
    if fire_reset and "FIRE" in _ale_env(env).get_action_meanings():
        env = FireReset(env)
    if clip_rewards:
        env = gym.wrappers.TransformReward(env, lambda r: float(np.sign(float(r))))
    return env


def make_atari(env_id: str, env_kwargs: dict[str, Any] | None = None) -> gym.Env:
    """The raw emulator with no frame skipping (``*NoFrameskip-v4`` or ``ALE/*-v5``)."""
    import ale_py  # optional: the atari extra

    gym.register_envs(ale_py)
    kwargs = dict(env_kwargs or {})
    if env_id.startswith("ALE/"):
        kwargs.setdefault("frameskip", 1)  # v5 skips 4 frames itself; the wrapper does it
    elif "NoFrameskip" not in env_id:
        raise RLBaseError(f"Atari id '{env_id}' skips frames itself; use its *NoFrameskip-v4 "
                          "or ALE/*-v5 form")
    if kwargs.get("frameskip", 1) != 1:
        raise RLBaseError(f"frameskip={kwargs['frameskip']} is not allowed with the DeepMind "
                          "preprocessing (it skips 4 frames itself): use frameskip=1")
    return gym.make(env_id, **kwargs)


def make_atari_vec_env(env_id: str, num_env: int, seed: int | None,
                       wrapper_kwargs: dict[str, Any], env_kwargs: dict[str, Any],
                       vec_env: str = "auto", frame_stack: int = 4) -> VecEnv:
    """``num_env`` preprocessed Atari envs with 4 stacked frames (channels last).

    vec_env: 'ale' steps ale-py's emulators in C++ threads (``AleVecEnv``); 'subproc' one
    process per env; 'dummy' all in this process; 'auto' is 'ale' when ale-py has its vector
    env and nothing asks for rendered frames, else 'subproc'.
    """
    # ale-py's vector env renders no frames and takes only these of gymnasium's env kwargs.
    ale_kwargs = {"repeat_action_probability", "full_action_space"}
    unsupported = sorted(k for k in env_kwargs if k not in ale_kwargs)
    if vec_env == "auto":
        vec_env = "ale" if ale_vector_available() and not unsupported else "subproc"
    if vec_env == "ale":
        if unsupported:
            raise RLBaseError(f"vec_env 'ale' does not take env_kwargs {unsupported} "
                              "(videos need render_mode): use vec_env 'subproc'")
        allowed = {"episode_life", "clip_rewards", "fire_reset", "noop_max", "frame_skip",
                   "screen_size"}  # wrap_deepmind's keywords, as AleVecEnv takes them
        unknown = sorted(set(wrapper_kwargs) - allowed)
        if unknown:
            raise RLBaseError(f"unknown Atari wrapper keyword(s) {unknown}; allowed: "
                              f"{sorted(allowed)}")
        # Frames are stacked here, not by ale-py, so that both paths stack (and restart stacks
        # at lost lives) alike and replay buffers find the VecFrameStack to store frames once.
        ale = AleVecEnv(env_id, num_env, frame_stack=1,
                        repeat_action_probability=env_kwargs.get("repeat_action_probability"),
                        full_action_space=bool(env_kwargs.get("full_action_space", False)),
                        **wrapper_kwargs)
        return VecFrameStack(ale, frame_stack) if frame_stack > 1 else ale
    rank = mpi_rank()

    def env_fn(index: int) -> Callable[[], gym.Env]:
        def make() -> gym.Env:
            env = wrap_deepmind(make_atari(env_id, env_kwargs), **wrapper_kwargs)
            seed_i = env_seed(seed, index, rank)
            if seed_i is not None:
                env.action_space.seed(seed_i)
            return env
        return make

    fns = [env_fn(i) for i in range(num_env)]
    venv: VecEnv = SubprocVecEnv(fns) if num_env > 1 and vec_env != "dummy" \
        else DummyVecEnv(fns)
    return VecFrameStack(venv, frame_stack) if frame_stack > 1 else venv


def _ale_env(env: gym.Env) -> AtariEnv:
    """The ale-py env under ``env``'s wrappers."""
    import ale_py  # optional: the atari extra

    inner = env.unwrapped
    if not isinstance(inner, ale_py.env.AtariEnv):
        raise TypeError(f"expected an ale-py Atari env, got {type(inner).__name__}")
    return inner
