"""Exploration noise for DDPG: action-space noise (Gaussian, Ornstein-Uhlenbeck) and adaptive
parameter-space noise, chosen by a ``noise_type`` string such as ``'adaptive-param_0.2'``,
``'normal_0.1'``, ``'ou_0.2'``, ``'none'`` or a comma-separated combination
(``'adaptive-param_0.2,ou_0.1'``).

Action noise is vectorized: one call gives a ``[num_envs, num_actions]`` row per env, and every
env has its own process (an Ornstein-Uhlenbeck state each), restarted when its episode ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.noise import (
    ActionNoise,
    NormalActionNoise,
    OrnsteinUhlenbeckActionNoise,
    SumNoise,
    VectorizedActionNoise,
)

NOISE_FORMS = "'none', 'adaptive-param_S', 'normal_S', 'ou_S' (S a positive number) or a " \
              "comma-separated combination such as 'adaptive-param_0.2,ou_0.1'"


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
            actions.append(NormalActionNoise(zeros, stddev * np.ones(num_actions), np.float64,
                                             rng=rng, num_envs=num_envs))
        else:
            actions.append(OrnsteinUhlenbeckActionNoise(
                zeros, stddev * np.ones(num_actions), dtype=np.float64, rng=rng,
                num_envs=num_envs))
    action = actions[0] if len(actions) == 1 else SumNoise(actions) if actions else None
    return action, param


def noise_type_of(action_noise: Any, given: Mapping[str, Any], num_envs: int) -> str:
    """SB3's ``action_noise`` object -> the ``noise_type`` that builds the same noise (what a
    saved model records, and loading rebuilds): None is ``'none'``; a Normal or
    Ornstein-Uhlenbeck noise of zero mean, one sigma for every action and OU's theta=0.15,
    dt=0.01, initial_noise=None is ``'normal_S'`` / ``'ou_S'``; other settings are refused."""
    if action_noise is None:
        return "none"
    if isinstance(action_noise, VectorizedActionNoise):
        if action_noise.n_envs != num_envs:
            raise RLBaseError(f"a VectorizedActionNoise for {action_noise.n_envs} envs, but "
                              f"the env has {num_envs}")
        action_noise = action_noise.base_noise
    forms = "noise_type='normal_S' or 'ou_S' (zero mean, sigma S for every action)"
    if not isinstance(action_noise, (NormalActionNoise, OrnsteinUhlenbeckActionNoise)):
        raise RLBaseError(f"{action_noise!r} is not a NormalActionNoise or an "
                          f"OrnsteinUhlenbeckActionNoise of rlbase.common.noise: write {forms}")
    sigma = np.unique(action_noise.sigma)
    plain_ou = not isinstance(action_noise, OrnsteinUhlenbeckActionNoise) or (
        action_noise.theta == 0.15 and action_noise.dt == 1e-2 and action_noise.x0 is None)
    if np.any(action_noise.mu != 0) or len(sigma) != 1 or sigma[0] <= 0 or not plain_ou:
        raise RLBaseError(f"{action_noise!r}: rlbase's action noise has zero mean, one "
                          "positive sigma for every action and (OU) theta=0.15, dt=0.01, "
                          f"initial_noise=None: write {forms}")
    kind = "normal" if isinstance(action_noise, NormalActionNoise) else "ou"
    return f"{kind}_{float(sigma[0])!r}"
