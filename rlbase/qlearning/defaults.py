"""Tabular Q-learning's defaults per env type, merged under the CLI's own arguments."""


def toy_text() -> dict:
    # A large step size decayed linearly to zero: fast on deterministic Taxi, and the decay
    # averages out slippery FrozenLake's noise. Measured at 1e5 steps, seeds 0-2: Taxi-v4
    # evaluates at 7.7-8.1 (optimal ~8), FrozenLake-v1 learns the optimal policy.
    return dict(lr=0.5, lrschedule="linear", gamma=0.99, num_env=1)


def classic_control() -> dict:
    return dict(lr=0.5, lrschedule="linear", gamma=0.99, grid_size=20, num_env=1)
