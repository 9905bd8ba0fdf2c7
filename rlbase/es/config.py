"""ES's parameters: each declared once, with its type, unit, default, range and SB3 name."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from rlbase.common.config import AlgorithmConfig, param
from rlbase.common.errors import RLBaseError
from rlbase.es.optimizer import FITNESS_SHAPINGS


@dataclass(frozen=True)
class ESConfig(AlgorithmConfig):
    algorithm: ClassVar[str] = "es"
    mixed_precision_refused: ClassVar[str] = (
        "ES evaluates its network in numpy on float32 parameter vectors and takes no gradient")

    popsize: int = param(40, "perturbed parameter vectors per generation, over all ranks (even "
                         "when antithetic: popsize / 2 mirrored pairs)",
                         unit="parameter vectors", low=1)
    noise_stdev: float = param(0.02, "sigma, the scale of the parameter perturbations", low=0,
                               low_open=True)
    lr: float = param(0.01, "Adam's learning rate", low=0, low_open=True, sb3="learning_rate")
    l2coeff: float = param(0.005, "weight decay: l2coeff * theta is added to the (negated) ES "
                           "gradient", low=0)
    episodes_per_batch: int = param(1, "episodes each perturbed vector is scored on; its fitness "
                                    "is their mean return (more than 1 helps on envs with noisy "
                                    "returns)", unit="episodes", low=1)
    center_episodes: int = param(5, "episodes of the unperturbed policy (theta itself) played on "
                                 "the training envs, shared over MPI ranks, at every log row "
                                 "when no eval_env is given (0: none); logged as "
                                 "eval/mean_reward and eval/mean_ep_length, their steps as "
                                 "time/center_timesteps (not counted in total_timesteps)",
                                 unit="episodes", low=0)
    fitness_shaping: str = param("centered_rank", "returns -> fitness: 'centered_rank' (ranks "
                                 "scaled to [-0.5, 0.5]), 'normalize' (zero mean, unit std) or "
                                 "'none' (raw returns)", choices=FITNESS_SHAPINGS)
    antithetic: bool = param(True, "mirrored sampling, theta + sigma*eps and theta - sigma*eps")
    normalize_observations: bool = param(
        True, "normalize observations by running statistics gathered from the perturbed "
        "episodes (updated between generations, the variance floored at 1e-2 as in Salimans et "
        "al.'s code, clipped to +-5)", deprecated=["observation_normalization"],
        architecture=True)
    action_noise: float = param(0.0, "std of Gaussian noise added to the network outputs (logits "
                                "or the Box mean before squashing) in perturbed episodes", low=0)
    max_episode_steps: int | None = param(None, "cut episodes at this length (None: the env's "
                                          "own time limit)", unit="env steps", low=1)
    paired_starts: bool = param(True, "the two episodes of a mirrored pair start from the same "
                                "state (same reset seed): common random numbers, so f+ - f- "
                                "measures the perturbation rather than the luck of the start. "
                                "Only with antithetic=True")
    noise_table_size: int | None = param(None, "entries of the shared noise table (None: "
                                         "max(2**20, 32 * params); a resumed run rebuilds the "
                                         "saved table)", unit="float32 entries", low=1)
    log_interval: int = param(10, "log every this many generations (and after the first and the "
                              "last)", unit="generations", low=1)

    def check(self) -> None:
        if self.antithetic and self.popsize % 2:
            raise RLBaseError(f"es: popsize must be even with antithetic=True (mirrored pairs), "
                              f"got {self.popsize}")

    @classmethod
    def from_saved(cls, saved: Mapping[str, Any], unusable: Iterable[str] = ()) -> dict[str, Any]:
        # rlbase 0.1's files (before center_episodes) used eval_episodes for the unperturbed
        # episodes at each log row.
        if "eval_episodes" in saved and "center_episodes" not in saved:
            saved = {("center_episodes" if k == "eval_episodes" else k): v
                     for k, v in saved.items()}
        return super().from_saved(saved, unusable)


CONFIG = ESConfig
