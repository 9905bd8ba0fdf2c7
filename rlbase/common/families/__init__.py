"""Code that two or more algorithms share: the trust-region core, actor-critic models, continuous
control, HER settings."""
