"""DQN as a model class (rlbase.dqn's build_model and train)."""

from typing import Any

from rlbase.compat.sb3.base_class import FEED_FORWARD
from rlbase.compat.sb3.epsilon_greedy import EpsilonGreedyModel


class DQN(EpsilonGreedyModel):
    """Deep Q-learning; hyperparameters are those of :func:`rlbase.dqn.dqn.learn`.

    Acting with ``deterministic=False`` is epsilon-greedy with the model's current exploration
    rate (``exploration_rate``); action_probability gives that distribution. The replay buffer
    carries over from one learn() to the next; the exploration schedule runs over each learn()
    call's own steps.

    learn() leaves the model with its last weights, as SB3's DQN does: Baselines' rule that
    hands back the best-scored model (``best_model_interval``, on in
    :func:`rlbase.dqn.dqn.learn` and the CLI) is off here unless given to the constructor or
    to load() (rlbase/docs/sb3_names.md).
    """

    algorithm = "dqn"
    policies = FEED_FORWARD
    # SB3 keeps the last weights; a best-model rule would hand back other weights than trained.
    presets: dict[str, Any] = {"best_model_interval": None}
