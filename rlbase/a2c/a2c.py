"""Advantage actor-critic (A2C): synchronous n-step actor-critic on a batch of envs."""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf

from rlbase.common.checkpoint import Checkpointer
from rlbase.common.errors import RLBaseError
from rlbase.common.on_policy_loop import UpdateBookkeeper, setup
from rlbase.common.on_policy_model import OnPolicyModel
from rlbase.common.policies import ActorCriticPolicy, xla_is_faster
from rlbase.common.rollout import RolloutRunner
from rlbase.common.schedules import get_schedule_fn, named_schedule
from rlbase.common.tf_util import (
    RMSprop,
    clip_by_global_norm,
    discounted_returns,
    explained_variance,
)
from rlbase.common.vec_env import VecEnv

ALGORITHM = "a2c"
STAT_NAMES = ("policy_loss", "value_loss", "policy_entropy", "explained_variance", "grad_norm")


class Model(OnPolicyModel):
    """The A2C learner: a policy, its RMSProp optimizer, and one compiled call per update.

    Acting runs once per vectorized env step: in numpy for MLP policies (see
    common.numpy_actor), else as one compiled TF call. The update computes the bootstrapped
    n-step returns and applies one gradient step, all in one compiled call.
    """

    algorithm = ALGORITHM
    stat_names = STAT_NAMES

    def __init__(self, policy: ActorCriticPolicy, nenvs: int, nsteps: int, ent_coef: float,
                 vf_coef: float, max_grad_norm: float | None, alpha: float, epsilon: float,
                 gamma: float, hyperparameters: dict[str, Any] | None = None,
                 optimizer_kwargs: dict[str, Any] | None = None, jit_compile: bool = True):
        self.ent_coef, self.vf_coef, self.gamma = ent_coef, vf_coef, gamma
        self.max_grad_norm = max_grad_norm
        # Accumulator from zero and epsilon outside the root (the PyTorch form): measured on
        # CartPole it learns about 1.5x faster than TF1's form (accumulator from one, epsilon
        # inside), whose first few hundred updates are near zero.
        opt_kwargs = dict(initial_accumulator=0.0, epsilon_inside_sqrt=False)
        opt_kwargs.update(optimizer_kwargs or {})
        optimizer = RMSprop(7e-4, alpha, epsilon, **opt_kwargs)
        super().__init__(policy, optimizer, nenvs, nsteps, hyperparameters, jit_compile)

    def train_graph(self, obs, actions, rewards, dones, starts, state, last_obs, last_state,
                    last_starts, lr):
        policy = self.policy
        last_values = policy.value(last_obs, last_state, last_starts)
        returns = tf.reshape(discounted_returns(rewards, dones, last_values, self.gamma), [-1])
        with tf.GradientTape() as tape:
            params, values, _, _ = policy.forward(obs, state, starts)
            pd = policy.distribution(params)
            advantages = tf.stop_gradient(returns - values)
            policy_loss = tf.reduce_mean(advantages * pd.neglogp(actions))
            value_loss = tf.reduce_mean(tf.square(values - returns))
            entropy = tf.reduce_mean(pd.entropy())
            loss = policy_loss - entropy * self.ent_coef + value_loss * self.vf_coef
        variables = policy.trainable_variables
        grads, grad_norm = clip_by_global_norm(tape.gradient(loss, variables), self.max_grad_norm)
        self.optimizer.learning_rate.assign(lr)
        self.optimizer.apply_gradients(zip(grads, variables))
        stats = tf.stack([policy_loss, value_loss, entropy,
                          explained_variance(values, returns), grad_norm])
        return (stats, *self.after_update(last_obs, last_state, last_starts))


def learn(network: str | Callable, env: VecEnv | Any, seed: int | None = None, nsteps: int = 5,
          total_timesteps: int = int(80e6), vf_coef: float = 0.5, ent_coef: float = 0.01,
          max_grad_norm: float | None = 0.5, lr: float | Callable[[float], float] = 7e-4,
          lrschedule: str = "linear", epsilon: float = 1e-5, alpha: float = 0.99,
          gamma: float = 0.99, log_interval: int = 100, load_path: str | None = None,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          jit_compile: bool | None = None, checkpoint_interval: int = 0,
          checkpoint_path: str | None = None, resume: bool = False,
          **network_kwargs: Any) -> Model:
    """Train a policy with A2C and return the :class:`Model`.

    network: a registered network name (mlp, cnn, lstm, ...) or a builder callable.
    env: a VecEnv (a gymnasium env or an env id is wrapped into one).
    seed: seed of python, numpy, TensorFlow and the envs (None: unseeded).
    nsteps: env steps per env per update (batch = nsteps * num_envs).
    total_timesteps: env steps to train for, summed over envs.
    vf_coef: weight of the value loss.
    ent_coef: weight of the entropy bonus.
    max_grad_norm: clip the gradient's global norm to this (None: no clipping).
    lr: learning rate, or a function of the fraction of training remaining (1 -> 0).
    lrschedule: how a float lr decays: constant, linear, middle_drop, double_linear_con,
        double_middle_drop.
    epsilon: RMSProp epsilon (inside the square root, as in TF1).
    alpha: RMSProp decay of the mean square.
    gamma: discount factor.
    log_interval: log every this many updates.
    load_path: start from this saved model.
    callback: called after every update as ``callback(model, info)``; returning False stops.
    jit_compile: compile the update with XLA: ~1 ms faster per update, ~1.5 s to compile.
        None (auto): on for runs of at least 1500 updates, where the compile time is repaid,
        except convnets on a CPU (TF's own convolutions are faster there).
    checkpoint_interval: write a resumable checkpoint every this many env steps (0: never).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints).
    resume: continue from the newest checkpoint in checkpoint_path (total_timesteps counts
        the whole run, including the steps done before the checkpoint).
    **network_kwargs: passed to the network builder (num_layers, num_hidden, nlstm, ...);
        ``value_network='copy'`` gives the value head its own torso.
    """
    hyperparameters = {k: v for k, v in locals().items()
                       if k not in ("env", "callback", "network_kwargs", "load_path",
                                    "jit_compile", "resume")}
    if nsteps < 1:
        raise RLBaseError(f"nsteps must be at least 1, got {nsteps}")
    checkpointer = Checkpointer(ALGORITHM, checkpoint_path, checkpoint_interval)
    lr_fn = get_schedule_fn(lr) if callable(lr) else named_schedule(lrschedule, lr)
    env, policy = setup(env, seed, network, network_kwargs)
    nbatch = env.num_envs * nsteps
    nupdates = max(1, int(total_timesteps) // nbatch)
    jit = nupdates >= 1500 and xla_is_faster(env.observation_space) \
        if jit_compile is None else jit_compile
    model = Model(policy, env.num_envs, nsteps, ent_coef, vf_coef, max_grad_norm, alpha,
                  epsilon, gamma, hyperparameters, jit_compile=jit)
    model.attach_env(env)
    if load_path is not None:
        model.load(load_path)
    runner = RolloutRunner(env, model, nsteps=nsteps, gamma=gamma)
    books = UpdateBookkeeper(ALGORITHM, model, runner, nupdates, log_interval, callback,
                             checkpointer)
    first = books.restore() if resume else 1
    for update in range(first, nupdates + 1):
        rollout = runner.run()
        stats, runner.pending = model.train(rollout, lr_fn(1.0 - (update - 1) / nupdates))
        if books.done(update, stats):
            break
    return model
