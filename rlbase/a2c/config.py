"""A2C's parameters: each declared once, with its type, unit, default, range and SB3 name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from rlbase.common.config import (
    SB3_ON_POLICY_FIXED,
    AlgorithmConfig,
    learning_rate_field,
    lr_decay_field,
    param,
)
from rlbase.common.loops.action_masks import action_masks_field


@dataclass(frozen=True)
class A2CConfig(AlgorithmConfig):
    algorithm: ClassVar[str] = "a2c"
    # SB3's A2C can also use Adam; rlbase's is always RMSProp.
    sb3_fixed: ClassVar[dict[str, Any]] = {**AlgorithmConfig.sb3_fixed, **SB3_ON_POLICY_FIXED,
                                           "use_rms_prop": True}
    mixed_precision_caution: ClassVar[str] = (
        "ended below every float32 run's last-100 training return in 1 of 3 "
        "BreakoutNoFrameskip-v4 seeds (1e6 steps, 5 float32 runs; within float32's spread on "
        "Hopper-v5)")

    nsteps: int = param(5, "env steps per env per update (batch = nsteps * num_envs)",
                        unit="env steps per env", low=1, sb3="n_steps", architecture=True)
    lr: float | Callable[[float], float] = learning_rate_field(7e-4, "RMSProp")
    lrschedule: str = lr_decay_field()
    ent_coef: float = param(0.01, "weight of the entropy bonus", low=0)
    vf_coef: float = param(0.5, "weight of the value loss", low=0)
    max_grad_norm: float | None = param(0.5, "clip the gradient's global norm to this (None: "
                                        "no clipping)", low=0, low_open=True)
    rms_alpha: float = param(0.99, "RMSProp decay of the mean square", low=0, high=1,
                             deprecated=["alpha"])
    rms_epsilon: float = param(1e-5, "RMSProp epsilon (added outside the square root; inside "
                               "with tf1_rmsprop)", low=0, low_open=True, sb3="rms_prop_eps",
                               deprecated=["epsilon"])
    tf1_rmsprop: bool = param(False, "RMSProp as TF1 computed it, Baselines' optimizer: the mean "
                              "square starts at 1 and epsilon is inside the square root (False: "
                              "starts at 0, epsilon outside)")
    gamma: float = param(0.99, "discount factor (1: a time-limit truncation ends the return)",
                         low=0, high=1)
    lam: float = param(1.0, "GAE lambda of the critic's targets (1: n-step returns, A2C's "
                       "classic form)", low=0, high=1, sb3="gae_lambda")
    normalize_advantage: bool = param(False, "normalize the advantages over each batch to zero "
                                      "mean and unit std")
    jit_compile: bool | None = param(None, "compile the update with XLA: ~1 ms faster per "
                                     "update, ~1.5 s to compile (None: for runs of at least "
                                     "1500 updates, except convnets on a CPU)")
    action_masks: bool | str = action_masks_field()
    log_interval: int = param(100, "log every this many updates", unit="updates", low=1)


CONFIG = A2CConfig
