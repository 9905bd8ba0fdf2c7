"""Networks: the registry of network builders, policies, distributions and the compiled acting
paths."""
