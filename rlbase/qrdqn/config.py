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
    SB3_TRAIN_FREQ,
    OffPolicyConfig,
    param,
)
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
    buffer_size: int = param(1000000, "transitions the replay buffer keeps (behind a "
                             "VecFrameStack each frame is stored once)", unit="transitions",
                             low=1, sb3="buffer_size")
    learning_starts: int = param(100, "env steps of experience collected before training "
                                 "starts (training follows the first vector step that ends "
                                 "past it)", unit="env steps", low=0,
                                 sb3="learning_starts")
    batch_size: int = param(32, "transitions per gradient step", unit="transitions", low=1,
                            sb3="batch_size")
    train_freq: int = param(
        4, "train after every this many env steps (summed over envs; below num_envs: several "
        "phases per vector step); SB3's (n, 'step') is n * num_envs, its plain n is taken as "
        "rlbase's env steps", unit="env steps", low=1,
        sb3=SB3_TRAIN_FREQ)
    gradient_steps: int = param(1, GRADIENT_STEPS_DOC, unit="gradient steps", low=-1)
    gamma: float = param(0.99, "discount factor (1: a time-limit truncation ends the return)",
                         low=0, high=1, sb3="gamma")
    target_update_interval: int = param(
        10000, "copy the online network into the target every this many env steps (summed "
        "over envs; at most once per vector step)", unit="env steps", low=1,
        sb3="target_update_interval")
    exploration_fraction: float = param(
        0.005, "epsilon falls linearly over this fraction of the run's env steps (summed over "
        "envs)", unit="fraction of total_timesteps", low=0, low_open=True, high=1,
        sb3="exploration_fraction")
    exploration_initial_eps: float = param(1.0, "epsilon at the start", low=0, high=1,
                                           unit="probability of a random action",
                                           sb3="exploration_initial_eps")
    exploration_final_eps: float = param(0.01, "epsilon from then on", low=0, high=1,
                                         unit="probability of a random action",
                                         sb3="exploration_final_eps")
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
