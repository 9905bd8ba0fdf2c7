"""Search spaces, one per algorithm, keyed by the algorithm's config field names.

The ranges follow rl-baselines3-zoo's samplers where the zoo has the algorithm (A2C, PPO, DQN,
SAC, TD3, TRPO), converted to rlbase's fields and units; ACER, ES and Q-learning's are rlbase's own.
A dimension is sampled under its Optuna name (``gamma`` is searched as ``one_minus_gamma`` on a
log scale, ``nsteps`` as ``log2_nsteps``); the trial records the field values it trained with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from rlbase.common.errors import RLBaseError

if TYPE_CHECKING:
    import optuna

Params = dict[str, Any]  # the fields sampled so far


@dataclass(frozen=True)
class Budget:
    """What a trial's ranges may depend on: the envs and the env steps it trains for."""

    num_envs: int
    n_timesteps: int


@dataclass(frozen=True)
class Real:
    """A float in [low, high] (log: uniform in its logarithm)."""

    low: float
    high: float
    log: bool = False

    def sample(self, trial: optuna.Trial, name: str, params: Params, budget: Budget) -> float:
        return trial.suggest_float(name, self.low, self.high, log=self.log)


@dataclass(frozen=True)
class Integer:
    """An int in [low, high]; at_most: not above this earlier field's value."""

    low: int
    high: int
    log: bool = False
    at_most: str | None = None

    def sample(self, trial: optuna.Trial, name: str, params: Params, budget: Budget) -> int:
        high = self.high if self.at_most is None else min(self.high, int(params[self.at_most]))
        return trial.suggest_int(name, self.low, max(self.low, high), log=self.log)


