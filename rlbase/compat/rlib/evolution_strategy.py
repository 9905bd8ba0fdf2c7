"""rlib's EvolutionStrategy over rlbase's ES (rlbase.compat.sb3.ES)."""

from __future__ import annotations

from typing import Any

from rlbase.compat.rlib.base import BaseAlgorithm, arguments, network
from rlbase.compat.rlib.envs import EnvSpec
from rlbase.compat.sb3 import ES


class EvolutionStrategy(BaseAlgorithm):
    """Evolution strategies: each iteration (a generation) scores ``num_agents`` perturbed
    copies of the policy, theta + sigma * eps, by one episode each, normalizes their returns
    and moves theta along sum_i r_i eps_i (with Adam at learning rate ``lr``).

    An example, every parameter and the rlbase setting it becomes: rlbase/docs/rlib.md.
    """

    api_class = ES
    unit = "generations"
    many_episodes_per_iteration = True

    def __init__(self, env_kwargs: dict[str, Any], agent_kwargs: dict[str, Any],
                 num_agents: int = 30, num_iterations: int = 300, lr: float = 0.03,
                 sigma: float = 0.1, test_every: int = 50, num_test_episodes: int = 5,
                 max_episode_length: int = -1, max_total_reward: float = -1,
                 save_folder: str = "evolution_strategy", stop_max_score: bool = False,
                 verbose: bool = True, normalize_observation: bool = False,
                 seed: int | None = 42):
        kwargs = arguments(locals())
        spec = EnvSpec(env_kwargs, max_episode_length, max_total_reward)
        super().__init__(kwargs, spec, num_envs=1, save_folder=save_folder, seed=seed,
                         test_every=test_every, num_test_episodes=num_test_episodes,
                         budget=num_iterations, stop_max_score=stop_max_score, verbose=verbose)
        self._build("mlp", network("EvolutionStrategy", "agent_kwargs", agent_kwargs), {
            "popsize": num_agents, "noise_stdev": sigma, "lr": lr,
            # rlib's update: no mirrored pairs, returns normalized, no weight decay; rlib
            # tests the policy itself, so ES's own unperturbed episodes are off.
            "antithetic": False, "paired_starts": False, "fitness_shaping": "normalize",
            "l2coeff": 0.0, "center_episodes": 0,
            "normalize_observations": normalize_observation})
