"""PQN's parameters: each declared once, with its type, unit, default and range.

The defaults are the classic-control settings of the PQN paper's reference code as CleanRL
ships them (``pqn.py``: 4 envs x 128 steps, 4 minibatches, 4 epochs, RAdam 2.5e-4 decayed
linearly, lambda 0.65, epsilon 1 -> 0.05 over half the run); the names and units are those
of PPO (the rollout) and DQN (the exploration) in rlbase.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rlbase.common.config import (
    AlgorithmConfig,
    learning_rate_field,
    lr_decay_field,
    param,
)
from rlbase.common.families.q_learning import fields

OPTIMIZERS = ("radam", "adam")


@dataclass(frozen=True)
class PQNConfig(AlgorithmConfig):
    algorithm: ClassVar[str] = "pqn"

    nsteps: int = param(128, "env steps per env per update (batch = nsteps * num_envs)",
                        unit="env steps per env", low=1, architecture=True)
    nminibatches: int = param(4, "minibatches per epoch (must divide nsteps * num_envs)",
                              unit="minibatches", low=1, architecture=True)
    noptepochs: int = param(4, "passes over each batch", unit="epochs", low=1)
    lr: float | Callable[[float], float] = learning_rate_field(2.5e-4, "the optimizer's",
                                                               sb3=False)
    lrschedule: str = lr_decay_field(sb3=False)
    optimizer: str = param("radam", "RAdam (the paper's) or Adam; beta (0.9, 0.999), "
                           "epsilon 1e-8", choices=OPTIMIZERS)
    gamma: float = param(0.99, "discount factor (1: a time-limit truncation ends the return)",
                         low=0, high=1)
    lam: float = param(0.65, "lambda of the Q(lambda) returns (0: one-step targets "
                       "r + gamma max Q(s'), 1: Monte-Carlo returns)", low=0, high=1,
                       deprecated=["q_lambda"])
    exploration_fraction: float = fields.exploration_fraction_field(
        0.5, when="; it is set at the start of each rollout", sb3=False)
    exploration_initial_eps: float = fields.exploration_initial_eps_field(sb3=False)
    exploration_final_eps: float = fields.exploration_final_eps_field(0.05, sb3=False)
    max_grad_norm: float | None = param(10.0, "clip each minibatch gradient's global norm to "
                                        "this (None: no clipping)", low=0, low_open=True)
    layer_norm: bool = param(True, "layer-normalize the network's hidden layers (PQN's "
                             "stabilizer in place of a target network), when its builder "
                             "takes layer_norm", architecture=True)
    jit_compile: bool | None = param(None, "compile the update with XLA (None: for runs of "
                                     "at least 200 updates, except convnets on a CPU)")
    log_interval: int = param(10, "log every this many updates", unit="updates", low=1)


CONFIG = PQNConfig
