"""TQC's parameters: SAC's (rlbase.common.families.soft_actor_critic_config, the same names
and defaults as sb3-contrib's TQC) and the quantile critics' own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rlbase.common.config import param
from rlbase.common.errors import RLBaseError
from rlbase.common.families.soft_actor_critic_config import SoftActorCriticConfig


@dataclass(frozen=True)
class TQCConfig(SoftActorCriticConfig):
    algorithm: ClassVar[str] = "tqc"

    n_quantiles: int = param(25, "quantiles each critic predicts (M; SB3's policy_kwargs "
                             "n_quantiles)", unit="quantiles", low=1, architecture=True)
    n_critics: int = param(5, "quantile critics, each with its own network and target (N; "
                           "the paper's 5; sb3-contrib's policy_kwargs n_critics, default 2 "
                           "there)", unit="critics", low=1, architecture=True)
    top_quantiles_to_drop_per_net: int = param(
        2, "target atoms dropped per critic: of the N * M pooled target atoms sorted, the "
        "largest d * N are left out (d < n_quantiles)", unit="quantiles", low=0)

    def check(self) -> None:
        super().check()
        if self.top_quantiles_to_drop_per_net >= self.n_quantiles:
            raise RLBaseError(f"tqc: top_quantiles_to_drop_per_net must be below n_quantiles "
                              f"({self.n_quantiles}) so that some target atoms are left, got "
                              f"{self.top_quantiles_to_drop_per_net}")


CONFIG = TQCConfig
