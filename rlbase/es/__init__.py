"""Evolution strategies (Salimans et al. 2017): gradient-free policy search with mirrored
perturbations drawn from a shared noise table, evaluated across processes or MPI ranks."""
