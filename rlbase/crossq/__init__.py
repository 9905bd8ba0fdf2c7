"""CrossQ: SAC without target networks, its critics (and actor) batch-normalized and the
critics evaluated once on the joined batch of (s, a) and (s', a') so that both halves share
one set of batch statistics."""
