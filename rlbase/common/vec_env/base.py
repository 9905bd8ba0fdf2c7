"""The Baselines VecEnv API, kept apart from gymnasium's vector API that implements it.

``step_wait`` returns ``(obs, rewards, terminated, truncated, infos)``: the gymnasium split of
``done`` is kept everywhere. ``infos`` is a list with one dict per env. When env ``i`` ends on a
step, ``obs[i]`` is already the first observation of its next episode (autoreset in the same
step) and ``infos[i]["final_observation"]`` holds the last observation of the episode that ended.
"""

from __future__ import annotations

import dis
import sys
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Iterator, Sequence

import gymnasium as gym
import numpy as np

from rlbase.common.errors import RLBaseError

Indices = int | Sequence[int] | None  # None: every env
VecStepResult = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]
_UNPACK_SEQUENCE = dis.opmap["UNPACK_SEQUENCE"]
_CAN_READ_CALLER = sys.implementation.name == "cpython"


class StepResult(tuple):  # type: ignore[type-arg]
    """What :meth:`VecEnv.step` returns: the five values ``(obs, rewards, terminated,
    truncated, infos)``, a tuple that refuses SB3's four-name unpacking in one line instead of
    Python's "too many values to unpack (expected 4)".

    Unpacking a tuple subclass goes through its ``__iter__``, which reads the caller's current
    instruction (CPython): ``UNPACK_SEQUENCE 4`` is the four-name form. That costs ~1 us an
    unpack, which is why rlbase's loops step with :func:`vec_step` instead."""

    __slots__ = ()

    def __iter__(self) -> Iterator[Any]:
        if _CAN_READ_CALLER:
            caller = sys._getframe(1)
            code, at = caller.f_code.co_code, caller.f_lasti
            if 0 <= at < len(code) - 1 and code[at] == _UNPACK_SEQUENCE and code[at + 1] == 4:
                raise RLBaseError("VecEnv.step returns five values as in gymnasium: write obs, "
                                  "rewards, terminated, truncated, infos = env.step(actions) "
                                  "(SB3's four-value form: dones = terminated | truncated)")
        return tuple.__iter__(self)


def vec_step(env: VecEnv, actions: np.ndarray) -> VecStepResult:
    """``env.step(actions)`` as a plain tuple (no :class:`StepResult` check): the loops' step."""
    env.step_async(actions)
    return env.step_wait()


