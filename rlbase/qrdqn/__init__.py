"""Quantile regression DQN (Dabney et al., 2018)."""
