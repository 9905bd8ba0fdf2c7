"""Old import paths that keep working: Baselines' layout (``baselines.common.cmd_util`` ->
``rlbase.common.cmd_util``, ``baselines.logger`` -> ``rlbase.logger``) and rlbase's own before
``rlbase.common`` was split by concern and the SB3-style and rlib classes moved into
:mod:`rlbase.compat` (``rlbase.api`` -> ``rlbase.compat.sb3``, ``rlbase.rlib`` ->
``rlbase.compat.rlib``).

An old path imports the very module object of its new path (not a copy), so a monkeypatch, an
``isinstance`` check or an unpickled class sees one module whichever path named it. Nothing is
imported until an old path is used.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

# old module under rlbase.common -> its module now, under rlbase.common
_COMMON = {
    "atari_wrappers": "envs.atari_wrappers", "env_checker": "envs.env_checker",
    "env_util": "envs.env_util", "monitor": "envs.monitor", "reset_args": "envs.reset_args",
    "cmd_util": "envs.make", "checks": "envs.checks",
    "models": "networks.registry", "policies": "networks.policies",
    "distributions": "networks.distributions", "compiled_policy": "networks.compiled_policy",
    "policy_graph": "networks.policy_graph", "numpy_actor": "networks.numpy_actor",
    "replay_buffer": "buffers.replay_buffer", "segment_tree": "buffers.segment_tree",
    "her_replay_buffer": "buffers.her_replay_buffer", "expert_data": "buffers.expert_data",
    "transitions": "buffers.transitions",
    "loop": "loops.training_loop", "learning": "loops.learning", "signals": "loops.signals",
    "evaluation": "loops.evaluation", "episodes": "loops.episodes", "rollout": "loops.rollout",
    "runners": "loops.runners", "callbacks": "loops.callbacks",
    "trust_region": "families.trust_region.steps",
    "trust_region_config": "families.trust_region.config",
    "trust_region_losses": "families.trust_region.losses",
    "trust_region_model": "families.trust_region.model",
    "on_policy_model": "families.actor_critic", "continuous": "families.continuous",
    "her_baselines": "families.her_baselines",
    "logger": "logs.logger", "tensorboard": "logs.tensorboard", "plot_util": "logs.plot_util",
    "media": "logs.media",
    "off_policy": "buffers.raw_replay",
    "serialization": "io.serialization", "checkpoint": "io.checkpoint",
    "run_lock": "io.run_lock", "memory": "io.memory",
}

#: every old dotted path -> the module it now names
OLD_PATHS: dict[str, str] = {
    **{f"rlbase.common.{old}": f"rlbase.common.{new}" for old, new in _COMMON.items()},
    "rlbase.logger": "rlbase.common.logs.logger",   # Baselines' ``from baselines import logger``
    "rlbase.common.hyperparams": "rlbase.hyperparams",
    # Baselines' deepq callback form, now in this compatibility layer.
    "rlbase.common.baselines_callback": "rlbase.compat.baselines.callback_form",
    "rlbase.common.loops.baselines_callback": "rlbase.compat.baselines.callback_form",
    **{f"rlbase.export.{name}": f"rlbase.common.export.{name}" for name in
       ("graph", "saved_model", "tflite", "onnx", "check", "runners", "metadata")},
    # The SB3-style classes and the rlib classes, now in this compatibility layer.
    "rlbase.api": "rlbase.compat.sb3",
    **{f"rlbase.api.{name}": f"rlbase.compat.sb3.{name}" for name in
       ("a2c", "acer", "acktr", "base_class", "callbacks", "ddpg", "dqn", "es", "gail",
        "policy", "policy_kwargs", "ppo", "pretraining", "qlearning", "replay", "sac", "saving",
        "trpo")},
    # Behaviour cloning's trajectory recorder, now beside the dataset it writes for.
    **{f"rlbase.{old}.behaviour_cloning": "rlbase.compat.sb3.pretraining.expert_traj"
       for old in ("api", "compat.sb3")},
    "rlbase.rlib": "rlbase.compat.rlib",
    **{f"rlbase.rlib.{name}": f"rlbase.compat.rlib.{name}" for name in
       ("base", "ddpg", "deep_q_learning", "envs", "evolution_strategy", "learning", "ppo",
        "q_learning", "records")},
}


class _Alias(importlib.abc.Loader):
    """Hands the import system the new path's module for an old path."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # Already executed under its own name; the import system has just stamped the old
        # path's spec on it, which would make the module misreport its own name.
        module.__spec__ = self.own_spec


class OldPathFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :data:`OLD_PATHS` (and nothing else)."""

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = OLD_PATHS.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, OldPathFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, OldPathFinder())
