"""SAC's parameters: each declared once, with its type, unit, default, range and SB3 name (the
fields SAC shares with TQC are in rlbase.common.families.soft_actor_critic_config)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rlbase.common.families.soft_actor_critic_config import (
    SoftActorCriticConfig,
    parse_ent_coef,
    target_entropy_value,
)

__all__ = ["CONFIG", "SACConfig", "parse_ent_coef", "target_entropy_value"]


@dataclass(frozen=True)
class SACConfig(SoftActorCriticConfig):
    algorithm: ClassVar[str] = "sac"


CONFIG = SACConfig
