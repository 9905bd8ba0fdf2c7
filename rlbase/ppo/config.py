"""PPO's parameters: each declared once, with its type, unit, default, range and SB3 name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from rlbase.common.config import (
    SB3_ON_POLICY_FIXED,
    AlgorithmConfig,
    OtherName,
    learning_rate_field,
    param,
)
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.action_masks import action_masks_field


def _nminibatches(batch_size: Any, given: Mapping[str, Any], num_envs: int) -> int:
    """SB3's minibatch size -> the number of minibatches per epoch."""
    nsteps = int(given.get("nsteps", given.get("n_steps", PPOConfig.nsteps)))
    batch = nsteps * num_envs
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1 \
            or batch % batch_size:
        raise RLBaseError(f"must divide n_steps * n_envs = {batch} (rlbase splits "
                          "each batch into whole minibatches)")
    return batch // batch_size


def _checkpoint_steps(updates: Any, given: Mapping[str, Any], num_envs: int) -> int:
    """PPO2's save_interval counted updates."""
    return int(updates) * int(given.get("nsteps", PPOConfig.nsteps)) * num_envs


def _clips_value(clip_range_vf: Any, given: Mapping[str, Any], num_envs: int) -> bool:
    """SB3's clip_range_vf=None turns value clipping off."""
    return clip_range_vf is not None


@dataclass(frozen=True)
class PPOConfig(AlgorithmConfig):
    algorithm: ClassVar[str] = "ppo"
    sb3_fixed: ClassVar[dict[str, Any]] = {**AlgorithmConfig.sb3_fixed, **SB3_ON_POLICY_FIXED}
    mixed_precision_caution: ClassVar[str] = (
        "ended below every float32 run in 2 of 3 Hopper-v5 seeds (1e6 steps)")
    # PPO2 saved a model every save_interval updates: now a checkpoint every as many env steps.
    checkpoint_interval: int = param(
        0, "write a resumable checkpoint every this many env steps (0: never; under MPI rank 0 "
        "writes)", unit="env steps", low=0,
        deprecated=[OtherName("save_interval", _checkpoint_steps,
                              "in env steps: save_interval * nsteps * num_envs")])

    nsteps: int = param(2048, "env steps per env per update (batch = nsteps * num_envs)",
                        unit="env steps per env", low=1, sb3="n_steps", architecture=True)
    nminibatches: int = param(4, "minibatches per epoch (recurrent policies: must divide the "
                              "number of envs)", unit="minibatches", low=1,
                              sb3=OtherName("batch_size", _nminibatches), architecture=True)
    noptepochs: int = param(4, "passes over each batch", unit="epochs", low=1, sb3="n_epochs")
    lr: float | Callable[[float], float] = learning_rate_field(3e-4, "Adam")
    ent_coef: float = param(0.0, "weight of the entropy bonus", low=0)
    vf_coef: float = param(0.5, "weight of the value loss", low=0)
    max_grad_norm: float | None = param(0.5, "clip each minibatch gradient's global norm to "
                                        "this (None: no clipping)", low=0, low_open=True)
    gamma: float = param(0.99, "discount factor (1: a time-limit truncation ends the return)",
                         low=0, high=1)
    lam: float = param(0.95, "GAE lambda (1: Monte-Carlo advantages, 0: one-step TD)", low=0,
                       high=1, sb3="gae_lambda")
    cliprange: float | Callable[[float], float] = param(
        0.2, "the surrogate's clipping range (also clips the value change), or a function of "
        "the fraction of training remaining", low=0, low_open=True, sb3="clip_range")
    clip_value: bool = param(True, "clip the value function's change (to cliprange_vf, or "
                             "cliprange when that is None) as PPO2 did",
                             sb3=OtherName("clip_range_vf", _clips_value))
    cliprange_vf: float | Callable[[float], float] | None = param(
        None, "the value change's clipping range, or a function of the fraction of training "
        "remaining (None: cliprange)", low=0, low_open=True, sb3="clip_range_vf")
    target_kl: float | None = param(
        None, "stop an update's epochs before the first minibatch whose KL estimate "
        "mean((r - 1) - log r) exceeds 1.5 * target_kl (None: never)", low=0, low_open=True)
    normalize_advantage: bool = param(True, "normalize the advantages of each minibatch to zero "
                                      "mean and unit std")
    jit_compile: bool | None = param(None, "compile the update with XLA (None: for runs of at "
                                     "least 200 updates, except convnets on a CPU)")
    action_masks: bool | str = action_masks_field()
    log_interval: int = param(10, "log every this many updates", unit="updates", low=1)


CONFIG = PPOConfig
