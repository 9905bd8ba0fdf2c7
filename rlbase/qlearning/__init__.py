"""Tabular Q-learning for small Discrete (or discretized Box) state spaces."""
