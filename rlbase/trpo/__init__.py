"""TRPO: trust region policy optimization (Baselines' trpo_mpi)."""
