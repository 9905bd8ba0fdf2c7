"""DDPG's model (with the TD3 options): the networks and their targets, both optimizers, the
observation and return statistics, the exploration noise, the replay buffer and the random
generators, all made by :func:`build_model` (what learn() and rlbase.DDPG / rlbase.TD3 call).

Actions live in [-1, 1] inside the model (the actor's tanh range, the replay buffer, the
noise) and are mapped onto the env's [low, high] only when they leave it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from rlbase.common.buffers.raw_replay import RawReplay, random_streams, sample_minibatches
from rlbase.common.families.continuous import (
    Critic,
    build_torso,
    check_continuous_action_space,
    check_observation_space,
)
from rlbase.common.mpi_util import allreduce_mean, get_comm, mpi_rank, sync_variables
from rlbase.common.networks.policies import xla_is_faster
from rlbase.common.networks.policy_graph import PolicyGraph, scale_to_bounds
from rlbase.common.running_mean_std import RunningMeanStd
from rlbase.common.tf_util import assign_from_arrays, configure_threads, variables_to_arrays
from rlbase.ddpg.config import DDPGConfig
from rlbase.ddpg.graph import STAT_NAMES, DDPGGraph, ReturnStats
from rlbase.ddpg.networks import Actor
from rlbase.ddpg.noise import parse_noise_type
from rlbase.ddpg.observations import ObservationStats

ALGORITHM = "ddpg"
PARAM_NOISE_KEY = "param_noise/stddev"


class Model(DDPGGraph):
    """A DDPG agent (TD3 with ``twin_q``, ``policy_delay`` and ``target_noise``).

    observation_space / action_space: a Box or a Dict/Tuple space (SB3's MultiInputPolicy:
        see rlbase.common.families.continuous); a 1-D Box with finite bounds.
    num_envs: the envs it trains on (one noise process each).
    network / network_kwargs: the registry network of the actor's and every critic's torso.
    config: DDPG's parameters.
    comm: an mpi4py communicator with more than one rank (gradients averaged), else None.
    """

    algorithm = ALGORITHM
    config: DDPGConfig
    resume_hint = " or other noise settings"

    def __init__(self, observation_space: gym.Space, action_space: gym.spaces.Box,
                 num_envs: int, network: Any, network_kwargs: dict[str, Any],
                 config: DDPGConfig, comm: Any | None = None):
        super().__init__(observation_space, action_space, network, network_kwargs, config,
                         num_envs)
        self.policy_delay = config.policy_delay
        self.action_l2, self.random_eps = config.action_l2, config.random_eps
        self.target_min, self.target_max = config.target_min, config.target_max
        self.target_noise, self.target_noise_clip = config.target_noise, config.target_noise_clip
        self.popart = config.popart
        self.normalize_returns = config.normalize_returns or self.popart
        self.critic_l2_reg = config.critic_l2_reg
        self.max_grad_norm = config.max_grad_norm
        self.comm = comm if comm is not None and comm.Get_size() > 1 else None
        auto = xla_is_faster(observation_space)  # on, except convnets on a CPU
        jit = config.jit_compile
        self.jit_compile = (auto if jit is None else jit) and self.comm is None
        self.obs_stats = ObservationStats(observation_space, config.normalize_observations,
                                          self.comm, config.obs_clip, config.obs_std_min)
        net_space = self.obs_stats.network_space()

        def torso() -> keras.layers.Layer:
            return build_torso(network, self.network_kwargs, ALGORITHM, observation_space)

        def actor() -> Actor:
            return Actor(net_space, self.num_actions, torso())

        def critic() -> Critic:
            return Critic(net_space, self.num_actions, torso())

        ncritics = 2 if config.twin_q else 1
        self.actor, self.target_actor = actor(), actor()
        self.critics = [critic() for _ in range(ncritics)]
        self.target_critics = [critic() for _ in range(ncritics)]
        # Three independent streams: exploration noise; smoothing noise and perturbations;
        # minibatches and warm-up actions (one seed for all would repeat the same numbers).
        self.noise_rng, self.learner_rng, self.loop_rng = random_streams(
            config.seed, 3, mpi_rank())
        self.generators = {"noise": self.noise_rng, "learner": self.learner_rng,
                           "loop": self.loop_rng}
        self.action_noise, self.param_noise = parse_noise_type(
            config.noise_type, self.num_actions, self.noise_rng, num_envs)
        self.perturbed_actor = actor() if self.param_noise is not None else None
        self.adaptive_actor = actor() if self.param_noise is not None else None
        self.actor_optimizer = keras.optimizers.Adam(learning_rate=config.actor_lr)
        self.critic_optimizer = keras.optimizers.Adam(learning_rate=config.critic_lr)
        self.actor_optimizer.build(self.actor.trainable_variables)
        self.critic_optimizer.build(self.critic_variables)
        self.returns = ReturnStats()
        self.updates = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.raw_replay = RawReplay(reward_scale=config.reward_scale)  # see attach_env
        self.param_noise_distance = float("nan")  # the last adaptation's measurement
        if self.comm is not None:  # every worker starts from rank 0's weights
            sync_variables(self.synced_variables, self.comm)
        for src, dst in self.target_pairs():
            dst.assign(src)

    # -- what a file holds ---------------------------------------------------------------------
    def variable_groups(self) -> dict[str, Sequence[tf.Variable]]:
        groups: dict[str, Sequence[tf.Variable]] = {
            "actor": self.actor.weights, "target_actor": self.target_actor.weights,
            "actor_optimizer": self.actor_optimizer.variables,
            "critic_optimizer": self.critic_optimizer.variables,
            "state": [*self.returns.variables, self.updates]}
        for i, (c, t) in enumerate(zip(self.critics, self.target_critics)):
            groups[f"critic{i}"], groups[f"target_critic{i}"] = c.weights, t.weights
        return groups

    def extra_arrays(self) -> dict[str, np.ndarray]:
        return self.obs_stats.state_dict()

    def load_extra_arrays(self, arrays: dict[str, np.ndarray], source: str) -> None:
        self.obs_stats.load_state_dict(arrays)

    def parameter_arrays(self) -> dict[str, np.ndarray]:
        arrays = super().parameter_arrays()
        if self.param_noise is not None:
            arrays[PARAM_NOISE_KEY] = np.array(self.param_noise.current_stddev)
        return arrays

    def load_parameter_arrays(self, arrays: dict[str, np.ndarray], source: str = "") -> None:
        super().load_parameter_arrays(arrays, source)
        # Optional: a file saved with another noise_type has no scale (this run's is kept).
        if self.param_noise is not None and PARAM_NOISE_KEY in arrays:
            self.param_noise.current_stddev = float(arrays[PARAM_NOISE_KEY])

    # -- observation statistics ---------------------------------------------------------------
    @property
    def obs_rms(self) -> RunningMeanStd | None:
        """The statistics of a Box observation (None when off; for a Dict/Tuple space
        ``obs_stats.rms`` holds one per normalized entry)."""
        stats = self.obs_stats
        return stats.rms[0] if stats.rms and not stats.nested else None

    def update_obs_stats(self, obs: Any) -> None:
        """Merge a batch of observations (pooled over MPI workers) into the statistics."""
        self.obs_stats.update(obs)

    def _observations(self, obs: Any) -> Any:
        """What the compiled calls take: Box observations as float32 (the buffer's dtype),
        nested ones as they are (each leaf becomes its spec's dtype)."""
        return obs if self.obs_stats.nested else np.asarray(obs, np.float32)

    # -- acting --------------------------------------------------------------------------------
    def act(self, obs: Any, explore: bool) -> tuple[np.ndarray, np.ndarray]:
        """Actions in [-1, 1] (with exploration noise when ``explore``) and the actor's Q."""
        stats = self.obs_stats
        clean, noisy, q = self.act_fn(self._observations(obs), stats.mean, stats.std)
        return self.explore(clean.numpy(), noisy.numpy(), explore), q.numpy()

    def explore(self, clean: np.ndarray, noisy: np.ndarray, explore: bool) -> np.ndarray:
        """The action taken: the perturbed actor's plus each env's action noise, clipped;
        then, with probability random_eps per row, a uniform random action instead
        (Baselines' HER). A batch of another size than num_envs reuses the envs' noise rows
        cyclically."""
        if not explore:
            return clean
        actions = noisy
        if self.action_noise is not None:
            actions = actions + np.resize(self.action_noise(), actions.shape)
        actions = np.clip(actions, -1.0, 1.0)
        if self.random_eps > 0:
            rows = self.noise_rng.random(len(actions)) < self.random_eps
            uniform = self.noise_rng.uniform(-1.0, 1.0, actions.shape)
            actions = np.where(rows[:, None], uniform, actions)
        return actions

    def step(self, obs: Any, state: np.ndarray | None = None, mask: np.ndarray | None = None,
             deterministic: bool = False
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, None]:
        """(actions in the env's bounds, Q, state, None); ``deterministic=False`` adds the
        exploration noise. ``state``/``mask`` pass through (the nets are feed-forward)."""
        actions, q = self.act(obs, explore=not deterministic)
        return self.to_env(actions), q, state, None

    def policy_graph(self) -> PolicyGraph:
        """The actor on observations normalized by the current statistics (baked in as
        constants), scaled to the bounds: ``step(..., deterministic=True)``. DDPG's policy is
        deterministic (its exploration noise belongs to training): no sampled variant."""
        stats, actor, space = self.obs_stats, self.actor, self.action_space
        mean, std = tf.constant(stats.mean), tf.constant(stats.std)

        def act(obs: Any, state: tf.Tensor, mask: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            obs = obs if stats.nested else tf.cast(obs, tf.float32)  # as _observations
            return scale_to_bounds(actor(stats.normalize(obs, mean, std)), space), state

        return PolicyGraph(self.observation_space, 0, act, None, [actor])

    def action_probabilities(self, obs: Any, state: np.ndarray, mask: np.ndarray
                             ) -> tuple[np.ndarray, ...]:
        """The policy is deterministic: (its action, a zero std)."""
        actions = self.step(obs, deterministic=True)[0]
        return actions, np.zeros_like(actions)

    # -- exploration ---------------------------------------------------------------------------
    def reset_exploration(self, envs: np.ndarray | None = None) -> None:
        """Episodes of ``envs`` (None: all) start: their noise processes restart, and the
        actor perturbation (one for all envs) is drawn anew."""
        if self.action_noise is not None:
            self.action_noise.reset(envs)
        if self.param_noise is not None:
            self.perturb_fn(np.float32(self.param_noise.current_stddev), self._seed_pair())

    def end_episodes(self, done: np.ndarray) -> None:
        """After an env step: restart the exploration of the envs whose episode ended."""
        if done.any():
            self.reset_exploration(np.flatnonzero(done))

    def adapt_param_noise(self) -> float:
        """Measure the action distance of a fresh perturbation on a minibatch of stored
        observations (averaged over MPI workers) and adapt the noise scale on it."""
        assert self.param_noise is not None
        buffer = self.replay_buffer
        obs = self.raw_replay.normalize_obs(
            buffer.get(buffer.sample_indices(self.batch_size, self.loop_rng)).obs)
        distance = float(self.distance_fn(obs, self.obs_stats.mean, self.obs_stats.std,
                                          np.float32(self.param_noise.current_stddev),
                                          self._seed_pair()))
        distance = float(allreduce_mean(np.array([distance]), self.comm)[0])
        self.param_noise.adapt(distance)
        self.param_noise_distance = distance
        return distance

    def _seed_pair(self) -> np.ndarray:
        return self.learner_rng.integers(0, 2**31 - 1, size=2, dtype=np.int64)

    # -- training ------------------------------------------------------------------------------
    def smoothing_noise(self, steps: int | None = None) -> np.ndarray:
        """``[steps, batch_size, num_actions]`` target-policy noise (zeros when off; steps
        None: gradient_steps)."""
        shape = (self.gradient_steps if steps is None else steps, self.batch_size,
                 self.num_actions)
        if self.target_noise <= 0:
            return np.zeros(shape, np.float32)
        return (self.target_noise * self.learner_rng.standard_normal(shape)).astype(np.float32)

    def train_and_act(self, obs: Any, actor_lr: float, critic_lr: float, phases: int = 1
                      ) -> tuple[dict[str, float], np.ndarray]:
        """``phases`` training phases of ``gradient_steps`` gradient steps each on minibatches
        from the buffer, then the exploring actions (in [-1, 1]) for ``obs`` from the updated
        actor: one compiled call. The statistics leave out actor_loss when the policy delay
        skipped every actor step."""
        steps = phases * self.gradient_steps
        batch = sample_minibatches(self.replay_buffer, self.raw_replay, self.loop_rng, steps,
                                   self.batch_size)
        stats, clean, noisy, _ = self.train_fn_for(steps)(
            *batch, self.smoothing_noise(steps), self._observations(obs), self.obs_stats.mean,
            self.obs_stats.std, np.float32(actor_lr), np.float32(critic_lr))
        self.grad_steps += steps
        values = dict(zip(STAT_NAMES, stats.numpy().tolist()))
        if values.pop("actor_steps") == 0:
            del values["actor_loss"]
        return values, self.explore(clean.numpy(), noisy.numpy(), True)

    # -- resuming ------------------------------------------------------------------------------
    def resume_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The replay buffer, the generators, the noise processes and the perturbed actor
        (drawn at an episode's start, not derivable from the weights)."""
        meta, arrays = super().resume_state()
        # Logged at every step: a resumed run reports the last measurement, not nan.
        meta["param_noise_distance"] = self.param_noise_distance
        if self.action_noise is not None:
            meta["action_noise"], noise_arrays = self.action_noise.state("resume/action_noise")
            arrays.update(noise_arrays)
        if self.perturbed_actor is not None:
            arrays.update(variables_to_arrays(self.perturbed_actor.weights,
                                              "resume/perturbed_actor"))
        return meta, arrays

    def restore_exploration(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.param_noise_distance = float(meta.get("param_noise_distance", float("nan")))
        if self.action_noise is not None:
            self.action_noise.set_state(meta["action_noise"], arrays, "resume/action_noise")
        if self.perturbed_actor is not None:
            assign_from_arrays(self.perturbed_actor.weights, arrays, "resume/perturbed_actor",
                               "the checkpoint")


def build_model(observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                network: Any, network_kwargs: dict[str, Any], config: DDPGConfig, *,
                total_timesteps: int = 0) -> Model:
    """DDPG's model for these spaces and ``num_envs`` envs (learn(), rlbase.DDPG and
    rlbase.TD3 call this).

    network_kwargs: the registry network's arguments (``layer_sizes=(400, 300)`` for
        'mlp'; 'mlp' here defaults to relu).
    config: DDPG's parameters. Under MPI the model averages gradients over the workers.
    """
    box = check_continuous_action_space(action_space, ALGORITHM)
    observation_space = check_observation_space(observation_space, ALGORITHM)
    comm = get_comm()
    comm = comm if comm is not None and comm.Get_size() > 1 else None
    # TF's own thread pools, not one thread: each training call works on whole minibatches
    # (400x300 nets at batch 256: 279-340 steps/s against 231 on one thread). MPI workers
    # already share the cores, one thread each.
    configure_threads("small" if comm is not None else "large")
    kwargs = dict(network_kwargs)
    if network == "mlp":
        kwargs.setdefault("activation", "relu")
    return Model(observation_space, box, num_envs, network, kwargs, config, comm)
