"""Behaviour cloning: record expert trajectories, read them back, fit a policy to them."""

from __future__ import annotations

import os
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.api.base_class import BaseRLModel
from rlbase.common import logger, nested
from rlbase.common.errors import RLBaseError
from rlbase.common.expert_data import (
    KEYS,
    LEAF_PREFIX,
    check_observations,
    expert_pairs,
    read_expert_data,
    typed_batch,
)
from rlbase.common.tf_util import observation_spec, spec_like


def generate_expert_traj(model_or_callable: Any, env: gym.Env | str, n_episodes: int = 10,
                         save_path: str | None = None, deterministic: bool = True,
                         seed: int | None = None) -> dict[str, np.ndarray]:
    """Play ``n_episodes`` with an expert and return (and save as ``save_path`` .npz) arrays
    ``obs``, ``actions``, ``rewards``, ``episode_starts`` (one per step) and
    ``episode_returns`` (one per episode). Observations of a Dict or Tuple space are stored
    one array per leaf, named ``obs/<key>`` (``obs/state/position`` when nested deeper).

    model_or_callable: a model class instance (its deterministic predict; a model trained on
        normalized observations sees them normalized with its saved statistics, while the
        env's own observations are recorded), or ``obs -> action``.
    env: a gymnasium env (not vectorized) or an env id.
    seed: seed of the first reset (later episodes continue its random stream).
    """
    if isinstance(n_episodes, bool) or not isinstance(n_episodes, int) or n_episodes < 1:
        raise RLBaseError(f"n_episodes must be a positive integer, got {n_episodes!r}")
    if isinstance(env, str):
        env = gym.make(env)
    if not isinstance(env, gym.Env):
        raise RLBaseError(f"generate_expert_traj needs a gymnasium env or an env id, got "
                          f"{type(env).__name__} (use one env, not a VecEnv)")
    if isinstance(model_or_callable, BaseRLModel):
        expert = model_or_callable
        # A model trained under VecNormalize acts on observations normalized with its saved
        # statistics; the env's own observations are what is recorded.
        normalization = expert.model.normalization if expert.model is not None else None

        def policy(obs: np.ndarray) -> Any:
            seen = obs if normalization is None else normalization.normalize_obs(obs)
            return expert.predict(seen, deterministic=deterministic)[0]
    elif hasattr(model_or_callable, "predict"):  # another library's model: SB3's predict
        def policy(obs: np.ndarray) -> Any:
            return model_or_callable.predict(obs, deterministic=deterministic)[0]
    elif callable(model_or_callable):
        policy = model_or_callable
    else:
        raise RLBaseError(f"expert must be a model or a callable, got "
                          f"{type(model_or_callable).__name__}")
    out: dict[str, list] = {k: [] for k in KEYS}
    obs, _ = env.reset(seed=seed)
    for _ in range(n_episodes):
        start, total, done = True, 0.0, False
        while not done:
            action = policy(obs)
            out["obs"].append(obs)
            out["actions"].append(action)
            out["episode_starts"].append(start)
            obs, reward, terminated, truncated, _ = env.step(action)
            out["rewards"].append(reward)
            total += float(reward)
            start, done = False, terminated or truncated
        out["episode_returns"].append(total)
        obs, _ = env.reset()
    observations = out.pop("obs")
    arrays = {k: np.asarray(v) for k, v in out.items()}
    space = env.observation_space
    if nested.is_nested(space):
        leaves = nested.flatten(space, nested.stack(space, observations))
        arrays.update({LEAF_PREFIX + name: leaf
                       for name, leaf in zip(nested.leaf_names(space), leaves)})
    else:
        arrays["obs"] = np.asarray(observations)
    arrays["rewards"] = arrays["rewards"].astype(np.float32)
    arrays["episode_starts"] = arrays["episode_starts"].astype(bool)
    if save_path is not None:
        path = save_path if save_path.endswith(".npz") else save_path + ".npz"
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        np.savez(path, **arrays)  # type: ignore[arg-type]  # numpy's stub types savez's kwargs
    return arrays


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
    import keras

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

    def cast(obs: np.ndarray | dict[str, np.ndarray], actions: np.ndarray
             ) -> tuple[Any, np.ndarray]:
        return typed_batch(obs, actions, ob_space, ac_space)

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

