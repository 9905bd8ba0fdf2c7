"""GAIL as a model class (rlbase.gail's build_model and train)."""

from rlbase.compat.sb3.base_class import BaseRLModel


class GAIL(BaseRLModel):
    """Generative adversarial imitation learning (TRPO steps on a discriminator's reward);
    hyperparameters are those of :func:`rlbase.gail.gail.learn`, ``expert_path`` among them."""

    algorithm = "gail"
