"""The borrowed front doors, translated at the edge: the module paths that Baselines-style and
earlier rlbase scripts import (:mod:`rlbase.compat.module_paths`)."""
