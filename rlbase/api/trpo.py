"""TRPO as a model class (rlbase.trpo's build_model and train)."""

from rlbase.api.base_class import BaseRLModel


class TRPO(BaseRLModel):
    """Trust region policy optimization; hyperparameters are those of
    :func:`rlbase.trpo.trpo.learn`."""

    algorithm = "trpo"
