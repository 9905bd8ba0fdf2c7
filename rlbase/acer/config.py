"""ACER's parameters: each declared once, with its type, unit, default, range and SB3 name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Real
from typing import Any, ClassVar

from rlbase.common.config import (
    AlgorithmConfig,
    OtherName,
    learning_rate_field,
    lr_decay_field,
    param,
)
from rlbase.common.errors import RLBaseError


def _tau(alpha: Any, given: Mapping[str, Any], num_envs: int) -> float:
    """ACER's old ``alpha`` kept this much of the average at each update: tau = 1 - alpha."""
    if isinstance(alpha, bool) or not isinstance(alpha, Real):
        raise RLBaseError("must be a number in [0, 1]")
    return 1.0 - float(alpha)


@dataclass(frozen=True)
class ACERConfig(AlgorithmConfig):
    algorithm: ClassVar[str] = "acer"

    nsteps: int = param(20, "env steps per env per update (one sequence of this length per "
                        "env)", unit="env steps per env", low=1, sb3="n_steps",
                        architecture=True)
    lr: float | Callable[[float], float] = learning_rate_field(7e-4, "RMSProp")
    lrschedule: str = lr_decay_field()
    q_coef: float = param(0.5, "weight of the Q loss in the total loss", low=0)
    ent_coef: float = param(0.01, "weight of the entropy bonus", low=0)
    max_grad_norm: float | None = param(10.0, "clip the gradient's global norm to this (None: "
                                        "no clipping)", low=0, low_open=True)
    rms_alpha: float = param(0.99, "RMSProp decay of the mean square, which starts at 1 (TF1's "
                             "RMSProp)", low=0, high=1, deprecated=["rprop_alpha"])
    rms_epsilon: float = param(1e-5, "RMSProp epsilon, added inside the square root (TF1's "
                               "RMSProp, the reference's)", low=0, low_open=True,
                               deprecated=["rprop_epsilon"])
    gamma: float = param(0.99, "discount factor (1: a time-limit truncation ends the return)",
                         low=0, high=1)
    # Baselines' buffer_size counts each env's steps, not transitions summed over envs (the
    # unit of buffer_size in DQN, SAC and DDPG): the name says so.
    buffer_size_per_env: int = param(
        50000, "replay buffer size per env (it keeps buffer_size_per_env // nsteps rollouts "
        "of all envs, as Baselines' ACER did)", unit="env steps per env", low=1,
        deprecated=[OtherName("buffer_size", note="counted per env, as before")])
    replay_ratio: float = param(4.0, "each on-policy update is followed by Poisson(replay_ratio)"
                                " off-policy updates on replayed sequences (0: on-policy ACER, "
                                "no buffer)", unit="replay updates per update", low=0)
    replay_start: int = param(10000, "replay starts once the buffer holds this many env steps "
                              "per env", unit="env steps per env", low=0)
    c: float = param(10.0, "importance weight clipping factor (the truncation of rho; the rest "
                     "is bias-corrected)", low=0)
    trust_region: bool = param(True, "bound the policy update by the KL divergence to the "
                               "averaged policy")
    tau: float = param(0.01, "Polyak weight of the policy's weights in the averaged policy's "
                       "update after each step: average <- (1 - tau) * average + tau * policy",
                       low=0, high=1,
                       deprecated=[OtherName("alpha", _tau, "the average's decay: tau = 1 - "
                                             "alpha")])
    delta: float = param(1.0, "the KL bound of the trust region", low=0)
    jit_compile: bool | None = param(None, "compile the update with XLA (None: for runs of at "
                                     "least 1000 updates, except convnets on a CPU)")
    log_interval: int = param(100, "log every this many on-policy updates", unit="updates",
                              low=1)
    checkpoint_interval: int = param(
        0, "write a resumable checkpoint (model, averaged policy, optimizer, replay buffer, "
        "counters, generators) every this many env steps (0: never; Ctrl-C still writes one "
        "when checkpoint_path is set)", unit="env steps", low=0)

    def check(self) -> None:
        if self.replay_ratio == 0:
            return  # on-policy ACER needs no buffer: its sizes are not checked
        if self.replay_start > self.buffer_size_per_env:
            raise RLBaseError(f"acer: replay_start={self.replay_start} is larger than "
                              f"buffer_size_per_env={self.buffer_size_per_env}: replay would "
                              "never start; use replay_start <= buffer_size_per_env")
        if self.buffer_size_per_env < self.nsteps:
            raise RLBaseError(f"acer: buffer_size_per_env={self.buffer_size_per_env} holds no "
                              f"sequence of nsteps={self.nsteps}: use buffer_size_per_env >= "
                              "nsteps")


CONFIG = ACERConfig
