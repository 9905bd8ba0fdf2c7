"""Buffers: replay (uniform, prioritized, HER), expert data, and what a step's results mean for
targets."""
