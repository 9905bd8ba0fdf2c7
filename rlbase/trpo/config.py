"""TRPO's parameters: those of the shared trust-region update, each declared once in
:class:`~rlbase.common.families.trust_region.config.TrustRegionConfig`."""

from __future__ import annotations

from collections.abc import Mapping  # noqa: F401 (the base class's annotations resolve here)
from dataclasses import dataclass
from typing import Any, ClassVar  # noqa: F401 (the base class's annotations resolve here)

from rlbase.common.families.trust_region.config import TrustRegionConfig


@dataclass(frozen=True)
class TRPOConfig(TrustRegionConfig):
    algorithm: ClassVar[str] = "trpo"


CONFIG = TRPOConfig
