"""``model.policy``: the acting half of a model class, under Stable-Baselines3's policy names.

It holds no weights of its own: it acts through the class's algorithm model, so it always
follows the weights being trained, loaded or set.
"""

from __future__ import annotations

from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from rlbase.common.errors import RLBaseError


class PolicyOwner(Protocol):
    """What a policy acts and reads weights through: the model class that holds it."""

    observation_space: gym.Space | None
    action_space: gym.Space | None
    device: str
    network: Any
    policy_name: str | None

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None,
                deterministic: bool = False) -> tuple[np.ndarray, Any]: ...

    def _batch(self, observation: Any) -> tuple[Any, bool, Any]: ...

    def get_parameters(self) -> dict[str, dict[str, np.ndarray]]: ...

    def load_parameters(self, load_path_or_dict: Any, exact_match: bool = True) -> None: ...


class Policy:
    """``predict``, the spaces, ``obs_to_tensor``, ``set_training_mode`` and the weights of the
    policy's networks (``get_parameters`` / ``state_dict``: name -> array)."""

    def __init__(self, owner: PolicyOwner):
        self._owner = owner
        #: set by set_training_mode; rlbase's networks have no layer that acts differently
        #: in training (no dropout, no batch normalization), so acting does not depend on it
        self.training = True

    @property
    def observation_space(self) -> gym.Space | None:
        return self._owner.observation_space

    @property
    def action_space(self) -> gym.Space | None:
        return self._owner.action_space

    @property
    def device(self) -> str:
        return self._owner.device

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None,
                deterministic: bool = False) -> tuple[np.ndarray, Any]:
        """The class's :meth:`~rlbase.compat.sb3.base_class.BaseRLModel.predict`."""
        return self._owner.predict(observation, state, episode_start, deterministic)

    def set_training_mode(self, mode: bool) -> None:
        """Record the mode in ``training`` (see its note: acting is the same in both)."""
        if not isinstance(mode, (bool, np.bool_)):
            raise RLBaseError(f"set_training_mode takes True or False, got {mode!r}")
        self.training = bool(mode)

    def is_vectorized_observation(self, observation: Any) -> bool:
        """Whether ``observation`` is a batch (else one observation)."""
        return self._owner._batch(observation)[1]

    def obs_to_tensor(self, observation: Any) -> tuple[Any, bool]:
        """``(the observation as a batch of numpy arrays, whether it was one already)``; the
        arrays are what the compiled act call takes."""
        batch, vectorized, _ = self._owner._batch(observation)
        return batch, vectorized

    def get_parameters(self) -> dict[str, np.ndarray]:
        """A copy of the policy's weights (every network, not optimizer state), by name."""
        params = self._owner.get_parameters()
        return {f"{group}/{name}": array for group, arrays in params.items()
                if "optimizer" not in group for name, array in arrays.items()}

    def state_dict(self) -> dict[str, np.ndarray]:
        """The same as :meth:`get_parameters` (numpy arrays, not torch tensors)."""
        return self.get_parameters()

    def load_state_dict(self, state_dict: dict[str, np.ndarray], strict: bool = True) -> None:
        """Set weights named as :meth:`get_parameters` names them; ``strict``: every one."""
        if strict:
            missing = sorted(set(self.get_parameters()) - set(state_dict))
            if missing:
                raise RLBaseError(f"load_state_dict(strict=True): missing {missing[:5]} "
                                  f"({len(missing)} in all); pass strict=False to keep them")
        self._owner.load_parameters(state_dict, exact_match=False)

    def save(self, path: Any) -> None:
        raise RLBaseError("a policy is saved with its model: model.save(path), then "
                          f"{type(self._owner).__name__}.load(path)")

    def __repr__(self) -> str:
        return (f"Policy({self._owner.policy_name or self._owner.network!r}, "
                f"{self.observation_space}, {self.action_space})")
