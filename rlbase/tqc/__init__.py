"""TQC (truncated quantile critics): SAC's actor and temperature with critics that each predict
quantiles of the return, their pooled target atoms truncated at the top to curb
overestimation."""
