"""The ES update: fitness shaping, the gradient estimate from mirrored perturbations, Adam.

All in numpy and deterministic: every MPI rank runs it on the same gathered lists and so
holds bit-identical parameters without ever sending them.
"""

from __future__ import annotations

import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.es.noise_table import NoiseTable

FITNESS_SHAPINGS = ("centered_rank", "normalize", "none")


def ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1 of the entries of ``x`` (any shape), ties given their average rank.

    Averaging ties matters for ES: when both members of a mirrored pair hit the same score (a
    capped episode, say), their difference must be 0, not +-1 from an arbitrary order.
    """
    _, inverse, counts = np.unique(np.asarray(x, np.float64), return_inverse=True,
                                   return_counts=True)
    # Each run of equal values [start, end) gets the mean of the ranks start..end-1.
    ends = np.cumsum(counts)
    return (0.5 * (ends - counts + ends - 1))[inverse.reshape(np.shape(x))]


def centered_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks scaled to [-0.5, 0.5] (Salimans et al.): invariant to any monotone change of the
    returns, and no outlier episode dominates the update."""
    x = np.asarray(x)
    if x.size < 2:
        return np.zeros(x.shape, np.float64)
    return ranks(x) / (x.size - 1) - 0.5


def shape_fitness(returns: np.ndarray, method: str) -> np.ndarray:
    """Fitness values from raw returns: 'centered_rank', 'normalize' (zero mean, unit std) or
    'none' (the returns themselves)."""
    returns = np.asarray(returns, np.float64)
    if method == "centered_rank":
        return centered_ranks(returns)
    if method == "normalize":
        std = returns.std()
        return (returns - returns.mean()) / (std if std > 0 else 1.0)
    if method == "none":
        return returns
    raise RLBaseError(f"unknown fitness_shaping '{method}'; use one of "
                      f"{', '.join(FITNESS_SHAPINGS)}")


def es_gradient(noise: NoiseTable, indices: np.ndarray, fitness: np.ndarray, dim: int,
                antithetic: bool) -> np.ndarray:
    """The ES estimate of the gradient of expected return, up to the factor 1/noise_stdev
    (which the learning rate absorbs, as in Salimans et al.).

    antithetic: ``fitness`` has shape [n, 2], the scores of theta + sigma*eps_i and
        theta - sigma*eps_i; the estimate is sum_i (f+_i - f-_i) eps_i / (2n).
    otherwise: ``fitness`` has shape [n]; the estimate is sum_i f_i eps_i / n (shaped fitness
        has zero mean, which stands in for a baseline).
    """
    fitness = np.asarray(fitness, np.float64)
    if antithetic:
        weights = fitness[:, 0] - fitness[:, 1]
        return noise.weighted_sum(indices, weights, dim) / (2 * len(indices))
    return noise.weighted_sum(indices, fitness, dim) / len(indices)


class Adam:
    """Adam on a flat parameter vector (Kingma & Ba), in numpy, as ES's optimizer.

    :meth:`step` takes the gradient of a loss to minimize and returns the change to add.
    """

    def __init__(self, dim: int, lr: float, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8):
        self.lr, self.beta1, self.beta2, self.epsilon = lr, beta1, beta2, epsilon
        self.m = np.zeros(dim, np.float64)
        self.v = np.zeros(dim, np.float64)
        self.t = 0

    def step(self, grad: np.ndarray) -> np.ndarray:
        self.t += 1
        self.m = self.beta1 * self.m + (1 - self.beta1) * grad
        self.v = self.beta2 * self.v + (1 - self.beta2) * np.square(grad)
        a = self.lr * np.sqrt(1 - self.beta2 ** self.t) / (1 - self.beta1 ** self.t)
        return -a * self.m / (np.sqrt(self.v) + self.epsilon)

    def state_dict(self) -> dict[str, np.ndarray]:
        return {"m": self.m.copy(), "v": self.v.copy(), "t": np.asarray(self.t, np.int64)}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        m, v = np.asarray(state["m"], np.float64), np.asarray(state["v"], np.float64)
        if m.shape != self.m.shape or v.shape != self.v.shape:
            raise RLBaseError(f"saved Adam state has {m.size} entries, the policy has "
                              f"{self.m.size} parameters")
        self.m, self.v, self.t = m.copy(), v.copy(), int(state["t"])


def ascent_step(optimizer: Adam, theta: np.ndarray, grad_estimate: np.ndarray,
                l2coeff: float) -> np.ndarray:
    """The parameter change: Adam on -(ES gradient) + l2coeff * theta (weight decay)."""
    return optimizer.step(-grad_estimate + l2coeff * np.asarray(theta, np.float64))