@dataclass(frozen=True)
class PowerOfTwo:
    """2**k for k in [low, high], searched as ``log2_<field>``.

    per_update: the value counts env steps per env in one update, so one update
        (value * num_envs env steps) must fit in the trial's budget: k is capped to fit.
    at_most: not above this earlier field's value (minibatches at most the steps per env).
    """

    low: int
    high: int
    per_update: bool = False
    at_most: str | None = None

    def sample(self, trial: optuna.Trial, name: str, params: Params, budget: Budget) -> int:
        high = self.high
        if self.per_update:
            high = min(high, int(math.log2(max(1, budget.n_timesteps // budget.num_envs))))
        if self.at_most is not None:
            high = min(high, int(math.log2(int(params[self.at_most]))))
        return 2 ** trial.suggest_int(f"log2_{name}", self.low, max(self.low, high))


@dataclass(frozen=True)
class OneMinus:
    """1 - x with x in [low, high] on a log scale (a discount near 1), searched as
    ``one_minus_<field>``."""

    low: float
    high: float

    def sample(self, trial: optuna.Trial, name: str, params: Params, budget: Budget) -> float:
        return 1.0 - trial.suggest_float(f"one_minus_{name}", self.low, self.high, log=True)


@dataclass(frozen=True)
class Choice:
    """One of ``options``."""

    options: tuple[Any, ...]

    def sample(self, trial: optuna.Trial, name: str, params: Params, budget: Budget) -> Any:
        return trial.suggest_categorical(name, self.options)


@dataclass(frozen=True)
class SameAs:
    """Not searched: the value of an earlier field (one gradient step per env step)."""

    other: str

    def sample(self, trial: optuna.Trial, name: str, params: Params, budget: Budget) -> Any:
        return params[self.other]


Dimension = Union[Real, Integer, PowerOfTwo, OneMinus, Choice, SameAs]
Space = dict[str, Dimension]

_LR = Real(1e-5, 2e-3, log=True)
_GAMMA = OneMinus(1e-4, 0.03)
_ENT_COEF = Real(1e-8, 0.1, log=True)
_TAU = Real(1e-3, 0.08, log=True)
# rl_zoo3's SAC sampler in rlbase's fields (TQC adds its dropped atoms)
_SAC: Space = {
    "gamma": _GAMMA,
    "batch_size": PowerOfTwo(5, 11),
    "lr": _LR,
    "train_freq": Integer(1, 10),
    "gradient_steps": SameAs("train_freq"),
    "tau": _TAU,
}
# rl_zoo3's DQN sampler in rlbase's fields (QR-DQN adds its quantiles)
_DQN: Space = {
    "gamma": _GAMMA,
    "batch_size": PowerOfTwo(5, 11),
    "lr": _LR,
    "train_freq": Integer(1, 10),
    "gradient_steps": Integer(1, 8, at_most="train_freq"),
    "exploration_fraction": Real(0.0, 0.5),
    "exploration_final_eps": Real(0.0, 0.2),
    "target_update_interval": Integer(1, 20000, log=True),
}

# Fields are sampled in this order: a dimension may depend on the ones above it.
SPACES: dict[str, Space] = {
    "a2c": {
        "nsteps": PowerOfTwo(3, 11, per_update=True),
        "gamma": _GAMMA,
        "lam": OneMinus(1e-4, 0.1),
        "lr": _LR,
        "ent_coef": _ENT_COEF,
        "vf_coef": Real(0.2, 1.0),
        "max_grad_norm": Real(0.3, 2.0),
    },
    "acktr": {
        "nsteps": PowerOfTwo(3, 7, per_update=True),
        "gamma": _GAMMA,
        "lr": Real(0.01, 1.0, log=True),
        "ent_coef": _ENT_COEF,
        "vf_coef": Real(0.2, 1.0),
        "kfac_clip": Real(1e-4, 1e-2, log=True),
    },
    "acer": {
        "nsteps": PowerOfTwo(3, 6, per_update=True),
        "gamma": _GAMMA,
        "lr": _LR,
        "ent_coef": _ENT_COEF,
        "q_coef": Real(0.2, 1.0),
        "max_grad_norm": Real(1.0, 20.0, log=True),
        "replay_ratio": Integer(1, 8),
        "tau": _TAU,
    },
    "ddpg": {  # and td3 (ddpg with twin_q, policy_delay and target_noise preset)
        "gamma": _GAMMA,
        "batch_size": PowerOfTwo(5, 11),
        "actor_lr": _LR,
        "critic_lr": _LR,
        "train_freq": Integer(1, 10),
        "gradient_steps": SameAs("train_freq"),
        "tau": _TAU,
        "noise_type": Choice(("none", "normal_0.1", "normal_0.3", "ou_0.1", "ou_0.3",
                              "adaptive-param_0.2")),
    },
    "dqn": _DQN,
    # QR-DQN: DQN's space and the zoo's n_quantiles range (rl_zoo3 sample_qrdqn_params)
    "qrdqn": {**_DQN, "n_quantiles": Integer(5, 200)},
    "es": {
        "popsize": Choice((10, 20, 40, 80)),
        "noise_stdev": Real(0.005, 0.1, log=True),
        "lr": Real(1e-3, 0.1, log=True),
        "l2coeff": Real(1e-4, 0.05, log=True),
    },
    "ppo": {
        "nsteps": PowerOfTwo(5, 12, per_update=True),
        "nminibatches": PowerOfTwo(0, 6, at_most="nsteps"),
        "noptepochs": Choice((1, 5, 10, 20)),
        "gamma": _GAMMA,
        "lam": OneMinus(1e-4, 0.1),
        "lr": _LR,
        "ent_coef": _ENT_COEF,
        "cliprange": Choice((0.1, 0.2, 0.3, 0.4)),
        "max_grad_norm": Real(0.3, 2.0),
    },
    # rl-baselines3-zoo's TRPO sampler (n_steps, batch_size, target_kl, n_critic_updates,
    # cg_max_steps, line_search_shrinking_factor) in rlbase's fields
    "trpo": {
        "nsteps": PowerOfTwo(3, 11, per_update=True),
        "vf_batch_size": PowerOfTwo(3, 9, at_most="nsteps"),
        "gamma": _GAMMA,
        "lam": OneMinus(1e-4, 0.1),
        "vf_lr": Real(1e-5, 1e-2, log=True),
        "max_kl": Choice((0.1, 0.05, 0.03, 0.02, 0.01, 0.005, 0.001)),
        "vf_iters": Integer(5, 30),
        "cg_iters": Integer(5, 30),
        "line_search_shrink": Real(0.6, 0.99),
    },
    # GAIL: the policy's trust-region step and the discriminator's pace (expert_path stays
    # fixed: give it with the study's fixed parameters)
    "gail": {
        "nsteps": PowerOfTwo(8, 12, per_update=True),
        "gamma": _GAMMA,
        "lam": OneMinus(1e-4, 0.1),
        "max_kl": Choice((0.05, 0.02, 0.01, 0.005, 0.001)),
        "g_step": Integer(1, 5),
        "d_lr": Real(1e-5, 1e-3, log=True),
        "adversary_entcoeff": Real(1e-4, 1e-1, log=True),
    },
    "qlearning": {
        "lr": Real(0.01, 1.0, log=True),
        "gamma": OneMinus(1e-3, 0.1),
        "exploration_final_eps": Real(0.0, 0.2),
    },
    "sac": _SAC,
    # TQC: SAC's space and how many target atoms each critic drops (below n_quantiles' 25)
    "tqc": {**_SAC, "top_quantiles_to_drop_per_net": Integer(0, 5)},
    # PQN: the rollout's shape, the optimizer's step and the Q(lambda) mixing
    "pqn": {
        "nsteps": PowerOfTwo(4, 8, per_update=True),
        "nminibatches": Choice((1, 2, 4, 8)),
        "noptepochs": Integer(1, 8),
        "lr": _LR,
        "gamma": _GAMMA,
        "lam": Real(0.0, 1.0),
        "exploration_fraction": Real(0.05, 0.5),
        "exploration_final_eps": Real(0.0, 0.1),
    },
    # CrossQ: SAC's space without tau (no target networks) and with the actor's delay
    "crossq": {
        "gamma": _GAMMA,
        "batch_size": PowerOfTwo(5, 11),
        "lr": _LR,
        "train_freq": Integer(1, 10),
        "gradient_steps": SameAs("train_freq"),
        "policy_delay": Integer(1, 5),
    },
}


def space(algorithm: str) -> Space:
    """The search space of an algorithm (rlbase's name, not an alias)."""
    if algorithm not in SPACES:
        raise RLBaseError(f"no search space for {algorithm!r}; spaces: {', '.join(SPACES)}")
    return SPACES[algorithm]


def sample(trial: optuna.Trial, algorithm: str, budget: Budget) -> dict[str, Any]:
    """A trial's field values, sampled in the space's order."""
    params: Params = {}
    for name, dimension in space(algorithm).items():
        params[name] = dimension.sample(trial, name, params, budget)
    return params
