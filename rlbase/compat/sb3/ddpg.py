"""DDPG and TD3 (its twin-critic options) as model classes (rlbase.ddpg's build_model and
train)."""

from typing import Any

from rlbase.compat.sb3.base_class import BaseRLModel


class DDPG(BaseRLModel):
    """Deep deterministic policy gradient; hyperparameters are those of
    :func:`rlbase.ddpg.ddpg.learn`. The policy is deterministic: action_probability gives the
    actor's action as the mean and a zero std."""

    algorithm = "ddpg"
    policies = ("MlpPolicy", "MultiInputPolicy")


class TD3(DDPG):
    """TD3 (Fujimoto et al. 2018): DDPG with twin critics, delayed actor updates and target
    policy smoothing (twin_q=True, policy_delay=2, target_noise=0.2 unless given)."""

    presets: dict[str, Any] = {"twin_q": True, "policy_delay": 2, "target_noise": 0.2}
