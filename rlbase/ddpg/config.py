"""DDPG's parameters (with TD3's options): each declared once, with its type, unit, default,
range and SB3 name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from rlbase.common.config import (
    GRADIENT_STEPS_DOC,
    SB3_TRAIN_FREQ,
    OffPolicyConfig,
    OtherName,
    param,
)
from rlbase.common.errors import RLBaseError
from rlbase.ddpg.noise import noise_type_of, parse_noise_type


def _rollout_steps(steps: Any, given: Mapping[str, Any], num_envs: int) -> int:
    """Baselines' nb_rollout_steps counted vector steps (steps per env)."""
    return int(steps) * num_envs


def _one_minus(value: Any, given: Mapping[str, Any], num_envs: int) -> Any:
    """Baselines' HER polyak is the target's own weight: tau = 1 - polyak."""
    return 1.0 - float(value)


def _clip_return(value: Any, given: Mapping[str, Any], num_envs: int) -> float | None:
    """Baselines' HER clip_return (a flag): targets at least -1/(1-gamma), else unclipped."""
    gamma = float(given.get("gamma", DDPGConfig.gamma))
    return -1.0 / (1.0 - gamma) if value and gamma < 1 else None


def _noise_eps(value: Any, given: Mapping[str, Any], num_envs: int) -> str:
    """Baselines' HER noise_eps: the stddev of Gaussian action noise ([-1, 1] units)."""
    return f"normal_{float(value)}"


@dataclass(frozen=True)
class DDPGConfig(OffPolicyConfig):
    algorithm: ClassVar[str] = "ddpg"

    buffer_size: int = param(int(1e6), "transitions the replay buffer keeps",
                             unit="transitions", low=1)
    learning_starts: int = param(0, "env steps of uniformly random actions at the start; "
                                 "training follows the first vector step that ends past it",
                                 unit="env steps", low=0)
    batch_size: int = param(64, "transitions per gradient step", unit="transitions", low=1)
    tau: float = param(0.01, "Polyak weight of the online weights in the soft target update: "
                       "target <- (1 - tau) target + tau online", low=0, low_open=True, high=1,
                       deprecated=[OtherName("polyak", _one_minus, "tau = 1 - polyak")])
    gamma: float = param(0.99, "discount factor (1: a time-limit truncation ends the return)",
                         low=0, high=1)
    train_freq: int = param(
        1, "env steps between training phases, summed over envs (below num_envs: several "
        "phases per vector step); SB3's (n, 'step') is n * num_envs", unit="env steps", low=1,
        sb3=SB3_TRAIN_FREQ,
        deprecated=[OtherName("nb_rollout_steps", _rollout_steps,
                              "in env steps summed over envs: nb_rollout_steps * num_envs")])
    gradient_steps: int = param(
        1, GRADIENT_STEPS_DOC,
        unit="gradient steps", low=-1,
        deprecated=["nb_train_steps", "n_batches"])
    actor_lr: float = param(1e-4, "the actor's Adam learning rate", low=0, low_open=True,
                            sb3="learning_rate", deprecated=["pi_lr"])
    critic_lr: float = param(1e-3, "the critics' Adam learning rate", low=0, low_open=True,
                             sb3="learning_rate", deprecated=["Q_lr"])
    max_grad_norm: float | None = param(None, "clip the actor's and the critics' gradient "
                                        "global norm to this (None: no clipping)", low=0,
                                        low_open=True, deprecated=["clip_norm"])
    critic_l2_reg: float = param(1e-2, "L2 penalty on the critics' hidden kernels", low=0)
    noise_type: str = param("adaptive-param_0.2", "'none', 'adaptive-param_S', 'normal_S', "
                            "'ou_S' or a comma-separated mix; every env has its own "
                            "action-noise process", sb3=OtherName("action_noise", noise_type_of),
                            deprecated=[OtherName("noise_eps", _noise_eps,
                                                  "noise_eps -> 'normal_<noise_eps>'")])
    param_noise_adaption_interval: int = param(
        50, "adapt the parameter-noise scale every this many env steps", unit="env steps",
        low=1)
    normalize_observations: bool = param(
        True, "running mean/std observation normalization, clipped to [-5, 5] (False: the "
        "networks see the raw observations, unclipped)", architecture=True)
    normalize_returns: bool = param(False, "the critics learn normalized returns (running "
                                    "statistics)", architecture=True)
    popart: bool = param(False, "return normalization that rescales the critics' output "
                         "layers (PopArt)", architecture=True)
    reward_scale: float = param(1.0, "sampled rewards are multiplied by this (after "
                                "VecNormalize's scaling)")
    twin_q: bool = param(False, "TD3's two critics, trained on the smaller of their target "
                         "values", architecture=True)
    policy_delay: int = param(1, "update the actor and the targets every this many critic "
                              "steps (TD3: 2)", unit="gradient steps", low=1)
    target_noise: float = param(0.0, "stddev of Gaussian noise on the target action (TD3: "
                                "0.2; 0: none)", low=0, sb3="target_policy_noise")
    target_noise_clip: float = param(0.5, "the target noise is clipped to [-target_noise_clip, "
                                     "target_noise_clip]", low=0)
    target_update_gradient_steps: int = param(
        1, "soft-update the targets after the gradient steps whose count (over the run) is a "
        "multiple of this and that step the actor (policy_delay); Baselines' HER: 40, once per "
        "training phase", unit="gradient steps", low=1)
    action_l2: float = param(0.0, "weight of the actor's action penalty: the actor loss "
                             "adds action_l2 * mean(a^2), actions in [-1, 1] (Baselines' "
                             "HER: 1)", low=0)
    random_eps: float = param(0.0, "probability that an exploring env step takes a uniform "
                              "random action instead of the noisy actor's (Baselines' HER: "
                              "0.3)", low=0, high=1)
    target_min: float | None = param(None, "critic targets are clipped below at this, in "
                                     "return units (None: no clip; Baselines' HER: "
                                     "-1/(1-gamma))",
                                     deprecated=[OtherName("clip_return", _clip_return,
                                                           "True -> -1/(1-gamma)")])
    target_max: float | None = param(None, "critic targets are clipped above at this, in "
                                     "return units (None: no clip; Baselines' HER: 0)")
    obs_clip: float = param(5.0, "normalized observations are clipped to [-obs_clip, "
                            "obs_clip] (Baselines: 5)", low=0, low_open=True,
                            architecture=True, deprecated=["norm_clip"])
    obs_std_min: float = param(0.1, "floor on the std observations are divided by "
                               "(Baselines' DDPG: 0.1; its HER: 0.01)", low=0,
                               low_open=True, architecture=True,
                               deprecated=["norm_eps"])
    render: bool = param(False, "render the training env at every step")
    jit_compile: bool | None = param(None, "compile the training call with XLA (None: on, "
                                     "except under MPI and for convnets on a CPU)")
    log_interval: int = param(4, "log every this many finished episodes", unit="episodes",
                              low=1)


    def check(self) -> None:
        super().check()
        parse_noise_type(self.noise_type, 1, np.random.default_rng(0))
        low, high = self.target_min, self.target_max
        if low is not None and high is not None and low > high:
            raise RLBaseError(f"ddpg: target_min must not exceed target_max, got {low!r} > "
                              f"{high!r}")


CONFIG = DDPGConfig
