"""The trust-region policy update (TRPO's) as a model: one compiled call per rollout.

:class:`TrustRegionModel` is the learner of TRPO and of the algorithms that reuse its update
(GAIL replaces ``rollout.rewards`` with its discriminator's rewards before calling
:meth:`~rlbase.common.families.actor_critic.OnPolicyModel.train`: rewards enter only through the
rollout). The call computes, with the weights that acted: values, GAE(lambda) advantages
(standardized), the gradient of the surrogate, the natural-gradient direction by conjugate
gradient on Fisher-vector products, the step scaled to ``max_kl``, the backtracking line search,
then the value fit (Adam, ``vf_iters`` epochs of shuffled minibatches of the returns).

Under MPI the gradient, every Fisher-vector product, the line search's [gain, KL] and every
value gradient are averaged over the workers from inside the graph (``tf.numpy_function``
allreduces), so the update stays one compiled call there too.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from rlbase.common.errors import RLBaseError
from rlbase.common.families.actor_critic import OnPolicyModel, new_shuffle_seed, workers
from rlbase.common.families.trust_region.config import TrustRegionConfig
from rlbase.common.families.trust_region.losses import (
    mean_entropy,
    mean_kl,
    policy_gain,
    value_loss,
)
from rlbase.common.families.trust_region.steps import (
    fisher_vector_product,
    flat_concat,
    line_search,
    natural_step,
)
from rlbase.common.loops.rollout import Rollout
from rlbase.common.networks.distributions import Distribution
from rlbase.common.networks.policies import (
    POLICY_KWARGS,
    ActorCriticPolicy,
    has_images,
    policy_from_kwargs,
)
from rlbase.common.networks.registry import build_network, is_recurrent
from rlbase.common.tf_util import (
    Adam,
    average_over_workers,
    configure_threads,
    explained_variance,
    gae_advantages,
)

__all__ = ["STAT_NAMES", "TrustRegionConfig", "TrustRegionModel", "advantages_and_returns",
           "trust_region_policy", "split_variables"]

STAT_NAMES = ("policy_objective", "kl_divergence_loss", "entropy_loss", "value_loss",
              "explained_variance", "is_line_search_success", "step_fraction",
              "expected_improvement")


def trust_region_policy(observation_space: Any, action_space: Any, network: Any,
                        network_kwargs: dict[str, Any], algorithm: str
                        ) -> tuple[ActorCriticPolicy, dict[str, Any]]:
    """The policy a trust-region model trains, and the network arguments it was built with:
    feed-forward only (a recurrent network is refused in one line), and the value on its own
    torso unless ``value_network`` is given (``'copy'``, as Baselines' trpo_mpi and gail built
    it), so the value fit never moves the policy."""
    configure_threads("convnet" if has_images(observation_space) else "small")
    kwargs = dict(network_kwargs)
    torso_kwargs = {k: v for k, v in kwargs.items() if k not in POLICY_KWARGS}
    if is_recurrent(build_network(network, **torso_kwargs)):
        name = network if isinstance(network, str) else getattr(network, "__name__", network)
        raise RLBaseError(f"{algorithm} needs a feed-forward network, not the recurrent "
                          f"{name!r}; use mlp or cnn")
    kwargs.setdefault("value_network", "copy")
    return policy_from_kwargs(observation_space, action_space, network, kwargs), kwargs


def split_variables(policy: ActorCriticPolicy) -> tuple[list[tf.Variable], list[tf.Variable]]:
    """(policy variables, value variables): the value head and its own torso (Baselines'
    value_network='copy') are fit by Adam; everything else moves by trust-region steps."""
    value_layers = [layer for layer in (policy.value_torso, policy.value_head)
                    if layer is not None]
    value_ids = {id(v) for layer in value_layers for v in layer.trainable_variables}
    policy_vars = [v for v in policy.trainable_variables if id(v) not in value_ids]
    value_vars = [v for v in policy.trainable_variables if id(v) in value_ids]
    return policy_vars, value_vars


# GAE's backward recursion is a tf.scan of nsteps tiny steps: ~14 ms for 1024 steps in TF's
# graph executor here, 0.5 ms when XLA compiles it (measured, /work/notes/trpo.md). So it is
# compiled by XLA inside the update, which itself stays a plain graph (MPI's numpy_functions).
_gae_xla = tf.function(gae_advantages, jit_compile=True, autograph=False)


def advantages_and_returns(rewards: tf.Tensor, values: tf.Tensor, dones: tf.Tensor,
                           last_values: tf.Tensor, gamma: float, lam: float,
                           normalize: bool) -> tuple[tf.Tensor, tf.Tensor]:
    """Flat (env-major) GAE(lambda) advantages and the value targets ``R = A + V`` of
    ``[num_envs, nsteps]`` rollouts (``values`` flat). A truncated step's reward already holds
    ``gamma * V(final observation)`` (rlbase.common.loops.rollout), so every episode end stops the
    recursion. ``normalize``: the advantages standardized (``(A - mean) / (std + 1e-8)``);
    the returns use the raw ones."""
    num_envs, nsteps = rewards.shape[0], rewards.shape[1]
    advantages = tf.reshape(_gae_xla(
        rewards, tf.reshape(values, [num_envs, nsteps]), dones, last_values, gamma, lam), [-1])
    returns = advantages + values
    if normalize:
        advantages = (advantages - tf.reduce_mean(advantages)) / (
            tf.math.reduce_std(advantages) + 1e-8)
    return advantages, returns


class TrustRegionModel(OnPolicyModel):
    """TRPO's learner (Schulman et al. 2015, with GAE of Schulman et al. 2016) on a
    feed-forward actor-critic policy. ``train(rollout)`` takes no per-update scalars."""

    architecture = ("nsteps",)
    stat_names = STAT_NAMES
    scalar_names: tuple[str, ...] = ()

    config: TrustRegionConfig
    shuffle_seed: tf.Variable

    def __init__(self, policy: ActorCriticPolicy, num_envs: int, config: TrustRegionConfig,
                 network_kwargs: dict[str, Any] | None = None, comm: Any | None = None):
        if policy.recurrent:
            raise RLBaseError(f"{config.algorithm} needs a feed-forward network, not the "
                              f"recurrent {policy.network_name!r}; use mlp or cnn")
        self.policy_vars, self.value_vars = split_variables(policy)
        self.shuffle_seed = new_shuffle_seed()
        self.shuffle_what = f"{config.algorithm}'s value-fit shuffling seed"
        self.comm = workers(comm, policy.weights)
        # Baselines' MpiAdam: epsilon 1e-8, constant step size.
        optimizer = Adam(learning_rate=config.vf_lr, epsilon=1e-8)
        # No XLA: the MPI allreduces are numpy_functions, and single-process the update's
        # cost is in its many small ops, which the while loops keep in one call anyway.
        super().__init__(policy, optimizer, num_envs, config.nsteps, network_kwargs or {},
                         config, jit_compile=False)

    # -- the update -----------------------------------------------------------------------------
    def train(self, rollout: Rollout, *scalars: float) -> tuple[dict[str, float], tuple | None]:
        """One update on ``rollout`` (its rewards are the only rewards the update sees)."""
        nbatch, size = self.num_envs * self.nsteps, self.config.vf_batch_size
        # Checked here, not when built: a model loaded to act on other envs never trains.
        if size > nbatch:
            raise RLBaseError(f"vf_batch_size ({size}) must be at most the batch nsteps * "
                              f"num_envs ({self.nsteps} * {self.num_envs} = {nbatch})")
        return super().train(rollout, *scalars)

    def _average(self, tensors: list[tf.Tensor]) -> list[tf.Tensor]:
        return average_over_workers(tensors, self.comm)

    def train_graph(self, obs, actions, rewards, dones, starts, state, last_obs, last_state,
                    last_starts):
        policy, config = self.policy, self.config
        num_envs, nsteps = self.num_envs, self.nsteps
        nbatch = num_envs * nsteps
        no_state = tf.zeros([nbatch, 0], tf.float32)
        # The behaviour policy: the weights have not changed since the rollout was collected.
        params, values, _, _ = policy.forward(obs, state, starts)
        old_params = tf.stop_gradient(params)
        old_pd = policy.distribution(old_params)
        old_neglogp = old_pd.neglogp(actions)
        values = tf.stop_gradient(values)
        last_values = policy.value(last_obs, last_state, last_starts)
        advantages, returns = advantages_and_returns(
            rewards, values, dones, last_values, config.gamma, config.lam,
            config.normalize_advantage)
        pvars = self.policy_vars

        def gain_and_pd() -> tuple[tf.Tensor, Distribution]:
            pd = policy.distribution(policy.forward(obs, no_state, starts)[0])
            return policy_gain(pd.neglogp(actions), old_neglogp, advantages, pd,
                               config.ent_coef), pd

        def gain_and_kl() -> tf.Tensor:
            """[objective, mean KL] at the policy variables' current values, all workers'."""
            gain, pd = gain_and_pd()
            return self._average([tf.stack([gain, mean_kl(old_pd, pd)])])[0]

        with tf.GradientTape() as tape:
            gain, _ = gain_and_pd()
        # One allreduce for both: two independent ones could run in either order, and MPI
        # ranks must call them in the same order (seen: "Message truncated" aborts).
        grad, gain_before = self._average([flat_concat(tape.gradient(
            gain, pvars, unconnected_gradients=tf.UnconnectedGradients.ZERO)), gain])
        entropy = mean_entropy(old_pd)

        # Fisher-vector products on every fvp_subsample-th sample (Baselines' arr[::5]).
        k = config.fvp_subsample
        sub_obs = tf.nest.map_structure(lambda x: x[::k], obs)
        sub_starts, sub_old = starts[::k], policy.distribution(old_params[::k])
        sub_state = tf.zeros([(nbatch + k - 1) // k, 0], tf.float32)

        def sub_kl() -> tf.Tensor:
            new = policy.distribution(policy.forward(sub_obs, sub_state, sub_starts)[0])
            return mean_kl(sub_old, new)

        def fvp(vector: tf.Tensor) -> tf.Tensor:
            # the damping term is the same on every worker: average the Hessian part only
            hvp = fisher_vector_product(sub_kl, pvars, vector, 0.0)
            return self._average([hvp])[0] + config.cg_damping * vector

        full_step, expected = natural_step(grad, fvp, config.max_kl, config.cg_iters)
        frac, _, after = line_search(pvars, full_step, gain_and_kl, gain_before,
                                     config.max_kl, config.line_search_iters,
                                     config.line_search_shrink)
        with tf.control_dependencies([frac]):  # the value fit starts after the policy step
            vf_loss = self._fit_values(obs, starts, returns)
        stats = tf.stack([after[0], after[1], -entropy, vf_loss,
                          explained_variance(values, returns),
                          tf.cast(frac > 0, tf.float32), frac, expected])
        with tf.control_dependencies([stats]):
            return (stats, *self.after_update(last_obs, last_state, last_starts))

    def _fit_values(self, obs: Any, starts: tf.Tensor, returns: tf.Tensor) -> tf.Tensor:
        """``vf_iters`` epochs of Adam steps on shuffled minibatches of ``vf_batch_size``
        samples (the last partial one left out); returns the mean minibatch loss."""
        config, policy, vvars = self.config, self.policy, self.value_vars
        nbatch, size = self.num_envs * self.nsteps, config.vf_batch_size
        per_epoch = nbatch // size
        nupdates = config.vf_iters * per_epoch
        if nupdates == 0:  # vf_iters=0: no fit; report the value's loss as it stands
            values = policy.forward(obs, tf.zeros([nbatch, 0], tf.float32), starts)[1]
            return value_loss(values, returns)
        seed = self.shuffle_seed.assign_add(tf.constant([0, 1], tf.int64))
        noise = tf.random.stateless_uniform([config.vf_iters, nbatch], seed)
        plan = tf.reshape(tf.argsort(noise, axis=1)[:, :per_epoch * size], [nupdates, size])
        no_state = tf.zeros([size, 0], tf.float32)

        def body(i: tf.Tensor, total: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            idx = plan[i]
            mb_obs = tf.nest.map_structure(lambda x: tf.gather(x, idx), obs)
            with tf.GradientTape() as tape:
                vpred = policy.forward(mb_obs, no_state, tf.gather(starts, idx))[1]
                loss = value_loss(vpred, tf.gather(returns, idx))
            grads = self._average(tape.gradient(loss, vvars))
            self.optimizer.apply_gradients(zip(grads, vvars))
            return i + 1, total + loss

        _, total = tf.while_loop(lambda i, _t: i < nupdates, body,
                                 (tf.constant(0), tf.constant(0.0)))
        return total / nupdates
