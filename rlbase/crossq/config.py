"""CrossQ's parameters: SAC's (rlbase.common.families.soft_actor_critic_config) with
sb3-contrib's CrossQ defaults (lr 1e-3, policy_delay 3), the widths of the critics and the
batch renormalization's settings. CrossQ has no target networks: tau and
target_update_gradient_steps are refused unless left at the values that mean "none"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from rlbase.common.config import param
from rlbase.common.errors import RLBaseError
from rlbase.common.families.soft_actor_critic_config import SoftActorCriticConfig


@dataclass(frozen=True)
class CrossQConfig(SoftActorCriticConfig):
    algorithm: ClassVar[str] = "crossq"

    lr: float | Callable[[float], float] = param(
        1e-3, "Adam learning rate of the actor and the critics (betas 0.5, 0.999) and of the "
        "entropy coefficient (0.9, 0.999), or a function of the fraction of training "
        "remaining (1 -> 0)", low=0, low_open=True, sb3="learning_rate")
    tau: float = param(1.0, "no target networks here: must stay 1.0 (sb3-contrib's CrossQ "
                       "passes tau=1.0 and has no tau argument)", low=0, low_open=True, high=1)
    policy_delay: int = param(3, "update the actor (and the entropy coefficient) every this "
                              "many critic steps", unit="gradient steps", low=1)
    n_critics: int = param(2, "critics, each its own network; the target takes their minimum "
                           "(SB3's policy_kwargs n_critics)", unit="critics", low=1,
                           architecture=True)
    critic_layer_sizes: tuple[int, ...] = param(
        (1024, 1024), "hidden layer widths of every critic (sb3-contrib's net_arch 'qf'); the "
        "actor's are the network's layer_sizes (256, 256 by default)", architecture=True)
    batch_norm: bool = param(True, "batch renormalization before every dense layer of the "
                             "actor and the critics, and after the actor's last hidden layer "
                             "(SB3's policy_kwargs batch_norm)", architecture=True)
    batch_norm_momentum: float = param(
        0.01, "weight of the batch in the moving statistics: moving <- moving + momentum "
        "(batch - moving) (PyTorch's convention; Keras' momentum is 1 minus this)", low=0,
        low_open=True, high=1)
    batch_norm_eps: float = param(0.001, "added to the variance before its square root",
                                  low=0, low_open=True)
    renorm_warmup_steps: int = param(
        100_000, "training-mode calls of a normalization layer that use the batch statistics "
        "alone (plain batch normalization); after them the batch statistics are corrected "
        "towards the moving ones (r clipped to [1/3, 3], d to [-5, 5])", unit="calls", low=0)

    def check(self) -> None:
        super().check()
        if self.tau != 1.0:
            raise RLBaseError(f"crossq has no target networks: leave tau at 1.0, got {self.tau}")
        if self.target_update_gradient_steps != 1:
            raise RLBaseError("crossq has no target networks: leave "
                              "target_update_gradient_steps at 1, got "
                              f"{self.target_update_gradient_steps}")
        sizes: Any = self.critic_layer_sizes
        if not isinstance(sizes, (tuple, list)) or not sizes or any(
                isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in sizes):
            raise RLBaseError(f"crossq: critic_layer_sizes must be a non-empty list of positive "
                              f"widths, got {sizes!r}")


CONFIG = CrossQConfig
