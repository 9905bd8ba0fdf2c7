"""ACKTR as a model class (rlbase.acktr's build_model and train)."""

from rlbase.compat.sb3.base_class import BaseRLModel


class ACKTR(BaseRLModel):
    """Actor-critic with a Kronecker-factored trust region; hyperparameters are those of
    :func:`rlbase.acktr.acktr.learn`."""

    algorithm = "acktr"
