"""Baselines' ``baselines.deepq`` on rlbase: ``from rlbase.compat.baselines import deepq``, then
``deepq.learn(...)``, ``deepq.load_act(path)`` and ``deepq.baselines_callback(fn)`` as a
Baselines script calls them. ``learn`` is rlbase's DQN (``rlbase.dqn.dqn.learn``: the network
first, see rlbase/docs/migration.md), which takes deepq's ``callback(lcl, glb)``."""

from rlbase.compat.baselines.callback_form import baselines_callback
from rlbase.dqn.dqn import learn, load_act

__all__ = ["baselines_callback", "learn", "load_act"]
