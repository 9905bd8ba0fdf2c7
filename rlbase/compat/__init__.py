"""The borrowed front doors, translated at the edge into the one config and the one callback
protocol: the Stable-Baselines3-style classes (:mod:`rlbase.compat.sb3`), the rlib classes
(:mod:`rlbase.compat.rlib`) and the module paths that Baselines-style and earlier rlbase scripts
import (:mod:`rlbase.compat.module_paths`). The core (``rlbase.common`` and the algorithm
packages) never imports from here."""
