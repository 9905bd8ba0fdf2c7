"""The config fields the Q-learning algorithms share (DQN, QR-DQN; PQN's exploration), each
declared once with its doc, unit and range; an algorithm gives its own default."""

from __future__ import annotations

from typing import Any

from rlbase.common.config import SB3_TRAIN_FREQ, param


def buffer_size_field(default: int) -> Any:
    return param(default, "transitions the replay buffer keeps (behind a VecFrameStack each "
                 "frame is stored once)", unit="transitions", low=1, sb3="buffer_size")


def learning_starts_field(default: int) -> Any:
    return param(default, "env steps of experience collected before training starts "
                 "(training follows the first vector step that ends past it)",
                 unit="env steps", low=0, sb3="learning_starts")


def batch_size_field(default: int) -> Any:
    return param(default, "transitions per gradient step", unit="transitions", low=1,
                 sb3="batch_size")


def train_freq_field(default: int) -> Any:
    return param(default, "train after every this many env steps (summed over envs; below "
                 "num_envs: several phases per vector step); SB3's (n, 'step') is n * "
                 "num_envs, its plain n is taken as rlbase's env steps", unit="env steps",
                 low=1, sb3=SB3_TRAIN_FREQ)


def target_update_interval_field(default: int, deprecated: tuple[str, ...] = ()) -> Any:
    return param(default, "copy the online network into the target every this many env "
                 "steps (summed over envs; at most once per vector step)", unit="env steps",
                 low=1, sb3="target_update_interval", deprecated=deprecated)


def exploration_fraction_field(default: float, when: str = "", sb3: bool = True) -> Any:
    """``when``: how often epsilon is set, when not at every vector step."""
    return param(default, "epsilon falls linearly over this fraction of the run's env steps "
                 f"(summed over envs){when}", unit="fraction of total_timesteps", low=0,
                 low_open=True, high=1, sb3="exploration_fraction" if sb3 else None)


def exploration_initial_eps_field(sb3: bool = True) -> Any:
    return param(1.0, "epsilon at the start", low=0, high=1,
                 unit="probability of a random action",
                 sb3="exploration_initial_eps" if sb3 else None)


def exploration_final_eps_field(default: float, sb3: bool = True) -> Any:
    return param(default, "epsilon from then on", low=0, high=1,
                 unit="probability of a random action",
                 sb3="exploration_final_eps" if sb3 else None)
