"""Envs: making them from ids, DeepMind's Atari wrappers, monitors, env checks (vec envs:
rlbase.common.vec_env)."""
