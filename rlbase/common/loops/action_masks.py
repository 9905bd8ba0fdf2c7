"""Where action masks come from, for acting, rollouts and evaluation.

A mask says which actions are valid now: ``[num_envs, logits]`` booleans (Discrete: one per
action; MultiDiscrete: the per-dimension masks concatenated; MultiBinary: per dimension whether
0 and whether 1 may be taken, as sb3-contrib takes them). Two
sources, the ``action_masks`` setting of A2C, PPO, DQN and QR-DQN choosing between them:

- ``"method"``: each env's ``action_masks()`` method (sb3-contrib's protocol), called through
  the VecEnv's ``env_method`` before every step (after the step's autoreset, so an env that
  just ended gives its new episode's mask);
- ``"info"``: ``info["action_mask"]`` (gymnasium's convention: Taxi), from ``reset_infos``
  after a reset or an episode's end, else from the step's info;
- ``True``: the method if the envs have it, else the info; neither is an error;
- ``"auto"``: the same, and no masking when neither is there; ``False``: no masking.
"""

from __future__ import annotations

import warnings
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from rlbase.common.config import param
from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env.base import VecEnv

#: the env method sb3-contrib's MaskablePPO calls
MASK_METHOD = "action_masks"
#: the info key gymnasium's envs report their mask under (Taxi)
MASK_INFO_KEY = "action_mask"
#: the values of the ``action_masks`` setting
MASK_SETTINGS = (False, True, "auto", "method", "info")
MASK_DOC = ("mask invalid actions (Discrete/MultiDiscrete): 'method' reads the env's "
            "action_masks() (sb3-contrib's protocol), 'info' its info['action_mask'] "
            "(gymnasium's, e.g. Taxi), True the method else the info (an error when neither), "
            "'auto' the same or no masking, False none")


def action_masks_field() -> Any:
    """The ``action_masks`` config field of A2C, PPO, DQN and QR-DQN (not an SB3 constructor
    argument: sb3-contrib's MaskablePPO takes ``use_masking`` in learn(), rlbase.MaskablePPO
    too)."""
    return param(False, MASK_DOC, choices=MASK_SETTINGS)


@runtime_checkable
class MasksActions(Protocol):
    """A model that acts with action masks when its setting says so."""

    @property
    def action_masking(self) -> bool | str: ...


def masking_of(model: Any) -> bool | str:
    """``model``'s ``action_masks`` setting (False for models without one)."""
    return model.action_masking if isinstance(model, MasksActions) else False


def mask_size(space: gym.Space) -> int:
    """Entries of one env's mask: one per logit of a Discrete or MultiDiscrete distribution,
    two per dimension of a MultiBinary one (whether 0, whether 1 may be taken: sb3-contrib's
    layout)."""
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.MultiDiscrete) and space.nvec.ndim == 1:
        return int(space.nvec.sum())
    if isinstance(space, gym.spaces.MultiBinary) and len(space.shape) == 1:
        return 2 * int(space.shape[0])
    raise RLBaseError(f"action masks need a Discrete, 1-D MultiDiscrete or 1-D MultiBinary "
                      f"action space, got {space}")


def mask_groups(space: gym.Space) -> list[int]:
    """The sizes of a mask's groups, each of which needs a valid entry: the whole Discrete
    mask, each MultiDiscrete dimension's, each MultiBinary dimension's pair."""
    if isinstance(space, gym.spaces.MultiDiscrete):
        return [int(k) for k in space.nvec]
    if isinstance(space, gym.spaces.MultiBinary):
        return [2] * int(space.shape[0])
    return [mask_size(space)]


def check_masks(masks: Any, space: gym.Space, batch: int) -> np.ndarray:
    """``masks`` as a ``[batch, logits]`` bool array; a wrong size, or a row (a dimension of
    a MultiDiscrete or MultiBinary row) with no valid action, is a one-line error."""
    size = mask_size(space)
    array = np.asarray(masks)
    if array.size != batch * size:
        raise RLBaseError(f"action masks of shape {array.shape} do not fit {batch} env(s) of "
                          f"{space}: {size} entries per env are needed")
    valid = array.reshape(batch, size).astype(bool)
    for part in np.split(valid, np.cumsum(mask_groups(space))[:-1], axis=1):
        empty = np.flatnonzero(~part.any(axis=1))
        if empty.size:
            raise RLBaseError(f"the action mask of env {int(empty[0])} allows no action "
                              f"({valid[empty[0]].astype(int).tolist()}): every state needs "
                              "a valid one")
    return valid


