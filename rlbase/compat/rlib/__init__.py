"""rlib's API (``Algorithm(env_kwargs, agent_kwargs, ...).train() / test() / save() / load() /
save_plots() / save_videos()``) as a thin layer over rlbase's algorithms; the parameter
mapping is in rlbase/docs/rlib.md."""

from rlbase.compat.rlib.learning import (
    DDPG,
    PPO,
    BaseAlgorithm,
    DeepQLearning,
    EvolutionStrategy,
    QLearning,
)

__all__ = ["BaseAlgorithm", "DDPG", "DeepQLearning", "EvolutionStrategy", "PPO", "QLearning"]
