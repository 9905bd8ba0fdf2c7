"""TRPO as a model class (rlbase.trpo's build_model and train)."""

from rlbase.compat.sb3.base_class import BaseRLModel


class TRPO(BaseRLModel):
    """Trust region policy optimization; hyperparameters are those of
    :func:`rlbase.trpo.trpo.learn`."""

    algorithm = "trpo"
