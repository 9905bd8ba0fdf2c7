"""What gymnasium's step results mean for learning targets, in one place.

An episode cut by a time limit (``truncated``) did not end in the MDP: its return continues
past the cut, so targets bootstrap from the value of the observation the env was in when it
was cut (``infos[i]["final_observation"]``), not from the next episode's first observation.
An episode that ``terminated`` has no future: nothing is bootstrapped.

With ``gamma = 1`` a bootstrapped truncation describes an infinite return (CartPole's +1 per
step has no fixed point: the targets keep rising), so with no discount a truncation ends the
return like a termination: each episode's return is the finite sum of its rewards, what
Baselines computed. Every algorithm applies this rule through :func:`bootstraps_truncation`.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def bootstraps_truncation(gamma: float) -> bool:
    """Whether a time-limit truncation bootstraps from the value of its final observation."""
    return gamma < 1.0


def target_dones(terminated: np.ndarray, truncated: np.ndarray, gamma: float) -> np.ndarray:
    """The episode ends a target must not bootstrap across (float 0/1)."""
    ends = np.asarray(terminated, bool)
    if not bootstraps_truncation(gamma):
        ends = ends | np.asarray(truncated, bool)
    return ends.astype(np.float32)


def final_observations(new_obs: Any, done: np.ndarray, infos: list[dict[str, Any]]) -> Any:
    """``new_obs`` with each finished env's row replaced by the last observation of the episode
    that ended (the step's true next observation; ``new_obs`` already starts the next one)."""
    if not np.any(done):
        return new_obs
    next_obs = new_obs.copy()
    for i in np.flatnonzero(done):
        final = infos[i].get("final_observation")
        if final is not None:
            next_obs[i] = final
    return next_obs
