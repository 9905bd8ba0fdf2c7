"""VecNormalize: running normalization of observations and reward scale."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common import serialization
from rlbase.common.errors import RLBaseError
from rlbase.common.running_mean_std import RunningMeanStd
from rlbase.common.vec_env.base import VecEnv, VecEnvWrapper, VecStepResult

_KIND = "VecNormalize"
_CONFIG_KEYS = ("ob", "ret", "clipob", "cliprew", "gamma", "epsilon")


class VecNormalize(VecEnvWrapper):
    """Normalize observations by their running mean/std, and rewards by the running std of the
    discounted return (rewards are scaled, not shifted, so their sign survives).

    ``infos[i]["final_observation"]`` is normalized too: algorithms bootstrap from it on
    truncation, so it must look like every other observation the policy sees.

    :param venv: the env to wrap (Box observations; Dict is not supported).
    :param ob: normalize observations.
    :param ret: scale rewards.
    :param clipob: clip normalized observations to ``[-clipob, clipob]``.
    :param cliprew: clip scaled rewards to ``[-cliprew, cliprew]``.
    :param gamma: discount of the running return whose std scales rewards.
    :param epsilon: added to variances before the square root.
    :param training: update the statistics; set False to freeze them (evaluation).
    :param comm: optional mpi4py communicator to pool statistics over workers.
    """

    def __init__(self, venv: VecEnv, ob: bool = True, ret: bool = True, clipob: float = 10.0,
                 cliprew: float = 10.0, gamma: float = 0.99, epsilon: float = 1e-8,
                 training: bool = True, comm: Any = None):
        space = venv.observation_space
        if isinstance(space, gym.spaces.Dict):
            raise RLBaseError("VecNormalize does not support Dict observation spaces: "
                              "normalize each Box entry with a gymnasium wrapper instead")
        if ob and not isinstance(space, gym.spaces.Box):
            raise RLBaseError(f"VecNormalize(ob=True) needs a Box observation space, got {space}")
        normalized_space = None
        if ob:
            normalized_space = gym.spaces.Box(-clipob, clipob, space.shape, dtype=np.float32)
        super().__init__(venv, observation_space=normalized_space)
        self.ob, self.ret = bool(ob), bool(ret)
        self.clipob, self.cliprew = float(clipob), float(cliprew)
        self.gamma, self.epsilon = float(gamma), float(epsilon)
        self.training = bool(training)
        self.ob_rms = RunningMeanStd(shape=space.shape, comm=comm) if ob else None
        self.ret_rms = RunningMeanStd(shape=(), comm=comm) if ret else None
        self.returns = np.zeros(self.num_envs, dtype=np.float64)
        self._raw_obs: np.ndarray | None = None
        self._raw_rewards: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        obs = self.venv.reset()
        self.returns[:] = 0.0
        self._raw_obs = obs
        self._update_obs_stats(obs)
        return self.normalize_obs(obs)

    def step_wait(self) -> VecStepResult:
        obs, rewards, terminated, truncated, infos = self.venv.step_wait()
        self._raw_obs, self._raw_rewards = obs, rewards
        self.returns = self.returns * self.gamma + rewards
        if self.training and self.ret_rms is not None:
            self.ret_rms.update(self.returns)
        self._update_obs_stats(obs)
        for info in infos:
            if "final_observation" in info:
                info["final_observation"] = self.normalize_obs(info["final_observation"])
        # The return restarts with the episode whichever way it ended.
        self.returns[np.logical_or(terminated, truncated)] = 0.0
        return self.normalize_obs(obs), self.normalize_reward(rewards), terminated, truncated, infos

    def _update_obs_stats(self, obs: np.ndarray) -> None:
        if self.training and self.ob_rms is not None:
            self.ob_rms.update(obs)

    def normalize_obs(self, obs: np.ndarray) -> np.ndarray:
        """Normalize observations with the current statistics (no update)."""
        if self.ob_rms is None:
            return obs
        scaled = (obs - self.ob_rms.mean) / np.sqrt(self.ob_rms.var + self.epsilon)
        return np.clip(scaled, -self.clipob, self.clipob).astype(np.float32)

    def normalize_reward(self, rewards: np.ndarray) -> np.ndarray:
        """Scale rewards with the current return statistics (no update)."""
        if self.ret_rms is None:
            return rewards
        scaled = rewards / np.sqrt(self.ret_rms.var + self.epsilon)
        return np.clip(scaled, -self.cliprew, self.cliprew).astype(np.float32)

    def get_original_obs(self) -> np.ndarray | None:
        """The last observations before normalization."""
        return self._raw_obs

    def get_original_reward(self) -> np.ndarray | None:
        """The last rewards before scaling."""
        return self._raw_rewards

    # ---- saving -------------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """The constructor arguments that shape the statistics (stored with them)."""
        return {key: getattr(self, key) for key in _CONFIG_KEYS}

    def state_dict(self) -> dict[str, np.ndarray]:
        """The statistics as flat named arrays, e.g. ``ob_rms/mean``, ``ret_rms/count``."""
        state = {}
        for name, rms in (("ob_rms", self.ob_rms), ("ret_rms", self.ret_rms)):
            if rms is not None:
                state.update({f"{name}/{k}": v for k, v in rms.state_dict().items()})
        return state

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Restore statistics from :meth:`state_dict`."""
        for name, rms in (("ob_rms", self.ob_rms), ("ret_rms", self.ret_rms)):
            if rms is None:
                continue
            prefix = name + "/"
            part = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
            if not part:
                what = "observations" if name == "ob_rms" else "rewards"
                raise RLBaseError(f"VecNormalize state has no {name} statistics, but this "
                                  f"wrapper normalizes {what}")
            rms.load_state_dict(part)

    def save(self, path: serialization.PathLike) -> None:
        """Save the statistics and settings to one rlbase file (no pickle)."""
        metadata = {"kind": _KIND, "config": self.config(),
                    **serialization.spaces_metadata(self.venv.observation_space,
                                                    self.venv.action_space)}
        serialization.save_file(path, metadata, self.state_dict())

    @classmethod
    def load(cls, path: serialization.PathLike, venv: VecEnv, training: bool = True
             ) -> VecNormalize:
        """Wrap ``venv`` with the settings and statistics saved at ``path``.

        The file's spaces must match ``venv``'s, or RLBaseError is raised.
        """
        metadata, arrays, _ = serialization.load_file(path)
        if metadata.get("kind") != _KIND:
            raise RLBaseError(f"{path} holds {metadata.get('kind')!r}, not {_KIND} statistics")
        serialization.check_spaces(metadata, venv.observation_space, venv.action_space)
        config = metadata.get("config")
        if not _valid_config(config):
            raise RLBaseError(f"{path} has a malformed VecNormalize config {config!r}: expected "
                              f"keys {list(_CONFIG_KEYS)}")
        wrapper = cls(venv, training=training, **config)
        wrapper.load_state_dict(arrays)
        return wrapper


def _valid_config(config: Any) -> bool:
    """A saved config has exactly the expected keys, flags as bools and numbers as numbers."""
    if not isinstance(config, dict) or set(config) != set(_CONFIG_KEYS):
        return False
    flags_ok = all(isinstance(config[k], bool) for k in ("ob", "ret"))
    numbers_ok = all(isinstance(config[k], (int, float)) and not isinstance(config[k], bool)
                     for k in _CONFIG_KEYS[2:])
    return flags_ok and numbers_ok
