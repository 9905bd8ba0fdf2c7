"""Evolution strategies as a model class (rlbase.es's build_model and train)."""

from rlbase.compat.sb3.base_class import BaseRLModel


class ES(BaseRLModel):
    """OpenAI-style evolution strategies; hyperparameters are those of
    :func:`rlbase.es.es.learn`. The policy is deterministic: action_probability is one-hot
    (Discrete) or the action with a zero std (Box)."""

    algorithm = "es"
    policies = ("MlpPolicy", "MultiInputPolicy")
