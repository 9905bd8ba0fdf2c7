"""GAIL's parameters: the trust-region step's (declared once in
:class:`~rlbase.common.families.trust_region.config.TrustRegionConfig`, with Baselines' GAIL
defaults) and the discriminator's."""

from __future__ import annotations

from collections.abc import Mapping  # noqa: F401 (the base class's annotations resolve here)
from dataclasses import dataclass
from typing import Any, ClassVar  # noqa: F401 (the base class's annotations resolve here)

from rlbase.common.config import param, redefault
from rlbase.common.errors import RLBaseError
from rlbase.common.families.trust_region.config import TrustRegionConfig

T = TrustRegionConfig


@dataclass(frozen=True)
class GAILConfig(TrustRegionConfig):
    algorithm: ClassVar[str] = "gail"

    # Baselines' GAIL (gail/run_mujoco.py) ran its policy step with these, not trpo_mpi's own;
    # its value fit (gail/trpo_mpi.py) took minibatches of 128.
    max_kl: float = redefault(T, "max_kl", 0.01)
    cg_damping: float = redefault(T, "cg_damping", 0.1)
    gamma: float = redefault(T, "gamma", 0.995)
    lam: float = redefault(T, "lam", 0.97)
    vf_lr: float = redefault(T, "vf_lr", 1e-3)
    vf_iters: int = redefault(T, "vf_iters", 5)
    vf_batch_size: int = redefault(T, "vf_batch_size", 128)

    expert_path: str | None = param(None, "the expert's trajectories: a .npz written by "
                                    "generate_expert_traj (required to train)")
    traj_limitation: int = param(-1, "use only the first this many expert episodes (-1: all)",
                                 unit="episodes", low=-1)
    g_step: int = param(3, "policy updates between two discriminator phases", unit="updates",
                        low=1)
    d_step: int = param(1, "discriminator steps per phase; each takes 1/d_step of the last "
                        "rollout and as many expert pairs", unit="steps", low=1)
    d_lr: float = param(3e-4, "Adam learning rate of the discriminator", low=0, low_open=True,
                        deprecated=["d_stepsize"])
    adversary_hidden_size: int = param(100, "units of each of the discriminator's two tanh "
                                       "layers", unit="units", low=1, architecture=True)
    adversary_entcoeff: float = param(1e-3, "weight of the discriminator's entropy bonus",
                                      low=0)

    def check(self) -> None:
        if self.traj_limitation == 0:
            raise RLBaseError("traj_limitation must be a positive number of expert episodes, "
                              "or -1 for all of them; got 0")


CONFIG = GAILConfig
