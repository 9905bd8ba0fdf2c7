"""VecNormalize: running normalization of observations and reward scale."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.common import nested
from rlbase.common.errors import RLBaseError
from rlbase.common.io import serialization
from rlbase.common.running_mean_std import RunningMeanStd
from rlbase.common.vec_env.base import VecEnv, VecEnvWrapper, VecStepResult

_KIND = "VecNormalize"
# The info key of an ended episode's final observation as the env below produced it (the
# "final_observation" entry is normalized): off-policy replay stores raw observations.
RAW_FINAL_OBSERVATION = "raw_final_observation"
_CONFIG_KEYS = ("ob", "ret", "clipob", "cliprew", "gamma", "epsilon")


class NormalizationStats:
    """What observation and reward normalization learned: running statistics plus the settings
    that shape them. The training VecNormalize owns one; evaluation wrappers and the model share
    the same object, so they always normalize exactly as training does at that moment.

    observation_space: the space of the observations (None: they are not normalized). A Box is
        normalized element-wise; a Dict/Tuple space per entry: each Box entry that is not an
        image gets its own statistics, images and discrete entries pass unchanged.
    ret: scale rewards by the running std of the discounted return.
    clipob / cliprew: clip normalized observations / scaled rewards to +-this.
    gamma: discount of that running return.
    epsilon: added to variances before the square root.
    comm: optional mpi4py communicator pooling the statistics over workers.
    """

    def __init__(self, observation_space: gym.Space | None, ret: bool = True,
                 clipob: float = 10.0, cliprew: float = 10.0, gamma: float = 0.99,
                 epsilon: float = 1e-8, comm: Any = None):
        self.ob, self.ret = observation_space is not None, bool(ret)
        self.space = observation_space
        self.clipob, self.cliprew = float(clipob), float(cliprew)
        self.gamma, self.epsilon = float(gamma), float(epsilon)
        self.leaf_rms: list[RunningMeanStd | None] = []
        self.names: list[str] = []
        if observation_space is not None:
            single = not nested.is_nested(observation_space)
            self.names = ["ob_rms"] if single else \
                [f"ob_rms/{n}" for n in nested.leaf_names(observation_space)]
            self.leaf_rms = [RunningMeanStd(shape=leaf.shape or (), comm=comm)
                             if single or normalizable(leaf) else None
                             for leaf in nested.leaf_spaces(observation_space)]
        self.ret_rms = RunningMeanStd(shape=(), comm=comm) if ret else None
        # SB3's switches: normalize on output (the statistics are kept and updated either
        # way); shared, like the statistics, by every wrapper normalizing as training does.
        self.norm_obs, self.norm_reward = self.ob, self.ret

    @property
    def ob_rms(self) -> RunningMeanStd | None:
        """The observation statistics of a non-nested space (None for Dict/Tuple spaces)."""
        return self.leaf_rms[0] if len(self.leaf_rms) == 1 and self.names == ["ob_rms"] \
            else None

    @classmethod
    def from_config(cls, observation_space: gym.Space, config: dict[str, Any]
                    ) -> NormalizationStats:
        """Statistics with a saved ``config`` (see :meth:`config`); a malformed one is an error."""
        _checked_config(config)
        return cls(observation_space if config["ob"] else None, config["ret"],
                   config["clipob"], config["cliprew"], config["gamma"], config["epsilon"])

    def update_obs(self, obs: Any) -> None:
        if self.space is None:
            return
        for rms, leaf in zip(self.leaf_rms, nested.flatten(self.space, obs)):
            if rms is not None:
                rms.update(leaf)

    def normalize_obs(self, obs: Any) -> Any:
        """Normalize observations with the current statistics (no update)."""
        if self.space is None or not self.norm_obs:
            return obs
        leaves = [leaf if rms is None else self._normalize(leaf, rms)
                  for rms, leaf in zip(self.leaf_rms, nested.flatten(self.space, obs))]
        return nested.pack(self.space, leaves)

    def _normalize(self, obs: np.ndarray, rms: RunningMeanStd) -> np.ndarray:
        scaled = (obs - rms.mean) / np.sqrt(rms.var + self.epsilon)
        return np.clip(scaled, -self.clipob, self.clipob).astype(np.float32)

    def normalized_space(self) -> gym.Space | None:
        """The observation space after normalization (None: unchanged)."""
        if self.space is None:
            return None
        clip = self.clipob
        leaves = [leaf if rms is None else gym.spaces.Box(-clip, clip, leaf.shape, np.float32)
                  for rms, leaf in zip(self.leaf_rms, nested.leaf_spaces(self.space))]
        return nested.replace_leaves(self.space, leaves)

    def normalize_reward(self, rewards: np.ndarray) -> np.ndarray:
        """Scale rewards with the current return statistics (no update)."""
        if self.ret_rms is None or not self.norm_reward:
            return rewards
        scaled = rewards / np.sqrt(self.ret_rms.var + self.epsilon)
        return np.clip(scaled, -self.cliprew, self.cliprew).astype(np.float32)

    def config(self) -> dict[str, Any]:
        """The settings that shape the statistics (stored with them)."""
        return {key: getattr(self, key) for key in _CONFIG_KEYS}

    def _named(self) -> list[tuple[str, RunningMeanStd]]:
        named = [(n, rms) for n, rms in zip(self.names, self.leaf_rms) if rms is not None]
        return named + ([("ret_rms", self.ret_rms)] if self.ret_rms is not None else [])

    def state_dict(self) -> dict[str, np.ndarray]:
        """The statistics as flat named arrays, e.g. ``ob_rms/mean``, ``ret_rms/count`` (and
        ``ob_rms/<entry>/mean`` per entry of a Dict/Tuple space)."""
        return {f"{name}/{k}": v for name, rms in self._named()
                for k, v in rms.state_dict().items()}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Restore statistics from :meth:`state_dict` (all checked before any changes)."""
        parts = []
        for name, rms in self._named():
            prefix = name + "/"
            part = {k[len(prefix):]: v for k, v in state.items()
                    if k.startswith(prefix) and "/" not in k[len(prefix):]}
            if not part:
                what = "rewards" if name == "ret_rms" else "observations"
                raise RLBaseError(f"VecNormalize state has no {name} statistics, but this "
                                  f"wrapper normalizes {what}")
            RunningMeanStd(shape=rms.shape).load_state_dict(part)  # raises on a mismatch
            parts.append((rms, part))
        for rms, part in parts:
            rms.load_state_dict(part)

    def follower(self, venv: VecEnv) -> VecNormalize:
        """``venv`` normalized with these statistics, which it reads but never updates."""
        return VecNormalize(venv, training=False, stats=self)


