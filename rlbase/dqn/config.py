"""DQN's parameters: each declared once, with its type, unit, default, range and SB3 name."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from rlbase.common.config import (
    GRADIENT_STEPS_DOC,
    OffPolicyConfig,
    OtherName,
    param,
)
from rlbase.common.errors import RLBaseError
from rlbase.common.families.q_learning import fields
from rlbase.common.loops.action_masks import action_masks_field


def _log_interval(value: Any, given: Mapping[str, Any], num_envs: int) -> int:
    """Baselines' print_freq=None (or 0) never logged: now a row is written only at the end."""
    return int(value) if value else sys.maxsize


@dataclass(frozen=True)
class DQNConfig(OffPolicyConfig):
    algorithm: ClassVar[str] = "dqn"
    # SB3's tau=1.0 is the hard target copy rlbase makes.
    sb3_fixed: ClassVar[dict[str, Any]] = {**OffPolicyConfig.sb3_fixed, "tau": 1.0}

    lr: float | Callable[[float], float] = param(
        5e-4, "Adam learning rate, or a function of the fraction of training remaining (1 -> 0)",
        low=0, low_open=True, sb3="learning_rate")
    buffer_size: int = fields.buffer_size_field(50000)
    learning_starts: int = fields.learning_starts_field(1000)
    batch_size: int = fields.batch_size_field(32)
    train_freq: int = fields.train_freq_field(1)
    gradient_steps: int = param(1, GRADIENT_STEPS_DOC, unit="gradient steps", low=-1)
    gamma: float = param(0.99, "discount factor (1: a time-limit truncation ends the return)",
                         low=0, high=1, sb3="gamma")
    target_update_interval: int = fields.target_update_interval_field(
        500, ("target_network_update_freq",))
    exploration_fraction: float = fields.exploration_fraction_field(0.1)
    exploration_initial_eps: float = fields.exploration_initial_eps_field()
    exploration_final_eps: float = fields.exploration_final_eps_field(0.02)
    max_grad_norm: float | None = param(
        10.0, "clip each gradient step's global norm to this (None: no clipping)", low=0,
        low_open=True, sb3="max_grad_norm", deprecated=["grad_norm_clipping"])
    double_q: bool = param(True, "the online network picks the next action, the target "
                           "evaluates it")
    dueling: bool = param(True, "Q = V + A - mean(A) from two heads", architecture=True)
    hiddens: tuple[int, ...] = param(
        (256,), "dense ReLU layers of the Q head(s) on the network's output",
        architecture=True)
    layer_norm: bool = param(
        False, "layer-normalize the heads' hidden layers, and the network's when its builder "
        "takes layer_norm (Baselines' deepq; layer_norm=True among the network's arguments "
        "does the same)", architecture=True)
    prioritized_replay: bool = param(False, "sample transitions in proportion to their last TD "
                                     "error")
    prioritized_replay_alpha: float = param(0.6, "how strongly priorities count (0: uniform "
                                            "sampling)", low=0)
    prioritized_replay_beta0: float = param(0.4, "initial importance-weight exponent, annealed "
                                            "linearly to 1", low=0, high=1)
    prioritized_replay_beta_iters: int | None = param(
        None, "env steps the annealing takes (None: the run's)", unit="env steps", low=1)
    prioritized_replay_eps: float = param(1e-6, "added to |TD error| so no priority is zero",
                                          low=0, low_open=True)
    param_noise: bool = param(False, "explore with adaptive parameter-space noise instead of "
                              "epsilon-greedy")
    param_noise_adaption_interval: int = param(
        1, "adapt the noise scale every this many env steps (at most once per vector step), "
        "measured on a replay minibatch; 1 is Baselines' choice: the scale changes by a factor "
        "1.01 each time, so from its initial 0.01 it takes a few hundred adaptations to reach a "
        "useful size",
        unit="env steps", low=1)
    best_model_interval: int | None = param(
        10000, "every this many env steps score the model and keep it if it is the best so "
        "far; the best one is handed back at the end (None: the last model). The score is the "
        "mean greedy return of eval_episodes episodes on eval_env (ties go to the newer model, "
        "the final model competes), else Baselines' rule: the mean return of the last 100 "
        "training episodes the monitor reported, once more than 100 have ended",
        unit="env steps", low=1, deprecated=["checkpoint_freq"])
    jit_compile: bool | None = param(None, "compile the update with XLA (~2 s to compile, "
                                     "faster updates; None: for runs of at least 2000 gradient "
                                     "steps, except convnets on a CPU)")
    action_masks: bool | str = action_masks_field()
    log_interval: int = param(
        100, "log every this many finished episodes (the monitor's: whole games on Atari)",
        unit="episodes", low=1,
        deprecated=[OtherName("print_freq", _log_interval)])

    def check(self) -> None:
        super().check()
        if self.replay_buffer_class == "her" and self.prioritized_replay:
            raise RLBaseError("dqn: prioritized_replay must be False with replay_buffer_class="
                              "'her' (HER samples uniformly, as in SB3)")


CONFIG = DQNConfig
