"""Dict and Tuple observation envs for tests: an agent must read a discrete cue out of a
nested observation (with an image, vectors and distractor entries around it).

Discrete actions: reward 1 when the action equals the cue, so a policy that reads the cue
earns ``episode_length`` per episode and a random one half of that (two cues). Box actions:
reward ``-(a - target)^2`` with the target (one per cue) given in the observation, 0 at best;
a random policy in [-1, 1] earns about ``-0.58`` per step. The cue changes every step, so
nothing but the current observation predicts the reward: a few thousand steps learn it.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

IMAGE_SIZE = 8
TARGETS = (-0.5, 0.5)  # the Box-action target of each cue


class CueEnv(gym.Env):
    """A Dict (``structure="dict"``) or nested Tuple (``"tuple"``) observation holding a cue.

    dict:  {"cue": Discrete(2), "image": 8x8x1 uint8 (the cue lights the top row),
            "vector": Box(3) noise, or with Box actions [target, noise, noise]}
    tuple: (Dict{"phase": Discrete(3), "position": Box(2) noise}, image, Box(2) noise or
            [target, noise], Discrete(2) cue, MultiBinary(4) noise)

    continuous: Box(-1, 1, (1,)) actions (else Discrete(2)).
    image: include the image entry (ES takes no images).
    episode_length: steps per episode (then truncated).
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, structure: str = "dict", continuous: bool = False, image: bool = True,
                 episode_length: int = 20):
        if structure not in ("dict", "tuple"):
            raise ValueError(f"structure must be 'dict' or 'tuple', got {structure!r}")
        self.structure, self.continuous, self.image = structure, continuous, image
        self.episode_length = episode_length
        image_space = gym.spaces.Box(0, 255, (IMAGE_SIZE, IMAGE_SIZE, 1), np.uint8)
        if structure == "dict":
            entries: dict[str, gym.Space] = {
                "cue": gym.spaces.Discrete(2),
                "vector": gym.spaces.Box(-1.0, 1.0, (3,), np.float32)}
            if image:
                entries["image"] = image_space
            self.observation_space = gym.spaces.Dict(entries)
        else:
            inner = gym.spaces.Dict({"phase": gym.spaces.Discrete(3),
                                     "position": gym.spaces.Box(-1.0, 1.0, (2,), np.float32)})
            parts = [inner, image_space] if image else [inner]
            parts += [gym.spaces.Box(-1.0, 1.0, (2,), np.float32), gym.spaces.Discrete(2),
                      gym.spaces.MultiBinary(4)]
            self.observation_space = gym.spaces.Tuple(parts)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32) if continuous \
            else gym.spaces.Discrete(2)
        self.cue, self.t = 0, 0

    @property
    def target(self) -> float:
        return TARGETS[self.cue]

    def _obs(self) -> Any:
        rng = self.np_random
        vector_size = 3 if self.structure == "dict" else 2
        vector = rng.uniform(-1.0, 1.0, vector_size).astype(np.float32)
        if self.continuous:
            vector[0] = self.target
        picture = np.zeros((IMAGE_SIZE, IMAGE_SIZE, 1), np.uint8)
        picture[0] = 255 * self.cue
        if self.structure == "dict":
            obs = {"cue": self.cue, "vector": vector}
            if self.image:
                obs["image"] = picture
            return obs
        inner = {"phase": int(rng.integers(3)),
                 "position": rng.uniform(-1.0, 1.0, 2).astype(np.float32)}
        parts: list[Any] = [inner, picture] if self.image else [inner]
        parts += [vector, self.cue, rng.integers(0, 2, 4).astype(np.int8)]
        return tuple(parts)

    def reset(self, *, seed: int | None = None, options: dict | None = None
              ) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.t = 0
        self.cue = int(self.np_random.integers(2))
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        if self.continuous:
            error = float(np.asarray(action, np.float64).reshape(-1)[0]) - self.target
            reward = -error * error
        else:
            reward = float(int(action) == self.cue)
        self.t += 1
        self.cue = int(self.np_random.integers(2))
        return self._obs(), reward, False, self.t >= self.episode_length, {}


def random_return(continuous: bool, episode_length: int = 20) -> float:
    """The expected return of uniformly random actions."""
    if not continuous:
        return 0.5 * episode_length
    # E[(a - t)^2] for a ~ U(-1, 1) and t = +-0.5: Var(a) + t^2 = 1/3 + 1/4.
    return -(1.0 / 3.0 + 0.25) * episode_length
