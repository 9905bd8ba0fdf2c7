"""ACER as a model class (rlbase.acer's build_model and train)."""

from rlbase.compat.sb3.base_class import BaseRLModel


class ACER(BaseRLModel):
    """Actor-critic with experience replay; hyperparameters are those of
    :func:`rlbase.acer.acer.learn` (Discrete actions only)."""

    algorithm = "acer"
