"""Tabular Q-learning as a model class (rlbase.qlearning's build_model and train)."""

from typing import Any

from rlbase.common.errors import RLBaseError
from rlbase.compat.sb3.base_class import BaseRLModel


class QLearning(BaseRLModel):
    """A Q-table (policy 'TabularPolicy'); hyperparameters are those of
    :func:`rlbase.qlearning.qlearning.learn`. A later learn() continues from the current
    exploration rate."""

    algorithm = "qlearning"
    policies = ("TabularPolicy",)
    default_network = "tabular"

    def __init__(self, policy: str | None, env: Any, **kwargs: Any):
        if kwargs.get("policy_kwargs"):
            raise RLBaseError(f"QLearning takes no policy_kwargs (a Q-table has no network), "
                              f"got {kwargs['policy_kwargs']!r}")
        super().__init__(policy, env, **kwargs)
