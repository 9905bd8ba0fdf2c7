"""PPO as a model class (rlbase.ppo's build_model and train)."""

from rlbase.compat.sb3.base_class import BaseRLModel


class PPO(BaseRLModel):
    """Proximal policy optimization; hyperparameters are those of :func:`rlbase.ppo.ppo.learn`."""

    algorithm = "ppo"
