"""Exploration noise for DDPG: action-space noise (Gaussian, Ornstein-Uhlenbeck) and adaptive
parameter-space noise, chosen by a ``noise_type`` string such as ``'adaptive-param_0.2'``,
``'normal_0.1'``, ``'ou_0.2'``, ``'none'`` or a comma-separated combination
(``'adaptive-param_0.2,ou_0.1'``).

Action noise is vectorized: one call gives a ``[num_envs, num_actions]`` row per env, and every
env has its own process (an Ornstein-Uhlenbeck state each), restarted when its episode ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rlbase.common.errors import RLBaseError

NOISE_FORMS = "'none', 'adaptive-param_S', 'normal_S', 'ou_S' (S a positive number) or a " \
              "comma-separated combination such as 'adaptive-param_0.2,ou_0.1'"


class ActionNoise:
    """Noise added to the actor's actions, one independent process per env."""

    def __call__(self) -> np.ndarray:
        """The next noise of every env: ``[num_envs, num_actions]``."""
        raise NotImplementedError

    def reset(self, envs: Sequence[int] | np.ndarray | None = None) -> None:
        """Restart the processes of ``envs`` (None: all), at the start of their episodes."""

    def state(self, prefix: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """What continuing exactly needs (for checkpoints): JSON data and arrays."""
        return {}, {}

    def set_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray], prefix: str
                  ) -> None:
        """Inverse of :meth:`state`."""


def _set_rng(rng: np.random.Generator, state: Any) -> None:
    try:
        rng.bit_generator.state = state
    except (KeyError, TypeError, ValueError) as exc:
        raise RLBaseError(f"malformed noise generator state in checkpoint ({exc})") from exc


def _array(arrays: dict[str, np.ndarray], key: str, shape_tail: tuple) -> np.ndarray:
    value = arrays.get(key)
    if value is None or value.shape[value.ndim - len(shape_tail):] != shape_tail:
        raise RLBaseError(f"checkpoint array {key} is missing or has shape "
                          f"{None if value is None else value.shape}, this run needs "
                          f"(..., {', '.join(map(str, shape_tail))}): other noise settings "
                          "or another number of envs")
    return value


class NormalActionNoise(ActionNoise):
    """Independent Gaussian noise N(mu, sigma^2) at every step, for every env."""

    BLOCK = 1024  # steps drawn at once: one numpy call per step costs more than the draw

    def __init__(self, mu: np.ndarray, sigma: np.ndarray, rng: np.random.Generator,
                 num_envs: int = 1):
        self.mu, self.sigma, self.rng = np.asarray(mu, np.float64), np.asarray(sigma), rng
        self.shape = (int(num_envs), *self.mu.shape)
        self._block, self._next = np.zeros((0, *self.shape)), 0

    def __call__(self) -> np.ndarray:
        if self._next == len(self._block):
            self._block = self.rng.normal(self.mu, self.sigma, (self.BLOCK, *self.shape))
            self._next = 0
        self._next += 1
        return self._block[self._next - 1]

    def state(self, prefix: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        # The unused rest of the block is part of the stream: without it a resumed run draws
        # other numbers.
        return ({"rng": self.rng.bit_generator.state, "next": self._next},
                {f"{prefix}/block": self._block})

    def set_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray], prefix: str
                  ) -> None:
        block = _array(arrays, f"{prefix}/block", self.shape)
        _set_rng(self.rng, meta["rng"])
        self._block, self._next = block.copy(), int(meta["next"])

    def __repr__(self) -> str:
        return f"NormalActionNoise(mu={self.mu}, sigma={self.sigma}, num_envs={self.shape[0]})"


class OrnsteinUhlenbeckActionNoise(ActionNoise):
    """Temporally correlated noise, one process per env:
    ``x += theta (mu - x) dt + sigma sqrt(dt) N(0, 1)``.

    Each call draws ``standard_normal([num_envs, num_actions])`` once. The stationary standard
    deviation is ``sigma * sqrt(dt / (1 - (1 - theta dt)^2))`` (about ``sigma / sqrt(2 theta)``
    for small dt), which the tests check.
    """

    def __init__(self, mu: np.ndarray, sigma: np.ndarray, rng: np.random.Generator,
                 theta: float = 0.15, dt: float = 1e-2, x0: np.ndarray | None = None,
                 num_envs: int = 1):
        self.mu, self.sigma = np.asarray(mu, np.float64), np.asarray(sigma, np.float64)
        self.theta, self.dt, self.x0, self.rng = theta, dt, x0, rng
        self.shape = (int(num_envs), *self.mu.shape)
        self.x = np.zeros(self.shape)
        self.reset()

    def __call__(self) -> np.ndarray:
        self.x = self.x + self.theta * (self.mu - self.x) * self.dt + \
            self.sigma * np.sqrt(self.dt) * self.rng.standard_normal(self.shape)
        return self.x

    def reset(self, envs: Sequence[int] | np.ndarray | None = None) -> None:
        start = np.broadcast_to(np.asarray(self.x0, np.float64) if self.x0 is not None
                                else np.zeros_like(self.mu), self.shape)
        if envs is None:
            self.x = start.copy()
        else:
            self.x[envs] = start[envs]

    def state(self, prefix: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {"rng": self.rng.bit_generator.state}, {f"{prefix}/x": self.x}

    def set_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray], prefix: str
                  ) -> None:
        x = _array(arrays, f"{prefix}/x", self.shape)
        _set_rng(self.rng, meta["rng"])
        self.x = x.astype(np.float64)

    def __repr__(self) -> str:
        return (f"OrnsteinUhlenbeckActionNoise(mu={self.mu}, sigma={self.sigma}, "
                f"num_envs={self.shape[0]})")


