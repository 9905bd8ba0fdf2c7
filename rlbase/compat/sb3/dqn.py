"""DQN as a model class (rlbase.dqn's build_model and train)."""

from typing import cast

from rlbase.common.base_model import SavesExplorationRate
from rlbase.common.errors import RLBaseError
from rlbase.compat.sb3.base_class import FEED_FORWARD, BaseRLModel


class DQN(BaseRLModel):
    """Deep Q-learning; hyperparameters are those of :func:`rlbase.dqn.dqn.learn`.

    Acting with ``deterministic=False`` is epsilon-greedy with the model's current exploration
    rate; action_probability gives that distribution. The replay buffer carries over from one
    learn() to the next; the exploration schedule runs over each learn() call's own steps.
    """

    algorithm = "dqn"
    policies = FEED_FORWARD

    @property
    def exploration_rate(self) -> float:
        """The current epsilon of epsilon-greedy acting (``predict(deterministic=False)``)."""
        return cast(SavesExplorationRate, self._require_model()).epsilon

    @exploration_rate.setter
    def exploration_rate(self, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not 0.0 <= value <= 1.0:
            raise RLBaseError(f"exploration_rate must be a number in [0, 1], got {value!r}")
        cast(SavesExplorationRate, self._require_model()).epsilon = float(value)
