"""Envs that ship with rlbase: goal envs for Hindsight Experience Replay."""

import gymnasium as _gym

from rlbase.envs.bit_flipping import BitFlippingEnv

__all__ = ["BitFlippingEnv"]

# An id for the command line: --env=rlbase.envs:BitFlippingEnv-v0 (--env_kwargs for n_bits).
if "BitFlippingEnv-v0" not in _gym.registry:
    _gym.register("BitFlippingEnv-v0", entry_point="rlbase.envs.bit_flipping:BitFlippingEnv")
