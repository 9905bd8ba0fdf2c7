"""SAC as a model class (rlbase.sac's build_model and train)."""

from rlbase.api.base_class import BaseRLModel


class SAC(BaseRLModel):
    """Soft actor-critic; hyperparameters are those of :func:`rlbase.sac.sac.learn` (or their
    SB3 names). action_probability gives the deterministic action tanh(mean), in the env's
    bounds, and the std of the Gaussian before the tanh."""

    algorithm = "sac"
    policies = ("MlpPolicy", "MultiInputPolicy")
