"""PQN as a model class (rlbase.pqn's build_model and train); neither SB3 nor sb3-contrib has
one, so its arguments are rlbase's names."""

from rlbase.compat.sb3.base_class import FEED_FORWARD
from rlbase.compat.sb3.epsilon_greedy import EpsilonGreedyModel


class PQN(EpsilonGreedyModel):
    """Parallel Q-learning with lambda-returns (no replay buffer, no target network);
    hyperparameters are those of :func:`rlbase.pqn.pqn.learn`.

    Acting with ``deterministic=False`` is epsilon-greedy with the model's current exploration
    rate (``exploration_rate``); each learn() call runs the exploration schedule over its own
    steps.
    """

    algorithm = "pqn"
    policies = FEED_FORWARD
