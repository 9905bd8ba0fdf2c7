"""DQN as a model class (rlbase.dqn's build_model and train)."""

from rlbase.compat.sb3.base_class import FEED_FORWARD
from rlbase.compat.sb3.epsilon_greedy import EpsilonGreedyModel


class DQN(EpsilonGreedyModel):
    """Deep Q-learning; hyperparameters are those of :func:`rlbase.dqn.dqn.learn`.

    Acting with ``deterministic=False`` is epsilon-greedy with the model's current exploration
    rate (``exploration_rate``); action_probability gives that distribution. The replay buffer
    carries over from one learn() to the next; the exploration schedule runs over each learn()
    call's own steps.
    """

    algorithm = "dqn"
    policies = FEED_FORWARD
