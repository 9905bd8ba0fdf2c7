"""The parameters of a trust-region policy update (TRPO's), declared once for every algorithm
built on it (TRPO, GAIL). No TensorFlow here: the registry reads configs without it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from rlbase.common.config import SB3_ON_POLICY_FIXED, AlgorithmConfig, OtherName, param


def _per_env(timesteps_per_batch: Any, given: Mapping[str, Any], num_envs: int) -> int:
    """Baselines' timesteps_per_batch counted the whole batch (one env per MPI worker)."""
    return max(1, int(timesteps_per_batch) // max(1, num_envs))


@dataclass(frozen=True)
class TrustRegionConfig(AlgorithmConfig):
    """Baselines' trpo_mpi defaults (its learn()); SB3-contrib's TRPO names as the sb3
    spellings."""

    sb3_fixed: ClassVar[dict[str, Any]] = {**AlgorithmConfig.sb3_fixed, **SB3_ON_POLICY_FIXED}

    nsteps: int = param(1024, "env steps per env per update (batch = nsteps * num_envs)",
                        unit="env steps per env", low=1, sb3="n_steps", architecture=True,
                        deprecated=[OtherName("timesteps_per_batch", _per_env,
                                              "the whole batch: nsteps * num_envs")])
    max_kl: float = param(0.001, "trust region: the mean KL(pi_old || pi) a step aims at (the "
                          "line search accepts up to 1.5 max_kl)", low=0, low_open=True,
                          sb3="target_kl")
    cg_iters: int = param(10, "conjugate-gradient iterations solving F x = g", unit="iterations",
                          low=1, sb3="cg_max_steps")
    cg_damping: float = param(0.01, "added to the Fisher's diagonal in the conjugate gradient",
                              low=0)
    fvp_subsample: int = param(5, "Fisher-vector products on every this-many-th sample of the "
                               "batch (Baselines: 5)", unit="samples", low=1,
                               sb3="sub_sampling_factor")
    line_search_iters: int = param(10, "at most this many step sizes tried by the line search",
                                   unit="steps", low=1, sb3="line_search_max_iter")
    line_search_shrink: float = param(0.5, "each rejected step is multiplied by this", low=0,
                                      high=1, low_open=True, high_open=True,
                                      sb3="line_search_shrinking_factor")
    gamma: float = param(0.99, "discount factor", low=0, high=1)
    lam: float = param(1.0, "GAE lambda (1: Monte-Carlo advantages, 0: one-step TD)", low=0,
                       high=1, sb3="gae_lambda")
    ent_coef: float = param(0.0, "weight of the entropy bonus in the policy objective", low=0,
                            deprecated=["entcoeff"])
    normalize_advantage: bool = param(True, "standardize each batch's advantages to zero mean "
                                      "and unit std")
    vf_lr: float = param(3e-4, "Adam learning rate of the value function fit", low=0,
                         low_open=True, sb3="learning_rate", deprecated=["vf_stepsize"])
    vf_iters: int = param(3, "passes of the value fit over each batch", unit="epochs", low=0,
                          sb3="n_critic_updates")
    vf_batch_size: int = param(64, "minibatch size of the value fit (a last partial minibatch "
                               "is left out)", unit="samples", low=1, sb3="batch_size")
    log_interval: int = param(1, "log every this many updates", unit="updates", low=1)
