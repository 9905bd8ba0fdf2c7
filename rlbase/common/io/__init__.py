"""Files: the one model format, resumable checkpoints, the run lock, up-front memory checks."""
