"""PPO's learner: one compiled call runs a whole update, every epoch and minibatch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import tensorflow as tf

from rlbase.common.errors import RLBaseError
from rlbase.common.families.actor_critic import (
    OnPolicyModel,
    actor_critic_parts,
    new_shuffle_seed,
    workers,
)
from rlbase.common.mpi_util import get_comm
from rlbase.common.networks.policies import ActorCriticPolicy
from rlbase.common.tf_util import (
    Adam,
    average_over_workers,
    clip_by_global_norm,
    explained_variance,
    gae_advantages,
)
from rlbase.ppo.config import PPOConfig

STAT_NAMES = ("policy_gradient_loss", "value_loss", "entropy_loss", "approx_kl",
              "clip_fraction", "grad_norm", "explained_variance")
# Updates from which XLA's compile time is repaid.
XLA_MIN_UPDATES = 200


def clipped_surrogate(neglogp: tf.Tensor, old_neglogp: tf.Tensor, advantages: tf.Tensor,
                      cliprange: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """PPO's policy loss ``mean(max(-A r, -A clip(r, 1-c, 1+c)))`` with the probability ratio
    r = pi/pi_old; also returns the ratio and the fraction of clipped samples."""
    ratio = tf.exp(old_neglogp - neglogp)
    clipped = tf.clip_by_value(ratio, 1.0 - cliprange, 1.0 + cliprange)
    loss = tf.reduce_mean(tf.maximum(-advantages * ratio, -advantages * clipped))
    clipfrac = tf.reduce_mean(tf.cast(tf.abs(ratio - 1.0) > cliprange, tf.float32))
    return loss, ratio, clipfrac


def approx_kl_stop(neglogp: tf.Tensor, old_neglogp: tf.Tensor, target_kl: float) -> tf.Tensor:
    """Whether a minibatch's KL estimate ``mean((r - 1) - log r)`` (r = pi/pi_old, low
    variance and non-negative) exceeds ``1.5 * target_kl``: the update then stops before
    applying that minibatch's step (SB3's ``target_kl``)."""
    log_ratio = old_neglogp - neglogp
    kl = tf.reduce_mean(tf.exp(log_ratio) - 1.0 - log_ratio)
    return kl > 1.5 * target_kl


def value_loss_fn(vpred: tf.Tensor, old_values: tf.Tensor, returns: tf.Tensor,
                  cliprange: tf.Tensor | None) -> tf.Tensor:
    """``0.5 * mean((V - R)^2)``; with a cliprange, the worse of that and the error of the
    value moved at most ``cliprange`` from its old estimate (PPO2's value clipping)."""
    err = tf.square(vpred - returns)
    if cliprange is not None:
        vclipped = old_values + tf.clip_by_value(vpred - old_values, -cliprange, cliprange)
        err = tf.maximum(err, tf.square(vclipped - returns))
    return 0.5 * tf.reduce_mean(err)


class Model(OnPolicyModel):
    """Clipped-surrogate PPO (Schulman et al. 2017) with GAE and minibatched Adam epochs.

    The update first recomputes, with the weights that acted, the values and log-probabilities
    of the rollout and its GAE advantages; then it shuffles and runs ``noptepochs`` passes of
    ``nminibatches`` gradient steps in a ``tf.while_loop``. All of it is one compiled call.
    Recurrent policies are shuffled by whole env sequences, so each keeps its order and state.
    """

    algorithm = "ppo"
    architecture = ("nsteps", "nminibatches")
    stat_names = STAT_NAMES
    scalar_names = ("lr", "cliprange", "cliprange_vf")

    config: PPOConfig

    def __init__(self, policy: ActorCriticPolicy, num_envs: int, config: PPOConfig,
                 network_kwargs: dict[str, Any] | None = None, jit_compile: bool = True,
                 comm: Any | None = None):
        nsteps, nminibatches, noptepochs = config.nsteps, config.nminibatches, config.noptepochs
        nbatch = num_envs * nsteps
        if policy.recurrent and num_envs % nminibatches:
            raise RLBaseError(f"a recurrent policy splits minibatches by env: nminibatches "
                              f"({nminibatches}) must divide the number of envs ({num_envs})")
        if nbatch % nminibatches:
            raise RLBaseError(f"nsteps * num_envs ({nsteps} * {num_envs} = {nbatch}) must be "
                              f"divisible by nminibatches ({nminibatches})")
        self.nminibatches, self.noptepochs = nminibatches, noptepochs
        self.ent_coef, self.vf_coef = config.ent_coef, config.vf_coef
        self.max_grad_norm, self.clip_value = config.max_grad_norm, config.clip_value
        self.gamma, self.lam = config.gamma, config.lam
        self.normalize_advantage = config.normalize_advantage
        self.target_kl = config.target_kl
        # Minibatches are drawn in units: single samples, or whole env sequences (recurrent).
        self.unit_len = nsteps if policy.recurrent else 1
        self.nunits = nbatch // self.unit_len
        self.shuffle_seed = new_shuffle_seed()
        self.shuffle_what = "PPO's minibatch shuffling seed"
        # Under MPI every minibatch gradient is averaged over the workers from inside the
        # training graph (a numpy_function call, which XLA cannot compile).
        self.comm = workers(comm, policy.weights)
        jit_compile = jit_compile and self.comm is None
        optimizer = Adam(learning_rate=3e-4, epsilon=1e-5)
        super().__init__(policy, optimizer, num_envs, nsteps, network_kwargs or {}, config,
                         jit_compile)

    def _units(self, x: tf.Tensor) -> tf.Tensor:
        return tf.reshape(x, tf.concat([[self.nunits, self.unit_len], tf.shape(x)[1:]], 0))

    @property
    def action_masking(self) -> bool | str:
        return self.config.action_masks

    def train_graph(self, obs, actions, rewards, dones, starts, state, last_obs, last_state,
                    last_starts, lr, cliprange, cliprange_vf, action_masks=None,
                    last_action_masks=None):
        policy = self.policy
        num_envs, nsteps = self.num_envs, self.nsteps
        # The behaviour policy: the weights have not changed since the rollout was collected.
        old_neglogp, values = self.behaviour(obs, state, starts, actions, action_masks)
        last_values = policy.value(last_obs, last_state, last_starts)
        advantages = gae_advantages(rewards, tf.reshape(values, [num_envs, nsteps]), dones,
                                    last_values, self.gamma, self.lam)
        advantages = tf.reshape(advantages, [-1])
        returns = advantages + values

        per_mb = self.nunits // self.nminibatches
        nupdates = self.noptepochs * self.nminibatches
        seed = self.shuffle_seed.assign_add(tf.constant([0, 1], tf.int64))
        noise = tf.random.stateless_uniform([self.noptepochs, self.nunits], seed)
        plan = tf.reshape(tf.argsort(noise, axis=1), [nupdates, per_mb])
        data = [tf.nest.map_structure(self._units, x)
                for x in (obs, actions, starts, old_neglogp, values, returns, advantages)]
        # each minibatch's action masks (the ones its actions were taken under), else none
        mask_units = None if action_masks is None else self._units(action_masks)
        mb_size = per_mb * self.unit_len
        self.optimizer.learning_rate.assign(lr)
        variables = policy.trainable_variables

        def flat(x: tf.Tensor) -> tf.Tensor:
            return tf.reshape(x, tf.concat([[mb_size], tf.shape(x)[2:]], 0))

        def apply(grads: list[tf.Tensor]) -> tf.Tensor:
            self.optimizer.apply_gradients(zip(grads, variables))
            return tf.constant(0.0)

        def minibatch_step(i: tf.Tensor, totals: tf.Tensor, applied: tf.Tensor,
                           stop: tf.Tensor) -> tuple[tf.Tensor, ...]:
            units = plan[i]
            mb_obs, mb_act, mb_starts, mb_oldnlp, mb_oldv, mb_ret, mb_adv = (
                tf.nest.map_structure(lambda t: flat(tf.gather(t, units)), x) for x in data)
            mb_state = tf.gather(state, units) if policy.recurrent else \
                tf.zeros([mb_size, 0], tf.float32)
            mb_masks = None if mask_units is None else flat(tf.gather(mask_units, units))
            if self.normalize_advantage:
                mb_adv = (mb_adv - tf.reduce_mean(mb_adv)) / (tf.math.reduce_std(mb_adv) + 1e-8)
            with tf.GradientTape() as tape:
                params, vpred, _, _ = policy.forward(mb_obs, mb_state, mb_starts)
                pd = policy.distribution(params, mb_masks)
                neglogp = pd.neglogp(mb_act)
                entropy = tf.reduce_mean(pd.entropy())
                policy_loss, _, clipfrac = clipped_surrogate(neglogp, mb_oldnlp, mb_adv,
                                                             cliprange)
                value_loss = value_loss_fn(vpred, mb_oldv, mb_ret,
                                           cliprange_vf if self.clip_value else None)
                loss = policy_loss - entropy * self.ent_coef + value_loss * self.vf_coef
            grads = tape.gradient(loss, variables)
            if self.target_kl is None:
                grads = average_over_workers(grads, self.comm)
            else:
                # Every MPI worker decides on the same (averaged) flag. It travels in the
                # gradient's allreduce: two independent allreduces in one graph may run in
                # another order on each worker, and their messages then cross.
                local_stop = tf.cast(approx_kl_stop(neglogp, mb_oldnlp, self.target_kl),
                                     tf.float32)
                *grads, stop_share = average_over_workers([*grads, local_stop], self.comm)
                stop = stop_share > 0
            grads, grad_norm = clip_by_global_norm(grads, self.max_grad_norm)
            if self.target_kl is None:
                apply(grads)
            else:
                tf.cond(stop, lambda: tf.constant(0.0), lambda: apply(grads))
            approxkl = 0.5 * tf.reduce_mean(tf.square(neglogp - mb_oldnlp))
            step_stats = tf.stack([policy_loss, value_loss, -entropy, approxkl, clipfrac,
                                   grad_norm])
            done = tf.cast(tf.logical_not(stop), tf.float32)
            return i + 1, totals + done * step_stats, applied + done, stop

        # Stops early (SB3's target_kl) when a minibatch's KL estimate is too large.
        _, totals, applied, _ = tf.while_loop(
            lambda i, _t, _a, stop: tf.logical_and(i < nupdates, tf.logical_not(stop)),
            minibatch_step, (tf.constant(0), tf.zeros([6]), tf.constant(0.0),
                             tf.constant(False)))
        stats = tf.concat([totals / tf.maximum(applied, 1.0),
                           [explained_variance(values, returns)]], axis=0)
        return (stats, *self.after_update(last_obs, last_state, last_starts, last_action_masks))


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: PPOConfig, *,
                total_timesteps: int = 0, model_fn: Callable[..., Model] | None = None) -> Model:
    """PPO's model for these spaces and ``num_envs`` envs (learn() and rlbase.PPO call this);
    XLA as :func:`~rlbase.common.families.actor_critic.use_xla` decides. ``model_fn``: another
    Model class, built with the same arguments."""
    policy, jit = actor_critic_parts(observation_space, action_space, num_envs, network,
                                     network_kwargs, config, total_timesteps, XLA_MIN_UPDATES)
    return (model_fn or Model)(policy, num_envs, config, network_kwargs, jit_compile=jit,
                               comm=get_comm())
