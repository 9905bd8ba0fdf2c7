"""Behaviour cloning's data and fit: expert trajectories as a dataset, and a policy fitted to
them by supervised learning (``pretrain``)."""

from __future__ import annotations

import functools
from typing import Any, Callable

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from rlbase.common.buffers.expert_data import (
    check_observations,
    expert_pairs,
    read_expert_data,
    typed_batch,
)
from rlbase.common.errors import RLBaseError
from rlbase.common.logs import logger
from rlbase.common.tf_util import observation_spec, spec_like


class ExpertDataset:
    """Expert data from :func:`generate_expert_traj`, split into training and validation.

    path: the .npz file (or a dict of its arrays).
    train_fraction: share of the samples used for training (the rest validates).
    batch_size: samples per minibatch.
    traj_limitation: use only the first this many episodes (-1: all).
    seed: seed of the split and of the minibatch shuffling.
    """

    def __init__(self, path: str | dict[str, np.ndarray], train_fraction: float = 0.7,
                 batch_size: int = 64, traj_limitation: int = -1, seed: int | None = 0):
        data = read_expert_data(path)
        if not 0.0 < train_fraction <= 1.0:
            raise RLBaseError(f"train_fraction must be in (0, 1], got {train_fraction!r}")
        if batch_size < 1:
            raise RLBaseError(f"batch_size must be positive, got {batch_size!r}")
        # One array, or a dict of leaf arrays by leaf name for Dict/Tuple observations.
        self.observations, self.actions = expert_pairs(data, traj_limitation)
        n = len(self.actions)
        self.returns = np.asarray(data.get("episode_returns", np.zeros(0)))
        self.batch_size = int(batch_size)
        self.rng = np.random.default_rng(seed)
        order = self.rng.permutation(n)
        n_train = max(1, int(round(train_fraction * n)))
        self.train_indices, self.val_indices = order[:n_train], order[n_train:]

    def batches(self, split: str = "train") -> Any:
        """Minibatches ``(obs, actions)`` covering the split once, shuffled."""
        if split not in ("train", "val"):
            raise RLBaseError(f"split must be 'train' or 'val', got {split!r}")
        idx = self.train_indices if split == "train" else self.val_indices
        idx = self.rng.permutation(idx)
        for i in range(0, len(idx), self.batch_size):
            take = idx[i:i + self.batch_size]
            obs = self.observations
            yield ({name: leaf[take] for name, leaf in obs.items()} if isinstance(obs, dict)
                   else obs[take]), self.actions[take]


def fit_policy(variables: list, loss_fn: Callable[[tf.Tensor, tf.Tensor], tf.Tensor],
               dataset: ExpertDataset, ob_space: gym.Space, ac_space: gym.Space,
               n_epochs: int, learning_rate: float, val_interval: int | None,
               verbose: int) -> list[float]:
    """Minimize ``loss_fn`` over the training split with Adam (one compiled call per batch);
    returns the mean training loss of each epoch."""
    if not isinstance(dataset, ExpertDataset):
        raise RLBaseError(f"pretrain needs an ExpertDataset, got {type(dataset).__name__}")
    check_observations(dataset.observations, ob_space)
    optimizer = keras.optimizers.Adam(learning_rate=learning_rate)
    optimizer.build(variables)
    ac_shape = tuple(ac_space.shape or ())
    signature = [observation_spec(ob_space, [None]),
                 spec_like([None, *ac_shape], ac_space.dtype)]

    @tf.function(input_signature=signature)
    def train_step(obs: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = loss_fn(obs, actions)
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    @tf.function(input_signature=signature)
    def eval_step(obs: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
        return loss_fn(obs, actions)

    cast = functools.partial(typed_batch, ob_space=ob_space, ac_space=ac_space)
    history = []
    for epoch in range(1, n_epochs + 1):
        losses = [float(train_step(*cast(o, a))) for o, a in dataset.batches("train")]
        history.append(float(np.mean(losses)))
        if val_interval and epoch % val_interval == 0 and len(dataset.val_indices):
            val = np.mean([float(eval_step(*cast(o, a))) for o, a in dataset.batches("val")])
            if verbose:
                logger.log(f"pretrain epoch {epoch}: train loss {history[-1]:.4f}, "
                           f"validation loss {val:.4f}")
    return history

