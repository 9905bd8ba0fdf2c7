"""A2C as a model class (rlbase.a2c's build_model and train)."""

from rlbase.compat.sb3.base_class import BaseRLModel


class A2C(BaseRLModel):
    """Advantage actor-critic; hyperparameters are those of :func:`rlbase.a2c.a2c.learn`."""

    algorithm = "a2c"