def _forward(name: str, settable: bool = False) -> Any:
    """A VecNormalize property reading ``stats.<name>`` (settable: a float setting)."""
    def set_float(self: VecNormalize, value: float) -> None:
        setattr(self.stats, name, float(value))
    return property(lambda self: getattr(self.stats, name), set_float if settable else None)


class VecNormalize(VecEnvWrapper):
    """Normalize observations by their running mean/std, and rewards by the running std of the
    discounted return (rewards are scaled, not shifted, so their sign survives).

    ``infos[i]["final_observation"]`` is normalized too: algorithms bootstrap from it on
    truncation, so it must look like every other observation the policy sees; the raw one
    stays in ``infos[i][RAW_FINAL_OBSERVATION]``.

    Stable-Baselines3's names are accepted too: ``norm_obs`` (``ob``), ``norm_reward``
    (``ret``), ``clip_obs`` (``clipob``), ``clip_reward`` (``cliprew``), and SB3's attributes
    act: setting ``norm_reward = False`` (or ``norm_obs``) makes :meth:`step` return raw
    rewards (observations) while the statistics keep their state; ``training = False``
    freezes them; ``clip_obs`` / ``clip_reward`` change the clipping (of every wrapper sharing
    the statistics). ``norm_obs_keys`` is refused: every Box entry that is not an image is
    normalized.

    :param venv: the env to wrap (Box, Dict or Tuple observations).
    :param ob: normalize observations.
    :param ret: scale rewards.
    :param clipob: clip normalized observations to ``[-clipob, clipob]``.
    :param cliprew: clip scaled rewards to ``[-cliprew, cliprew]``.
    :param gamma: discount of the running return whose std scales rewards.
    :param epsilon: added to variances before the square root.
    :param training: update the statistics; set False to freeze them (evaluation).
    :param comm: optional mpi4py communicator to pool statistics over workers.
    :param stats: normalize with these statistics, shared with their owner, instead of new
        ones (the settings above are then theirs).
    """

    changes_rewards = True

    def __init__(self, venv: VecEnv, ob: bool | None = None, ret: bool | None = None,
                 clipob: float | None = None, cliprew: float | None = None, gamma: float = 0.99,
                 epsilon: float = 1e-8, training: bool = True, comm: Any = None,
                 stats: NormalizationStats | None = None, *, norm_obs: bool | None = None,
                 norm_reward: bool | None = None, clip_obs: float | None = None,
                 clip_reward: float | None = None, norm_obs_keys: Any = None):
        if norm_obs_keys is not None:
            raise RLBaseError(f"VecNormalize(norm_obs_keys={norm_obs_keys!r}) is not supported: "
                              f"every Box entry that is not an image is normalized; leave it "
                              f"None")
        ob = bool(_one_of("ob", ob, "norm_obs", norm_obs, True))
        ret = bool(_one_of("ret", ret, "norm_reward", norm_reward, True))
        clipob = float(_one_of("clipob", clipob, "clip_obs", clip_obs, 10.0))
        cliprew = float(_one_of("cliprew", cliprew, "clip_reward", clip_reward, 10.0))
        space = venv.observation_space
        if stats is None:
            if ob and not isinstance(space, gym.spaces.Box) and not nested.is_nested(space):
                raise RLBaseError(f"VecNormalize(ob=True) needs a Box (or a Dict/Tuple) "
                                  f"observation space, got {space}")
            stats = NormalizationStats(space if ob else None, ret, clipob, cliprew, gamma,
                                       epsilon, comm)
        elif stats.space is not None and _layout(stats.space) != _layout(space):
            raise RLBaseError(f"normalization statistics of {stats.space} do not fit "
                              f"observations of {space}")
        super().__init__(venv, observation_space=stats.normalized_space())
        self.stats = stats
        self.training = bool(training)
        self.returns = np.zeros(self.num_envs, dtype=np.float64)
        self._raw_obs: Any = None
        self._raw_rewards: np.ndarray | None = None
        self._count_reset = True

    # Read through to the shared statistics; SB3's clip_obs / clip_reward also set them.
    ob_rms = _forward("ob_rms")
    clipob = _forward("clipob")
    cliprew = _forward("cliprew")
    clip_obs = _forward("clipob", settable=True)
    clip_reward = _forward("cliprew", settable=True)
    gamma = _forward("gamma")
    epsilon = _forward("epsilon")

    @property
    def obs_rms(self) -> RunningMeanStd | None:
        """SB3's name of :attr:`ob_rms`."""
        return self.stats.ob_rms

    @obs_rms.setter
    def obs_rms(self, value: RunningMeanStd) -> None:
        """SB3's ``eval_env.obs_rms = train_env.obs_rms``: this wrapper then normalizes with
        that very object (shared, not copied)."""
        current = self.stats.ob_rms
        if current is None:
            raise RLBaseError("obs_rms can be set on a VecNormalize of a Box observation "
                              "space only (Dict/Tuple spaces: load_state_dict, or "
                              "model.normalized_like_training(env))")
        if not isinstance(value, RunningMeanStd) or value.shape != current.shape:
            given = f"shape {value.shape}" if isinstance(value, RunningMeanStd) \
                else type(value).__name__
            raise RLBaseError(f"obs_rms must be a RunningMeanStd of shape {current.shape}, "
                              f"got {given}")
        self.stats.leaf_rms[0] = value

    @property
    def norm_obs(self) -> bool:
        """Whether :meth:`step` and :meth:`reset` return normalized observations."""
        return self.stats.norm_obs

    @norm_obs.setter
    def norm_obs(self, value: bool) -> None:
        if value and self.stats.space is None:
            raise RLBaseError("norm_obs=True: this VecNormalize keeps no observation "
                              "statistics (made with norm_obs=False)")
        self.stats.norm_obs = bool(value)
        normalized = self.stats.normalized_space() if value else None
        self.observation_space = normalized if normalized is not None else \
            self.venv.observation_space

    @property
    def norm_reward(self) -> bool:
        """Whether :meth:`step` returns scaled rewards (the statistics are updated either
        way while ``training``)."""
        return self.stats.norm_reward

    @norm_reward.setter
    def norm_reward(self, value: bool) -> None:
        if value and self.stats.ret_rms is None:
            raise RLBaseError("norm_reward=True: this VecNormalize keeps no return statistics "
                              "(made with norm_reward=False)")
        self.stats.norm_reward = bool(value)

    @property
    def ret_rms(self) -> RunningMeanStd | None:
        return self.stats.ret_rms

    @ret_rms.setter
    def ret_rms(self, value: RunningMeanStd) -> None:
        """SB3's ``env.ret_rms = other.ret_rms`` (shared, not copied)."""
        if self.stats.ret_rms is None:
            raise RLBaseError("ret_rms: this VecNormalize keeps no return statistics (made "
                              "with norm_reward=False)")
        if not isinstance(value, RunningMeanStd) or value.shape != ():
            raise RLBaseError(f"ret_rms must be a scalar RunningMeanStd, got "
                              f"{type(value).__name__}")
        self.stats.ret_rms = value

    def reset(self) -> np.ndarray:
        obs = self.venv.reset()
        self.returns[:] = 0.0
        self._raw_obs = obs
        if self._count_reset:
            self._update_obs_stats(obs)
        self._count_reset = True
        return self.normalize_obs(obs)

    def resumed(self) -> None:
        """The statistics were just restored from a checkpoint: the next :meth:`reset` does
        not count its observations. At a checkpoint taken at an episode boundary the run that
        wrote it had already counted them (its envs had just reset, inside ``step``), so
        counting them again would make the resumed run differ from the uninterrupted one."""
        self._count_reset = False

    def step_wait(self) -> VecStepResult:
        obs, rewards, terminated, truncated, infos = self.venv.step_wait()
        self._raw_obs, self._raw_rewards = obs, rewards
        self.returns = self.returns * self.gamma + rewards
        if self.training and self.ret_rms is not None:
            self.ret_rms.update(self.returns)
        self._update_obs_stats(obs)
        for info in infos:
            if "final_observation" in info:
                info[RAW_FINAL_OBSERVATION] = info["final_observation"]
                info["final_observation"] = self._normalize_one(info["final_observation"])
        # The return restarts with the episode whichever way it ended.
        self.returns[np.logical_or(terminated, truncated)] = 0.0
        return self.normalize_obs(obs), self.normalize_reward(rewards), terminated, truncated, infos

    def _update_obs_stats(self, obs: Any) -> None:
        if self.training:
            self.stats.update_obs(obs)

    def _normalize_one(self, obs: Any) -> Any:
        """One env's observation (a final observation), normalized like a batch."""
        space = self.venv.observation_space
        batch = nested.map_leaves(space, lambda leaf, _: np.asarray(leaf)[None], obs)
        return nested.map_leaves(space, lambda leaf, _: leaf[0], self.normalize_obs(batch))

    def normalize_obs(self, obs: Any) -> Any:
        """Normalize observations with the current statistics (no update)."""
        return self.stats.normalize_obs(obs)

    def normalize_reward(self, rewards: np.ndarray) -> np.ndarray:
        """Scale rewards with the current return statistics (no update)."""
        return self.stats.normalize_reward(rewards)

    def unnormalize_obs(self, obs: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`normalize_obs` for a Box space (clipped values stay clipped)."""
        rms = self.stats.ob_rms
        if rms is None:
            raise RLBaseError("unnormalize_obs needs the observation statistics of a Box "
                              "space (this VecNormalize has none, or a Dict/Tuple space)")
        return np.asarray(obs) * np.sqrt(rms.var + self.epsilon) + rms.mean

    def unnormalize_reward(self, rewards: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`normalize_reward` (clipped values stay clipped)."""
        rms = self.stats.ret_rms
        if rms is None:
            raise RLBaseError("unnormalize_reward needs return statistics (made with "
                              "norm_reward=False)")
        return np.asarray(rewards) * np.sqrt(rms.var + self.epsilon)

    def get_original_obs(self) -> np.ndarray | None:
        return self._raw_obs

    def get_original_reward(self) -> np.ndarray | None:
        return self._raw_rewards

    # ---- saving -------------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        return self.stats.config()

    def state_dict(self) -> dict[str, np.ndarray]:
        return self.stats.state_dict()

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        self.stats.load_state_dict(state)

    def save(self, path: serialization.PathLike) -> None:
        """Save the statistics and settings to one rlbase file (no pickle)."""
        metadata = {"kind": _KIND, "config": self.config(),
                    # SB3 pickles the wrapper, switches included: a load gives them back
                    "switches": {"training": self.training, "norm_obs": self.norm_obs,
                                 "norm_reward": self.norm_reward},
                    **serialization.spaces_metadata(self.venv.observation_space,
                                                    self.venv.action_space)}
        serialization.save_file(path, metadata, self.state_dict())

    @classmethod
    def load(cls, path: serialization.PathLike, venv: VecEnv, training: bool | None = None
             ) -> VecNormalize:
        """Wrap ``venv`` with the settings and statistics saved at ``path``, and the switches
        as they were when it was saved (``training``, ``norm_obs``, ``norm_reward``), as SB3's
        load does; ``training`` given here overrides the saved one.

        The file's spaces must match ``venv``'s, or RLBaseError is raised.
        """
        metadata, arrays, _ = serialization.load_file(path)
        if metadata.get("kind") != _KIND:
            raise RLBaseError(f"{path} holds {metadata.get('kind')!r}, not {_KIND} statistics")
        serialization.check_spaces(metadata, venv.observation_space, venv.action_space)
        config = _checked_config(metadata.get("config"), f"{path} has a ")
        switches = metadata.get("switches")
        switches = switches if isinstance(switches, dict) else {}  # files written before them
        saved_training = switches.get("training", True)
        wrapper = cls(venv, training=bool(saved_training if training is None else training),
                      **config)
        wrapper.load_state_dict(arrays)
        if wrapper.stats.space is not None:
            wrapper.norm_obs = bool(switches.get("norm_obs", True))
        if wrapper.stats.ret_rms is not None:
            wrapper.norm_reward = bool(switches.get("norm_reward", True))
        return wrapper


def _one_of(name: str, value: Any, sb3_name: str, sb3_value: Any, default: Any) -> Any:
    """A setting given under rlbase's (Baselines') name or SB3's, not both."""
    if value is not None and sb3_value is not None:
        raise RLBaseError(f"VecNormalize got {name}={value!r} and {sb3_name}={sb3_value!r}: "
                          f"give one (they are the same setting)")
    return value if value is not None else sb3_value if sb3_value is not None else default


def _layout(space: gym.Space) -> tuple[bool, list[str], list[Any]]:
    """The entries and their shapes, not the bounds: a model's space is the normalized one, the
    env's the raw one."""
    return nested.is_nested(space), nested.leaf_names(space), \
        [leaf.shape for leaf in nested.leaf_spaces(space)]


def normalizable(space: gym.Space) -> bool:
    """An entry of a Dict/Tuple space VecNormalize normalizes: a Box that is not an image."""
    return isinstance(space, gym.spaces.Box) and not (space.dtype == np.uint8 and
                                                       len(space.shape) == 3)


def _checked_config(config: Any, where: str = "") -> dict[str, Any]:
    """``config`` if it has exactly the expected keys, flags as bools and numbers as numbers."""
    if not isinstance(config, dict) or set(config) != set(_CONFIG_KEYS) or \
            not all(isinstance(config[k], bool) for k in ("ob", "ret")) or \
            not all(isinstance(config[k], (int, float)) and not isinstance(config[k], bool)
                    for k in _CONFIG_KEYS[2:]):
        raise RLBaseError(f"{where}malformed VecNormalize config {config!r}: expected keys "
                          f"{list(_CONFIG_KEYS)}")
    return config
