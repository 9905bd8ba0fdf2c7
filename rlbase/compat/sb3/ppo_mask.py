"""sb3-contrib's MaskablePPO: rlbase's PPO with ``action_masks=True`` (rlbase.ppo's
build_model and train; rlbase/docs/action_masking.md)."""

from __future__ import annotations

from typing import Any

from rlbase.common.errors import RLBaseError
from rlbase.compat.sb3.ppo import PPO


class MaskablePPO(PPO):
    """PPO acting and learning among the valid actions only (sb3-contrib's MaskablePPO).

    The masks come from each env's ``action_masks()`` method (sb3-contrib's protocol; wrap
    an env in sb3-contrib's ``ActionMasker`` or give it the method), else from its
    ``info["action_mask"]`` (gymnasium's: Taxi); an env with neither is refused when
    learning, as sb3-contrib refuses it. ``action_masks='method'``, ``'info'`` or ``'auto'``
    given to the constructor choose otherwise. ``predict(obs, action_masks=...)`` acts among
    the given valid actions (without them, among all, as in sb3-contrib). Saved files are
    PPO's: ``PPO.load`` and ``MaskablePPO.load`` read both.
    """

    presets = {"action_masks": True}

    def learn(self, total_timesteps: int, callback: Any = None, log_interval: int | None = None,
              tb_log_name: str | None = None, reset_num_timesteps: bool = True,
              progress_bar: bool = False, use_masking: bool = True) -> MaskablePPO:
        """SB3's learn; ``use_masking=False`` (sb3-contrib's) trains this call without
        masks."""
        if not isinstance(use_masking, bool):
            raise RLBaseError(f"use_masking must be True or False, got {use_masking!r}")
        model = self._require_model()
        config = model.config
        if not use_masking:
            model.config = config.replace(action_masks=False)
        try:
            super().learn(total_timesteps, callback, log_interval, tb_log_name,
                          reset_num_timesteps, progress_bar)
        finally:
            model.config = config
        return self
