"""The parameters SAC and TQC share (a squashed-Gaussian actor, critics with soft-updated
targets, an entropy coefficient that is learned or fixed), declared once; each algorithm's
config subclasses :class:`SoftActorCriticConfig` and adds its own. No TensorFlow here: the
registry reads configs without importing it."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from rlbase.common.config import (
    GRADIENT_STEPS_DOC,
    SB3_TRAIN_FREQ,
    OffPolicyConfig,
    OtherName,
    param,
)
from rlbase.common.errors import RLBaseError


def parse_ent_coef(value: Any) -> tuple[bool, float]:
    """``(learned, initial value)`` of the entropy coefficient: 'auto' (learned from 1.0),
    'auto_X' (learned from X, SB3's form) or a positive number (fixed)."""
    if isinstance(value, str) and (value == "auto" or value.startswith("auto_")):
        text = value[len("auto_"):] if value != "auto" else "1.0"
        try:
            init = float(text)
        except ValueError:
            init = float("nan")
        if not (math.isfinite(init) and init > 0):
            raise RLBaseError(f"ent_coef {value!r}: the initial value after 'auto_' must be a "
                              "positive number, e.g. 'auto_0.1'")
        return True, init
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not (math.isfinite(value) and value > 0):
        raise RLBaseError(f"ent_coef must be 'auto', 'auto_X' (X > 0) or a positive number, "
                          f"got {value!r}")
    return False, float(value)


def target_entropy_value(value: float | str, num_actions: int) -> float:
    """'auto' is SB3's ``-dim(A)``; otherwise the number."""
    return -float(num_actions) if value == "auto" else float(value)


@dataclass(frozen=True)
class SoftActorCriticConfig(OffPolicyConfig):
    """SB3's SAC parameters (and sb3-contrib's TQC's, which are the same), with SB3's
    defaults."""

    sb3_fixed: ClassVar[dict[str, Any]] = {
        **OffPolicyConfig.sb3_fixed, "use_sde": False,
        "sde_sample_freq": -1, "use_sde_at_warmup": False, "action_noise": None}

    lr: float | Callable[[float], float] = param(
        3e-4, "Adam learning rate of the actor, the critics and the entropy coefficient, or a "
        "function of the fraction of training remaining (1 -> 0)", low=0, low_open=True,
        sb3="learning_rate")
    buffer_size: int = param(int(1e6), "transitions the replay buffer keeps",
                             unit="transitions", low=1)
    learning_starts: int = param(100, "env steps of uniformly random actions at the start; "
                                 "training follows the first vector step that ends past it",
                                 unit="env steps", low=0)
    batch_size: int = param(256, "transitions per gradient step", unit="transitions", low=1)
    tau: float = param(0.005, "Polyak weight of the online weights in the soft target "
                       "update: target <- (1 - tau) target + tau online", low=0,
                       low_open=True, high=1)
    gamma: float = param(0.99, "discount factor (1: a time-limit truncation ends the return)",
                         low=0, high=1)
    train_freq: int = param(
        1, "env steps between training phases, summed over envs (below num_envs: several "
        "phases per vector step); SB3's (n, 'step') is n * num_envs", unit="env steps", low=1,
        sb3=SB3_TRAIN_FREQ)
    gradient_steps: int = param(
        1, GRADIENT_STEPS_DOC,
        unit="gradient steps", low=-1)
    ent_coef: str | float = param("auto", "the entropy coefficient alpha: 'auto' (learned, "
                                  "starting at 1.0), 'auto_X' (learned, starting at X) or a "
                                  "positive number (fixed)")
    target_update_gradient_steps: int = param(
        1, "soft-update the target critics every this many gradient steps (counted over the "
        "run)", unit="gradient steps", low=1, sb3=OtherName("target_update_interval"))
    target_entropy: float | Literal["auto"] = param(
        "auto", "the entropy the learned alpha aims for ('auto': -dim(action space))")
    jit_compile: bool | None = param(None, "compile the training and the acting calls with "
                                     "XLA (None: on, except for a training call of one "
                                     "gradient step, faster here as a plain TF graph)")
    log_interval: int = param(4, "log every this many finished episodes", unit="episodes",
                              low=1)

    def check(self) -> None:
        super().check()
        parse_ent_coef(self.ent_coef)
        if self.target_entropy != "auto" and not math.isfinite(float(self.target_entropy)):
            raise RLBaseError(f"{self.algorithm}: target_entropy must be 'auto' or a finite "
                              f"number, got {self.target_entropy!r}")
