"""TRPO's losses: pure functions of the policy's outputs, formula in each docstring.

They live in :mod:`rlbase.common.families.trust_region.losses` because GAIL runs the same update and
no algorithm package imports another's; this module names them for TRPO.
"""

from rlbase.common.families.trust_region.losses import (
    mean_entropy,
    mean_kl,
    policy_gain,
    surrogate_gain,
    value_loss,
)

__all__ = ["mean_entropy", "mean_kl", "policy_gain", "surrogate_gain", "value_loss"]
