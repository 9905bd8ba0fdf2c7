"""SAC (soft actor-critic): twin critics with soft-updated targets, a squashed-Gaussian actor
and a learned entropy coefficient."""
