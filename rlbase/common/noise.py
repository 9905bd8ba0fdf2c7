"""Action-space exploration noise (Stable-Baselines3's classes and their protocol):
``NormalActionNoise``, ``OrnsteinUhlenbeckActionNoise``, ``VectorizedActionNoise``.

``NormalActionNoise(mean, sigma)`` as a user writes it is one process whose ``noise()`` has
the shape of ``mean``. An algorithm builds its own with ``num_envs``: one independent process
per env, ``noise()`` shaped ``[num_envs, *mean.shape]``, ``reset(envs)`` restarting the envs
whose episodes ended, and ``rng`` the algorithm's seeded generator (without one, a generator
seeded from numpy's global one, so ``set_global_seeds`` makes it repeat).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rlbase.common.errors import RLBaseError


def _generator(rng: np.random.Generator | None) -> np.random.Generator:
    return rng if rng is not None else np.random.default_rng(np.random.randint(2**31 - 1))


class ActionNoise:
    """Noise added to an actor's actions (in the agent's [-1, 1] action scale)."""

    def __call__(self) -> np.ndarray:
        """The next noise (``[num_envs, num_actions]`` for an algorithm's own)."""
        raise NotImplementedError

    def reset(self, envs: Sequence[int] | np.ndarray | None = None) -> None:
        """Restart the processes of ``envs`` (None: all), at the start of their episodes."""

    def spawn(self) -> ActionNoise:
        """A new process of the same kind and settings, at its start, sharing the generator."""
        fresh = copy.copy(self)
        fresh.reset()
        return fresh

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
    """Independent Gaussian noise N(mean, sigma^2) at every step (and for every env).

    mean / sigma: arrays shaped like one action (broadcast against each other).
    rng / num_envs: see the module's doc.
    """

    BLOCK = 1024  # steps drawn at once: one numpy call per step costs more than the draw

    def __init__(self, mean: npt.ArrayLike, sigma: npt.ArrayLike,
                 dtype: npt.DTypeLike = np.float32, *, rng: np.random.Generator | None = None,
                 num_envs: int | None = None):
        self.mu, self.sigma = np.broadcast_arrays(np.asarray(mean, np.float64),
                                                  np.asarray(sigma, np.float64))
        self.dtype, self.rng = np.dtype(dtype), _generator(rng)
        self.shape = self.mu.shape if num_envs is None else (int(num_envs), *self.mu.shape)
        self._block, self._next = np.zeros((0, *self.shape)), 0

    def __call__(self) -> np.ndarray:
        if self._next == len(self._block):
            self._block = self.rng.normal(self.mu, self.sigma, (self.BLOCK, *self.shape))
            self._next = 0
        self._next += 1
        return self._block[self._next - 1].astype(self.dtype, copy=False)

    def spawn(self) -> ActionNoise:
        fresh = copy.copy(self)
        fresh._block, fresh._next = np.zeros((0, *self.shape)), 0
        return fresh

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
        return f"NormalActionNoise(mean={self.mu}, sigma={self.sigma})"


class OrnsteinUhlenbeckActionNoise(ActionNoise):
    """Temporally correlated noise (one process per env):
    ``x += theta (mean - x) dt + sigma sqrt(dt) N(0, 1)``, starting at ``initial_noise``
    (None: 0) and restarting there at ``reset``.

    Each call draws ``standard_normal(shape)`` once. The stationary standard deviation is
    ``sigma * sqrt(dt / (1 - (1 - theta dt)^2))`` (about ``sigma / sqrt(2 theta)`` for small
    dt), which the tests check.
    """

    def __init__(self, mean: npt.ArrayLike, sigma: npt.ArrayLike, theta: float = 0.15,
                 dt: float = 1e-2, initial_noise: npt.ArrayLike | None = None,
                 dtype: npt.DTypeLike = np.float32, *, rng: np.random.Generator | None = None,
                 num_envs: int | None = None):
        self.mu, self.sigma = np.broadcast_arrays(np.asarray(mean, np.float64),
                                                  np.asarray(sigma, np.float64))
        self.theta, self.dt, self.rng = float(theta), float(dt), _generator(rng)
        self.x0 = None if initial_noise is None else np.asarray(initial_noise, np.float64)
        self.dtype = np.dtype(dtype)
        self.shape = self.mu.shape if num_envs is None else (int(num_envs), *self.mu.shape)
        self.x = np.zeros(self.shape)
        self.reset()

    def __call__(self) -> np.ndarray:
        self.x = self.x + self.theta * (self.mu - self.x) * self.dt + \
            self.sigma * np.sqrt(self.dt) * self.rng.standard_normal(self.shape)
        return self.x.astype(self.dtype, copy=False)

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
        return f"OrnsteinUhlenbeckActionNoise(mean={self.mu}, sigma={self.sigma})"


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
        states = [p.state(f"{prefix}/{i}") for i, p in enumerate(self.parts)]
        return ({str(i): meta for i, (meta, _) in enumerate(states)},
                {key: array for _, arrays in states for key, array in arrays.items()})

    def set_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray], prefix: str
                  ) -> None:
        for i, p in enumerate(self.parts):
            p.set_state(meta[str(i)], arrays, f"{prefix}/{i}")


class VectorizedActionNoise(ActionNoise):
    """One copy of ``base_noise`` per env: ``noise()`` is ``[n_envs, *action shape]`` and
    ``reset(indices)`` restarts only those envs' processes."""

    def __init__(self, base_noise: ActionNoise, n_envs: int):
        if not isinstance(base_noise, ActionNoise):
            raise RLBaseError(f"base_noise must be an ActionNoise, got {base_noise!r}")
        if isinstance(n_envs, bool) or not isinstance(n_envs, (int, np.integer)) or n_envs < 1:
            raise RLBaseError(f"n_envs must be a positive integer, got {n_envs!r}")
        self.base_noise, self.n_envs = base_noise, int(n_envs)
        self.noises = [base_noise.spawn() for _ in range(self.n_envs)]

    def __call__(self) -> np.ndarray:
        return np.stack([noise() for noise in self.noises])

    def reset(self, indices: Iterable[int] | np.ndarray | None = None) -> None:
        for i in range(self.n_envs) if indices is None else indices:
            self.noises[int(i)].reset()

    def __repr__(self) -> str:
        return f"VectorizedActionNoise(base_noise={self.base_noise!r}, n_envs={self.n_envs})"
