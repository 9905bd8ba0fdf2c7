"""Behaviour cloning for the classes: expert trajectories recorded (:mod:`.expert_traj`), read
back as a dataset and fitted by supervised learning (:mod:`.expert_dataset`)."""

from rlbase.compat.sb3.pretraining.expert_dataset import ExpertDataset, fit_policy

__all__ = ["ExpertDataset", "fit_policy"]
