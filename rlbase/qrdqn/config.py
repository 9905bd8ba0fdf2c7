"""QR-DQN's parameters: each declared once, with its type, unit, default, range and SB3 name.

The defaults are sb3-contrib's ``QRDQN`` (2.x) and its policy's (200 quantiles, the whole
Q-network given by ``network``: no head layers); the names and units are DQN's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from rlbase.common.config import (
    GRADIENT_STEPS_DOC,
    OffPolicyConfig,
    param,
)
from rlbase.common.families.q_learning import fields
from rlbase.common.loops.action_masks import action_masks_field


@dataclass(frozen=True)
class QRDQNConfig(OffPolicyConfig):
    algorithm: ClassVar[str] = "qrdqn"
    # SB3's tau=1.0 is the hard target copy rlbase makes.
    sb3_fixed: ClassVar[dict[str, Any]] = {**OffPolicyConfig.sb3_fixed, "tau": 1.0}

    lr: float | Callable[[float], float] = param(
        5e-5, "Adam learning rate, or a function of the fraction of training remaining "
        "(1 -> 0); Adam's epsilon is 0.01 / batch_size, the paper's and sb3-contrib's",
        low=0, low_open=True, sb3="learning_rate")
    buffer_size: int = fields.buffer_size_field(1000000)
    learning_starts: int = fields.learning_starts_field(100)
    batch_size: int = fields.batch_size_field(32)
    train_freq: int = fields.train_freq_field(4)
    gradient_steps: int = param(1, GRADIENT_STEPS_DOC, unit="gradient steps", low=-1)
    gamma: float = param(0.99, "discount factor (1: a time-limit truncation ends the return)",
                         low=0, high=1, sb3="gamma")
    target_update_interval: int = fields.target_update_interval_field(10000)
    exploration_fraction: float = fields.exploration_fraction_field(0.005)
    exploration_initial_eps: float = fields.exploration_initial_eps_field()
    exploration_final_eps: float = fields.exploration_final_eps_field(0.01)
    max_grad_norm: float | None = param(
        None, "clip each gradient step's global norm to this (None: no clipping)", low=0,
        low_open=True, sb3="max_grad_norm")
    n_quantiles: int = param(
        200, "quantiles of the return each action's output estimates, at the midpoints "
        "(2i + 1) / (2 n_quantiles); Q is their mean (SB3: policy_kwargs n_quantiles)",
        unit="quantiles", low=1, architecture=True)
    hiddens: tuple[int, ...] = param(
        (), "dense ReLU layers of the quantile head on the network's output (none: the "
        "network is the whole Q-network, as SB3's net_arch)", architecture=True)
    best_model_interval: int | None = param(
        None, "every this many env steps score the model and keep it if it is the best so "
        "far; the best one is handed back at the end (None: the last model, as sb3-contrib). "
        "The score is the mean greedy return of eval_episodes episodes on eval_env (ties go "
        "to the newer model, the final model competes), else the mean return of the last 100 "
        "training episodes, once more than 100 have ended", unit="env steps", low=1)
    jit_compile: bool | None = param(None, "compile the update with XLA (~2 s to compile, "
                                     "faster updates; None: for runs of at least 2000 gradient "
                                     "steps, except convnets on a CPU)")
    action_masks: bool | str = action_masks_field()
    log_interval: int = param(4, "log every this many finished episodes (SB3's default; the "
                              "monitor's episodes: whole games on Atari)", unit="episodes",
                              low=1)


CONFIG = QRDQNConfig
