"""QR-DQN as a model class, sb3-contrib's ``QRDQN`` (rlbase.qrdqn's build_model and train)."""

from rlbase.compat.sb3.base_class import FEED_FORWARD
from rlbase.compat.sb3.epsilon_greedy import EpsilonGreedyModel


class QRDQN(EpsilonGreedyModel):
    """Quantile regression DQN; hyperparameters are those of :func:`rlbase.qrdqn.qrdqn.learn`
    (sb3-contrib's names too; ``policy_kwargs=dict(n_quantiles=N, net_arch=[...])``).

    Acting with ``deterministic=False`` is epsilon-greedy (on the mean of each action's
    quantiles) with the model's current exploration rate (``exploration_rate``). The replay
    buffer carries over from one learn() to the next; the exploration schedule runs over each
    learn() call's own steps.
    """

    algorithm = "qrdqn"
    policies = FEED_FORWARD
