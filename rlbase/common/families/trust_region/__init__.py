"""The trust-region policy update (TRPO's), shared by TRPO and GAIL."""
