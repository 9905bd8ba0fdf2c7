"""DDPG (deep deterministic policy gradient) with the TD3 options: twin critics, delayed
actor updates and target policy smoothing."""
