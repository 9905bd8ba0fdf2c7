"""What SB3's epsilon-greedy classes (DQN, sb3-contrib's QRDQN) add: ``exploration_rate``."""

from typing import cast

from rlbase.common.base_model import SavesExplorationRate
from rlbase.common.errors import RLBaseError
from rlbase.compat.sb3.base_class import BaseRLModel


class EpsilonGreedyModel(BaseRLModel):
    """A class whose model acts epsilon-greedily with ``deterministic=False``."""

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
