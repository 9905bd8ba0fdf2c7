"""ACKTR's parameters: each declared once, with its type, unit, default and range."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar  # noqa: F401 (the base class's annotations resolve here)

from rlbase.common.config import AlgorithmConfig, lr_decay_field, param
from rlbase.common.errors import RLBaseError


@dataclass(frozen=True)
class ACKTRConfig(AlgorithmConfig):
    algorithm: ClassVar[str] = "acktr"
    mixed_precision_refused: ClassVar[str] = (
        "K-FAC's Kronecker factors and their inverses need float32 activations and gradients")

    nsteps: int = param(20, "env steps per env per update (batch = nsteps * num_envs)",
                        unit="env steps per env", low=1, architecture=True)
    lr: float | Callable[[float], float] = param(
        0.25, "K-FAC learning rate (the cold SGD steps' too), or a function of the fraction "
        "of training remaining (1 -> 0)", low=0, low_open=True)
    lrschedule: str = lr_decay_field(sb3=False)
    ent_coef: float = param(0.01, "weight of the entropy bonus", low=0)
    vf_coef: float = param(0.5, "weight of the value loss", low=0)
    vf_fisher_coef: float = param(1.0, "weight of the value's Gaussian log-likelihood in the "
                                  "sampled Fisher", low=0)
    max_grad_norm: float | None = param(0.5, "clip the cold SGD steps' gradient global norm "
                                        "(None: no clipping)", low=0, low_open=True)
    kfac_clip: float = param(0.001, "trust region: bound on a step's squared Fisher norm "
                             "lr^2 u.g", low=0, low_open=True)
    momentum: float = param(0.9, "momentum of the SGD and K-FAC steps", low=0, high=1,
                            high_open=True)
    stats_decay: float = param(0.99, "running-average decay of the Kronecker factors", low=0,
                               high=1, high_open=True)
    damping: float = param(0.01, "added to the Kronecker product's eigenvalues", low=0,
                           low_open=True)
    cold_iter: int = param(10, "updates of plain momentum SGD (factors averaged) before "
                           "K-FAC steps", unit="updates", low=0)
    inverse_interval: int = param(1, "eigendecompose the factors every this many K-FAC "
                                  "updates (Baselines' kfac_update)", unit="updates", low=1)
    is_async: bool = param(False, "decompose the factors on a queue thread (not built: False "
                           "only)")
    gamma: float = param(0.99, "discount factor", low=0, high=1)
    log_interval: int = param(100, "log every this many updates", unit="updates", low=1)

    def check(self) -> None:
        if self.is_async:
            raise RLBaseError("is_async=True (the eigendecomposition queue) is not built; use "
                              "is_async=False (decompositions in the update, every "
                              "inverse_interval updates)")


CONFIG = ACKTRConfig