def _has_method(env: VecEnv) -> bool:
    try:
        return env.has_attr(MASK_METHOD)
    except NotImplementedError:  # a VecEnv of the user's that cannot say
        return False


def warn_unused_masks(model: Any, env: VecEnv) -> None:
    """A warning when the envs offer ``action_masks()`` and ``model`` trains without masks:
    every action may then be taken, legal or not, and nothing else would say so."""
    if masking_of(model) is not False or not _has_method(env):
        return
    name = model.algorithm.upper()
    if "action_masks" in type(model.config).field_names():
        message = (f"{name}: the env has an {MASK_METHOD}() method, but action_masks=False: "
                   "its masks are not used and every action may be taken (pass "
                   "action_masks=True, --action_masks=True, or use MaskablePPO)")
    else:
        message = (f"{name} does not use action masks: the env's {MASK_METHOD}() method is "
                   "ignored and every action may be taken; A2C, PPO, DQN and QR-DQN honour them "
                   "(action_masks=True, or MaskablePPO)")
    warnings.warn(message, UserWarning, stacklevel=3)


def mask_source(env: VecEnv, setting: bool | str) -> str | None:
    """``'method'``, ``'info'`` or None (no masking) for ``setting`` on ``env``, which must
    have been reset (its ``reset_infos`` are read)."""
    if setting not in MASK_SETTINGS:
        raise RLBaseError(f"action_masks must be one of {', '.join(map(repr, MASK_SETTINGS))}, "
                          f"got {setting!r}")
    if setting is False:
        return None
    mask_size(env.action_space)
    if setting == "method" or setting == "info":
        return str(setting)
    if _has_method(env):
        return "method"
    if all(MASK_INFO_KEY in info for info in env.reset_infos):
        return "info"
    if setting == "auto":
        return None
    raise RLBaseError(f"action_masks=True, but the envs have no {MASK_METHOD}() method and their "
                      f"reset info has no {MASK_INFO_KEY!r}: add one (or wrap the env in "
                      "sb3-contrib's ActionMasker), or use action_masks='auto' or False")


class ActionMaskReader:
    """The current masks of a VecEnv's envs, read after each reset and step."""

    def __init__(self, env: VecEnv, source: str):
        self.env, self.source = env, source
        self.space = env.action_space

    @classmethod
    def for_env(cls, env: VecEnv, setting: bool | str) -> ActionMaskReader | None:
        """The reader for ``setting`` (None: no masking); ``env`` must have been reset."""
        source = mask_source(env, setting)
        return None if source is None else cls(env, source)

    def after_reset(self) -> np.ndarray:
        """The masks of the first observations."""
        if self.source == "method":
            return self._from_method()
        return self._from_infos(self.env.reset_infos, "reset info")

    def after_step(self, infos: list[dict[str, Any]], done: np.ndarray) -> np.ndarray:
        """The masks of the step's observations (a new episode's for envs that ended)."""
        if self.source == "method":
            return self._from_method()
        if not done.any():
            return self._from_infos(infos, "step info")
        resets = self.env.reset_infos
        return self._from_infos([resets[i] if done[i] else info for i, info in enumerate(infos)],
                                "step or reset info")

    def _from_method(self) -> np.ndarray:
        try:
            masks = self.env.env_method(MASK_METHOD)
        except AttributeError:
            raise RLBaseError(f"action_masks='method', but the envs have no {MASK_METHOD}() "
                              "method: add one (or wrap the env in sb3-contrib's ActionMasker), "
                              "or use action_masks='info' or 'auto'") from None
        return check_masks(np.stack([np.asarray(m) for m in masks]), self.space,
                           self.env.num_envs)

    def _from_infos(self, infos: list[dict[str, Any]], what: str) -> np.ndarray:
        missing = [i for i, info in enumerate(infos) if MASK_INFO_KEY not in info]
        if missing:
            raise RLBaseError(f"action_masks='info', but env {missing[0]}'s {what} has no "
                              f"{MASK_INFO_KEY!r}: use action_masks='method' for envs with an "
                              f"{MASK_METHOD}() method, or False")
        return check_masks(np.stack([np.asarray(info[MASK_INFO_KEY]) for info in infos]),
                           self.space, len(infos))
