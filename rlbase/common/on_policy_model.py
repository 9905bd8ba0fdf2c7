"""The shared shape of on-policy actor-critic learners (A2C, PPO).

A subclass builds its optimizer and defines ``train_graph(rollout tensors..., *scalars)``
returning ``(stats, *extra)`` where ``extra`` comes from :meth:`after_update`. One compiled
call then does a whole update, and this class does the rest: acting, saving, loading, and
keeping the numpy act path in step with the trained weights.
"""

from __future__ import annotations

from typing import Any, Sequence

import keras
import numpy as np
import tensorflow as tf

from rlbase.common.compiled_policy import CompiledPolicy
from rlbase.common.model_io import load_model, save_model
from rlbase.common.policies import ActorCriticPolicy
from rlbase.common.rollout import Rollout
from rlbase.common.tf_util import compile_fn, spec_like
from rlbase.common.vec_env import VecEnv, VecNormalize, find_wrapper

VN_PREFIX = "vec_normalize/"


class OnPolicyModel:
    """A policy, its optimizer, and one compiled training call per rollout.

    algorithm: the name saved in model files (loading checks it).
    stat_names: names of the ``stats`` vector the training graph returns.
    scalar_names: per-update scalars the training call takes after the rollout (lr, ...).
    """

    algorithm = ""
    stat_names: tuple[str, ...] = ()
    scalar_names: tuple[str, ...] = ("lr",)

    def __init__(self, policy: ActorCriticPolicy, optimizer: keras.optimizers.Optimizer,
                 nenvs: int, nsteps: int, hyperparameters: dict[str, Any] | None = None,
                 jit_compile: bool = True):
        self.policy = policy
        self.optimizer = optimizer
        self.optimizer.build(policy.trainable_variables)
        self.nenvs, self.nsteps = nenvs, nsteps
        self.hyperparameters = dict(hyperparameters or {})
        self.num_timesteps = 0
        # Set by learn() when the env normalizes observations: its statistics are part of the
        # model (a policy trained on normalized inputs is useless without them).
        self.vec_normalize: VecNormalize | None = None
        self.initial_state = policy.initial_state
        self.calls = CompiledPolicy(policy)
        self.step, self.value = self.calls.step, self.calls.value
        self._train = compile_fn(self.train_graph, self._signature(), jit_compile)

    def _signature(self) -> list[tf.TensorSpec]:
        ob, ac, p = self.policy.ob_space, self.policy.ac_space, self.policy
        nenvs, nbatch = self.nenvs, self.nenvs * self.nsteps
        return [spec_like([nbatch, *ob.shape], ob.dtype),             # obs
                spec_like([nbatch, *ac.shape], ac.dtype),             # actions
                spec_like([nenvs, self.nsteps], np.float32),          # rewards
                spec_like([nenvs, self.nsteps], np.float32),          # dones
                spec_like([nbatch], np.float32),                      # starts
                spec_like([nenvs, p.state_size], np.float32),         # state
                spec_like([nenvs, *ob.shape], ob.dtype),              # last_obs
                spec_like([nenvs, p.state_size], np.float32),         # last_state
                spec_like([nenvs], np.float32)] + \
            [spec_like([], np.float32) for _ in self.scalar_names]   # lr, ...

    def attach_env(self, env: VecEnv) -> None:
        """Remember the env's VecNormalize (if any), so its statistics save with the model."""
        self.vec_normalize = find_wrapper(env, VecNormalize)

    def train_graph(self, *args: tf.Tensor) -> tuple[tf.Tensor, ...]:
        raise NotImplementedError

    def after_update(self, last_obs: tf.Tensor, last_state: tf.Tensor,
                     last_starts: tf.Tensor) -> tuple[tf.Tensor, ...]:
        """In-graph, after the weights changed: the weights the numpy act path copies, or (on the
        TF act path) the policy's step on the next observation, saving the next rollout's first
        call."""
        if self.calls.actor is not None:
            return tuple(self.calls.actor_weights())
        return tuple(self.policy.step(last_obs, last_state, last_starts))

    def train(self, rollout: Rollout, *scalars: float) -> tuple[dict[str, float], tuple | None]:
        """One update on a rollout. Returns the statistics and, on the TF act path, the policy's
        outputs (actions, values, state, neglogp) for ``rollout.last_obs`` under the new weights
        (None when acting in numpy: the mirror is refreshed instead)."""
        stats, *outputs = self._train(
            rollout.obs, rollout.actions, rollout.rewards, rollout.dones, rollout.starts,
            rollout.state, rollout.last_obs, rollout.last_state, rollout.last_starts,
            *[np.float32(s) for s in scalars])
        values = dict(zip(self.stat_names, stats.numpy().tolist()))
        if self.calls.actor is not None:
            self.calls.sync(outputs)
            return values, None
        return values, tuple(t.numpy() for t in outputs)

    def act(self, obs: np.ndarray, state: np.ndarray, mask: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
        """Sample actions for the rollout: (actions, next recurrent state)."""
        return self.calls.act(obs, state, mask)

    def _groups(self) -> dict[str, Sequence[tf.Variable]]:
        return {"policy": self.policy.weights, "optimizer": self.optimizer.variables}

    def save(self, path: str, extra_arrays: dict[str, np.ndarray] | None = None,
             extra_metadata: dict[str, Any] | None = None) -> None:
        """Write weights, optimizer state and metadata to one file (atomically); ``extra_*``
        add entries (checkpoints put their resume state there)."""
        p, vn = self.policy, self.vec_normalize
        extra = {} if vn is None else {f"{VN_PREFIX}{k}": v for k, v in vn.state_dict().items()}
        meta = {} if vn is None else {"vec_normalize": vn.config()}
        save_model(path, self.algorithm, self._groups(), p.ob_space, p.ac_space,
                   p.network_name, p.network_kwargs, self.hyperparameters, self.num_timesteps,
                   extra_arrays={**extra, **(extra_arrays or {})},
                   extra_metadata={**meta, **(extra_metadata or {})})

    def load(self, path: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Load a file written by :meth:`save` for the same spaces and network; returns the
        file's metadata and arrays."""
        p = self.policy
        metadata, arrays = load_model(path, self.algorithm, self._groups(), p.ob_space,
                                      p.ac_space)
        self.num_timesteps = int(metadata.get("num_timesteps", 0))
        if self.vec_normalize is not None and metadata.get("vec_normalize") is not None:
            self.vec_normalize.load_state_dict(
                {k[len(VN_PREFIX):]: v for k, v in arrays.items() if k.startswith(VN_PREFIX)})
        self.calls.sync()
        return metadata, arrays

    def normalized_like_training(self, venv: VecEnv) -> VecEnv:
        """``venv`` wrapped with frozen copies of the training normalization statistics (for
        evaluation and play); ``venv`` itself when training used none."""
        if self.vec_normalize is None:
            return venv
        wrapped = VecNormalize(venv, training=False, **self.vec_normalize.config())
        wrapped.load_state_dict(self.vec_normalize.state_dict())
        return wrapped
