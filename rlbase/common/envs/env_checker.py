"""``check_env``: does a custom gymnasium env follow the API, and can rlbase train on it?

A broken API (spaces missing, ``reset`` without a ``seed``, wrong return values, observations
outside their space) raises ``AssertionError`` (``TypeError`` for ``reset``'s signature), as
Stable-Baselines3's checker does. A space rlbase cannot train on at all raises
:class:`~rlbase.common.errors.RLBaseError` naming it. Choices that train but often train badly
(images that are not uint8 in [0, 255] or smaller than 36x36, unusual observation shapes, a
continuous action range other than [-1, 1], float64 actions) are ``UserWarning``s.
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rlbase.common import nested
from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env import DummyVecEnv, VecCheckFinite

__all__ = ["check_env"]

# What rlbase's policies encode (Dict and Tuple spaces of these, nested as deep as they like).
OBSERVATION_LEAVES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
SMALLEST_IMAGE = 36  # the Nature convnet's strides need at least 36x36 pixels


def check_env(env: gym.Env, warn: bool = True, skip_render_check: bool = True) -> None:
    """Check ``env`` against the gymnasium API and rlbase's needs.

    :param env: the env (an instance of ``gymnasium.Env``).
    :param warn: also warn about spaces that train, but often badly.
    :param skip_render_check: do not call ``render()`` (True: headless machines, CI).
    """
    assert isinstance(env, gym.Env), \
        f"the env must be a gymnasium.Env (subclass it), got {type(env).__name__}"
    for name in ("observation_space", "action_space"):
        assert isinstance(getattr(env, name, None), spaces.Space), \
            f"env.{name} must be set to a gymnasium.spaces.Space"
    observation_space, action_space = env.observation_space, env.action_space
    if _is_goal_env(env):
        assert isinstance(observation_space, spaces.Dict), \
            "an env with compute_reward() is goal-conditioned: its observation space must be a Dict"
    _refuse_untrainable(observation_space, action_space)
    try:
        reset = env.reset(seed=0)
    except TypeError as exc:
        raise TypeError(f"{type(env.unwrapped).__name__}.reset() must take a seed argument "
                        f"(reset(self, *, seed=None, options=None)): {exc}") from exc
    if warn:
        _warn_spaces(observation_space, action_space)
        _say_masks(env, reset)
    _check_returned_values(env, observation_space, action_space)
    if not skip_render_check:
        if env.render_mode is not None:
            env.render()
        elif warn and not env.metadata.get("render_modes"):
            warnings.warn("the env declares no render modes (metadata['render_modes']): "
                          "videos and --play cannot show it", stacklevel=2)
    if not nested.is_nested(observation_space):
        _check_finite(env)


def _refuse_untrainable(observation_space: spaces.Space, action_space: spaces.Space) -> None:
    """The spaces rlbase cannot train on: one line saying which and what it takes."""
    for leaf in nested.leaf_spaces(observation_space):
        if not isinstance(leaf, OBSERVATION_LEAVES):
            raise RLBaseError(f"rlbase cannot train on observation space {leaf} (in "
                              f"{observation_space}); it takes Box, Discrete, MultiDiscrete, "
                              "MultiBinary and Dict/Tuple spaces of those: pad sequences to a "
                              "fixed size or flatten graphs with a wrapper")
    problem = None
    if isinstance(action_space, spaces.Box) and len(action_space.shape) != 1:
        problem = "a Box action space must be 1-D (flatten it with a wrapper)"
    elif isinstance(action_space, spaces.MultiDiscrete) and (
            action_space.nvec.ndim != 1 or np.any(action_space.start != 0)):
        problem = "a MultiDiscrete action space must be 1-D and start at 0 (shift it with an " \
                  "ActionWrapper)"
    elif isinstance(action_space, spaces.MultiBinary) and np.ndim(action_space.n) > 0 \
            and len(np.atleast_1d(action_space.n)) != 1:
        problem = "a MultiBinary action space must be 1-D"
    elif not isinstance(action_space, (spaces.Box, spaces.Discrete, spaces.MultiDiscrete,
                                       spaces.MultiBinary)):
        problem = "actions must be Box, Discrete, MultiDiscrete or MultiBinary (flatten a " \
                  "Dict or Tuple action space with a wrapper)"
    if problem:
        raise RLBaseError(f"rlbase cannot train on action space {action_space}: {problem}")


def _warn_spaces(observation_space: spaces.Space, action_space: spaces.Space) -> None:
    boxes = observation_space.spaces if isinstance(observation_space, spaces.Dict) \
        else {"": observation_space}
    for key, space in boxes.items():
        if isinstance(space, spaces.Box):
            _warn_box_observation(space, f" {key!r}" if key else "")
    if isinstance(action_space, spaces.Box):
        low, high = action_space.low, action_space.high
        if np.any(low != -1) or np.any(high != 1):
            _warn("the action space is not Box(-1, 1): Gaussian policies start with actions "
                  "around [-1, 1], so a symmetric, normalized range trains best (rescale it "
                  "with gymnasium.wrappers.RescaleAction)")
        assert np.all(np.isfinite(low)) and np.all(np.isfinite(high)), \
            f"a continuous action space needs finite bounds, got low={low}, high={high}"
        if action_space.dtype != np.float32:
            _warn(f"the action space's dtype is {action_space.dtype}; float32 avoids casts "
                  "between the policy's actions and the env's")


def _warn_box_observation(space: spaces.Box, key: str) -> None:
    shape = space.shape
    if len(shape) == 3:  # an image
        if space.dtype != np.uint8:
            _warn(f"observation{key} looks like an image but its dtype is {space.dtype}: "
                  "images must be uint8 (a vector observation should be flattened to 1-D)")
        if np.any(space.low != 0) or np.any(space.high != 255):
            _warn(f"observation{key} looks like an image but its bounds are not [0, 255]; "
                  "convnets scale pixels by 1/255")
        # HxWxC unless the first axis is the smallest (CxHxW)
        height, width = (shape[1], shape[2]) if int(np.argmin(shape)) == 0 else shape[:2]
        if min(height, width) < SMALLEST_IMAGE:
            _warn(f"observation{key} is a {height}x{width} image; the 'cnn' network needs "
                  f"{SMALLEST_IMAGE}x{SMALLEST_IMAGE} or more (use a network of your own)")
    elif len(shape) != 1:
        _warn(f"observation{key} has shape {shape}, neither an image (3-D) nor a vector "
              "(1-D): flatten it, or give a network that reads that shape")


def _say_masks(env: gym.Env, reset: Any) -> None:
    """Whether the env offers action masks, and which algorithms honour them: the others act
    among all actions without a word."""
    info = reset[1] if isinstance(reset, tuple) and len(reset) == 2 else {}
    if env.has_wrapper_attr("action_masks"):
        source = "an action_masks() method"
    elif isinstance(info, dict) and "action_mask" in info:
        source = "info['action_mask']"
    else:
        return
    _warn(f"the env offers action masks ({source}): A2C, PPO, DQN and QR-DQN honour them "
          "with action_masks=True (or MaskablePPO); the other algorithms ignore them and may "
          "take any action")


def _warn(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=4)


def _is_goal_env(env: gym.Env) -> bool:
    """Goal-conditioned envs (gymnasium-robotics' convention) define ``compute_reward``."""
    return callable(getattr(env.unwrapped, "compute_reward", None))


def _check_returned_values(env: gym.Env, observation_space: spaces.Space,
                           action_space: spaces.Space) -> None:
    reset_result = env.reset()
    assert isinstance(reset_result, tuple) and len(reset_result) == 2, \
        f"reset() must return a tuple (obs, info), got {_describe(reset_result)}"
    obs, info = reset_result
    assert isinstance(info, dict), f"reset() must return a dict as info, got {_describe(info)}"
    _check_observation(obs, observation_space, "reset")
    result = env.step(action_space.sample())
    assert isinstance(result, tuple) and len(result) == 5, \
        "step() must return five values (obs, reward, terminated, truncated, info), got " \
        f"{len(result) if isinstance(result, tuple) else _describe(result)}"
    obs, reward, terminated, truncated, info = result
    _check_observation(obs, observation_space, "step")
    assert isinstance(reward, (float, int)) and not isinstance(reward, bool), \
        f"step() must return a float reward, got {_describe(reward)}"
    assert isinstance(terminated, bool), \
        f"step() must return a bool 'terminated', got {_describe(terminated)}"
    assert isinstance(truncated, bool), \
        f"step() must return a bool 'truncated', got {_describe(truncated)}"
    assert isinstance(info, dict), f"step() must return a dict as info, got {_describe(info)}"
    if _is_goal_env(env):
        _check_goal_reward(env, obs, float(reward), info)


def _check_observation(obs: Any, space: spaces.Space, method: str) -> None:
    if isinstance(space, spaces.Dict):
        assert isinstance(obs, dict), f"{method}() must return a dict observation, got " \
            f"{_describe(obs)}"
        assert obs.keys() == space.spaces.keys(), \
            f"{method}() returned observation keys {sorted(obs)}, the space has " \
            f"{sorted(space.spaces)}"
        for key, sub in space.spaces.items():
            try:
                _check_observation(obs[key], sub, method)
            except AssertionError as exc:
                raise AssertionError(f"observation key {key!r}: {exc}") from exc
        return
    if not isinstance(space, spaces.Tuple):
        assert not isinstance(obs, tuple), \
            f"{method}() must return one observation, not a tuple"
    if isinstance(space, spaces.Discrete):
        assert np.issubdtype(type(obs), np.integer), \
            f"{method}() must return an int observation, got {_describe(obs)}"
    elif isinstance(space, OBSERVATION_LEAVES):
        assert isinstance(obs, np.ndarray), \
            f"{method}() must return a numpy array observation, got {_describe(obs)}"
        assert obs.shape == space.shape, \
            f"{method}() returned an observation of shape {obs.shape}, the space's is " \
            f"{space.shape}"
        assert np.can_cast(obs.dtype, space.dtype), \
            f"{method}() returned a {obs.dtype} observation, which does not cast to the " \
            f"space's {space.dtype}"
        if isinstance(space, spaces.Box):
            outside = np.argwhere((obs < space.low) | (obs > space.high))
            if len(outside):
                where = ", ".join(f"obs[{','.join(map(str, i))}]={obs[tuple(i)]} not in "
                                  f"[{space.low[tuple(i)]}, {space.high[tuple(i)]}]"
                                  for i in outside[:5])
                raise AssertionError(f"{method}() returned an observation outside its space's "
                                     f"bounds at {len(outside)} indices: {where}")
    assert space.contains(obs), f"{method}() returned an observation outside {space}"


def _check_goal_reward(env: gym.Env, obs: dict[str, Any], reward: float,
                       info: dict[str, Any]) -> None:
    """The reward is ``compute_reward``'s, and ``compute_reward`` takes batches (hindsight
    relabelling calls it on many goals at once)."""
    for key in ("achieved_goal", "desired_goal"):
        assert key in obs, f"a goal-conditioned env's observation needs the key {key!r}"
    compute = env.unwrapped.compute_reward  # type: ignore[attr-defined]
    achieved, desired = np.asarray(obs["achieved_goal"]), np.asarray(obs["desired_goal"])
    assert reward == compute(achieved, desired, info), \
        "step()'s reward is not compute_reward(achieved_goal, desired_goal, info)"
    achieved_batch, desired_batch = np.stack([achieved, achieved]), np.stack([desired, desired])
    if achieved.ndim == 0:  # one number per goal: a column
        achieved_batch, desired_batch = achieved_batch.reshape(2, 1), desired_batch.reshape(2, 1)
    batch = compute(achieved_batch, desired_batch, np.array([info, info]))
    assert np.shape(batch) == (2,), \
        f"compute_reward on a batch of 2 goals returned shape {np.shape(batch)}, not (2,)"
    assert batch[0] == reward, \
        f"compute_reward on a batch gave {batch[0]}, on one goal {reward}"


def _check_finite(env: gym.Env) -> None:
    """Ten random steps through a VecEnv that raises at the first NaN or inf."""
    venv = VecCheckFinite(DummyVecEnv([lambda: env]))
    venv.reset()
    for _ in range(10):
        venv.step(np.array([env.action_space.sample()]))


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"