class SumNoise(ActionNoise):
    """Several action noises added together (``'normal_0.1,ou_0.2'``)."""

    def __init__(self, parts: Sequence[ActionNoise]):
        self.parts = list(parts)

    def __call__(self) -> np.ndarray:
        total = self.parts[0]()
        for p in self.parts[1:]:
            total = total + p()
        return total

    def reset(self, envs: Sequence[int] | np.ndarray | None = None) -> None:
        for p in self.parts:
            p.reset(envs)

    def state(self, prefix: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta: dict[str, Any] = {}
        arrays: dict[str, np.ndarray] = {}
        for i, p in enumerate(self.parts):
            meta[str(i)], part_arrays = p.state(f"{prefix}/{i}")
            arrays.update(part_arrays)
        return meta, arrays

    def set_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray], prefix: str
                  ) -> None:
        for i, p in enumerate(self.parts):
            p.set_state(meta[str(i)], arrays, f"{prefix}/{i}")


class AdaptiveParamNoiseSpec:
    """The scale of parameter-space noise, adapted so that the perturbed actor's actions lie
    about ``desired_action_stddev`` away (root mean square) from the actor's (Plappert et
    al. 2018): shrink by ``adoption_coefficient`` when farther, grow when nearer."""

    def __init__(self, initial_stddev: float = 0.1, desired_action_stddev: float = 0.1,
                 adoption_coefficient: float = 1.01):
        self.initial_stddev = float(initial_stddev)
        self.desired_action_stddev = float(desired_action_stddev)
        self.adoption_coefficient = float(adoption_coefficient)
        self.current_stddev = self.initial_stddev

    def adapt(self, distance: float) -> None:
        if distance > self.desired_action_stddev:
            self.current_stddev /= self.adoption_coefficient
        else:
            self.current_stddev *= self.adoption_coefficient

    def __repr__(self) -> str:
        return (f"AdaptiveParamNoiseSpec(initial_stddev={self.initial_stddev}, "
                f"desired_action_stddev={self.desired_action_stddev})")


def parse_noise_type(noise_type: str, num_actions: int, rng: np.random.Generator,
                     num_envs: int = 1
                     ) -> tuple[ActionNoise | None, AdaptiveParamNoiseSpec | None]:
    """The action noise (one process per env) and parameter noise a ``noise_type`` asks for."""
    if not isinstance(noise_type, str) or not noise_type.strip():
        raise RLBaseError(f"bad noise_type {noise_type!r}: use {NOISE_FORMS}")
    actions: list[ActionNoise] = []
    param: AdaptiveParamNoiseSpec | None = None
    zeros = np.zeros(num_actions)
    for part in (p.strip() for p in noise_type.split(",")):
        if part == "none":
            continue
        kind, _, value = part.rpartition("_")
        try:
            stddev = float(value)
        except ValueError:
            stddev = float("nan")
        if kind not in ("adaptive-param", "normal", "ou") or not np.isfinite(stddev) \
                or stddev <= 0:
            raise RLBaseError(f"bad noise_type {noise_type!r} (part {part!r}): use {NOISE_FORMS}")
        if kind == "adaptive-param":
            if param is not None:
                raise RLBaseError(f"bad noise_type {noise_type!r}: adaptive-param given twice")
            param = AdaptiveParamNoiseSpec(stddev, stddev)
        elif kind == "normal":
            actions.append(NormalActionNoise(zeros, stddev * np.ones(num_actions), rng,
                                             num_envs))
        else:
            actions.append(OrnsteinUhlenbeckActionNoise(zeros, stddev * np.ones(num_actions),
                                                        rng, num_envs=num_envs))
    action = actions[0] if len(actions) == 1 else SumNoise(actions) if actions else None
    return action, param
