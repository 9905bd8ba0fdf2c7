"""Small test-only envs (not part of the library)."""
