"""Envs that ship with rlbase: goal envs for Hindsight Experience Replay."""

from rlbase.envs.bit_flipping import BitFlippingEnv

__all__ = ["BitFlippingEnv"]