class VecEnv(ABC):
    """A batch of ``num_envs`` environments stepped together."""

    def __init__(self, num_envs: int, observation_space: gym.Space, action_space: gym.Space):
        self.num_envs = num_envs
        self.observation_space = observation_space
        self.action_space = action_space
        self._reset_infos: list[dict[str, Any]] = [{} for _ in range(num_envs)]

    @property
    def reset_infos(self) -> list[dict[str, Any]]:
        """SB3's ``reset_infos``: each env's info from its latest reset (``reset()``, or the
        autoreset inside the step that ended its episode; ``infos`` of that step hold the
        ended episode's last info). Empty dicts where a VecEnv does not record them."""
        return self._reset_infos

    @abstractmethod
    def reset(self) -> np.ndarray:
        """Reset every env and return the batch of first observations."""

    @abstractmethod
    def step_async(self, actions: np.ndarray) -> None:
        """Send one action per env."""

    @abstractmethod
    def step_wait(self) -> VecStepResult:
        """Wait for the step sent by ``step_async``."""

    def step(self, actions: np.ndarray) -> StepResult:
        """Step every env: ``obs, rewards, terminated, truncated, infos``, five values as in
        gymnasium. SB3's VecEnv returns four (``dones = terminated | truncated``): SB3's
        ``obs, rewards, dones, infos = env.step(a)`` raises an RLBaseError saying so (see
        :class:`StepResult`). rlbase's own loops step with :func:`vec_step`, which skips that
        check; a VecEnv subclass overrides ``step_async`` and ``step_wait``, as in SB3."""
        return StepResult(vec_step(self, actions))

    def seed(self, seed: int | Sequence[int] | None = None) -> None:
        """Seed the envs at their next ``reset``: env ``i`` gets ``seed + i``."""

    def close(self) -> None:
        """Release the envs' resources."""

    def render(self) -> np.ndarray | None:
        """Return an RGB frame of the first env (envs made with ``render_mode='rgb_array'``)."""
        return None

    def env_method(self, name: str, *args: Any, indices: Indices = None,
                   **kwargs: Any) -> list[Any]:
        """Call a method of the underlying envs (all, or those of ``indices``) and return
        the results."""
        raise NotImplementedError

    def get_attr(self, name: str, indices: Indices = None) -> list[Any]:
        """An attribute of the underlying envs (all, or those of ``indices``), looked up
        through their gymnasium wrappers."""
        raise NotImplementedError

    def set_attr(self, name: str, value: Any, indices: Indices = None) -> None:
        """Set an attribute of the underlying envs (all, or those of ``indices``)."""
        raise NotImplementedError

    def has_attr(self, name: str) -> bool:
        """SB3's ``has_attr``: whether every underlying env has ``name`` (looked up through
        its gymnasium wrappers); asking never fails."""
        raise NotImplementedError

    def env_is_wrapped(self, wrapper_class: type, indices: Indices = None) -> list[bool]:
        """Whether each underlying env (all, or those of ``indices``) is wrapped in
        ``wrapper_class``, a gymnasium wrapper."""
        raise NotImplementedError

    @property
    def render_fps(self) -> float | None:
        """Frames per second of the envs' renderings (None: unknown)."""
        return None

    @property
    def unwrapped(self) -> "VecEnv":
        return self

    def __enter__(self) -> "VecEnv":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class VecEnvWrapper(VecEnv):
    """Base for wrappers: forwards everything to ``venv`` unless overridden.

    changes_rewards: the rewards it hands on are not the env's own (normalized, scaled,
    clipped). A wrapper of yours that changes them says so, and rlbase keeps the episode
    monitor below it: logged and evaluated returns stay the env's own reward sums.
    """

    changes_rewards: ClassVar[bool] = False

    def __init__(self, venv: VecEnv, observation_space: gym.Space | None = None,
                 action_space: gym.Space | None = None):
        self.venv = venv
        super().__init__(venv.num_envs, observation_space or venv.observation_space,
                         action_space or venv.action_space)

    def reset(self) -> np.ndarray:
        return self.venv.reset()

    def step_async(self, actions: np.ndarray) -> None:
        self.venv.step_async(actions)

    def step_wait(self) -> VecStepResult:
        return self.venv.step_wait()

    def seed(self, seed: int | Sequence[int] | None = None) -> None:
        self.venv.seed(seed)

    def close(self) -> None:
        self.venv.close()

    def render(self) -> np.ndarray | None:
        return self.venv.render()

    def env_method(self, name: str, *args: Any, indices: Indices = None,
                   **kwargs: Any) -> list[Any]:
        return self.venv.env_method(name, *args, indices=indices, **kwargs)

    def get_attr(self, name: str, indices: Indices = None) -> list[Any]:
        return self.venv.get_attr(name, indices)

    def set_attr(self, name: str, value: Any, indices: Indices = None) -> None:
        self.venv.set_attr(name, value, indices)

    def env_is_wrapped(self, wrapper_class: type, indices: Indices = None) -> list[bool]:
        return self.venv.env_is_wrapped(wrapper_class, indices)

    def has_attr(self, name: str) -> bool:
        return self.venv.has_attr(name)

    @property
    def reset_infos(self) -> list[dict[str, Any]]:
        return self.venv.reset_infos

    @property
    def render_fps(self) -> float | None:
        return self.venv.render_fps

    @property
    def unwrapped(self) -> VecEnv:
        return self.venv.unwrapped

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "venv":
            raise AttributeError(name)
        return getattr(self.venv, name)


def find_wrapper(venv: VecEnv, cls: type) -> VecEnv | None:
    """The first wrapper of type ``cls`` in the chain ``venv, venv.venv, ...``, or None."""
    current: VecEnv | None = venv
    while current is not None:
        if isinstance(current, cls):
            return current
        current = current.venv if isinstance(current, VecEnvWrapper) else None
    return None
