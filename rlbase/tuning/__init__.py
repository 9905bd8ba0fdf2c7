"""Hyperparameter tuning with Optuna (``rlbase tune``; needs the ``tune`` extra).

``spaces``: the search space of each algorithm, on its config fields; ``study``: the trials,
the pruner wiring and the best trial's hyperparameter file; ``cli``: the command's flags.
"""
