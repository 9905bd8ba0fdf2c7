"""Pieces every continuous-control algorithm shares (DDPG/TD3 today, SAC next): the space
checks, action scaling, the registry torso, what the networks make of an observation, and the
critic Q(s, a).

Observations are Boxes (flattened; the algorithm normalizes them before they reach a network)
or Dict/Tuple spaces (SB3's MultiInputPolicy): those go through
:class:`rlbase.common.networks.policies.ObservationEncoder`, one encoder per entry (images
through the Nature convnet, vectors flattened, discrete entries one-hot), concatenated.

Actions live in [-1, 1] inside the agent (a tanh output's range, the replay buffer, the
exploration noise) and are mapped affinely onto the env's [low, high] only when they leave it,
so asymmetric bounds such as [0, 2] or [-1, 3] work.
"""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf
from keras import layers

from rlbase.common import nested
from rlbase.common.buffers.raw_replay import RawReplay, attach_replay_env, continuous_replay_buffer
from rlbase.common.errors import RLBaseError
from rlbase.common.io.checkpoint import generator_state, set_generator_state
from rlbase.common.networks.policies import ObservationEncoder, check_network_for_space
from rlbase.common.networks.policies import check_observation_space as check_leaf_spaces
from rlbase.common.networks.registry import Composite, build_network, is_recurrent
from rlbase.common.tf_model import TFModel
from rlbase.common.tf_util import CompiledFunction, observation_spec, spec_like
from rlbase.common.vec_env import VecEnv

# Baselines' DDPG output layers: weights uniform in +-3e-3, so early actions and Q are near 0.
FINAL_INIT = 3e-3


def check_continuous_action_space(space: gym.Space, algorithm: str) -> gym.spaces.Box:
    """``space`` if it is a 1-D Box with finite bounds, else a clear error naming the
    algorithms that fit."""
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
        raise RLBaseError(f"{algorithm} needs a 1-D continuous (Box) action space, got "
                          f"{space}; for discrete actions use dqn, ppo, a2c, acer or qlearning")
    if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
        raise RLBaseError(f"{algorithm} needs finite action bounds, got low={space.low} "
                          f"high={space.high}")
    return space


def check_observation_space(space: gym.Space, algorithm: str) -> gym.Space:
    """``space`` if it is a Box, Discrete, MultiDiscrete or MultiBinary space, or a Dict/Tuple
    space of those (nested as deep as they like), else a clear error."""
    try:
        check_leaf_spaces(space)
    except RLBaseError as exc:
        raise RLBaseError(f"{algorithm}: {exc}") from None
    return space


def dummy_observations(space: gym.Space, batch: int = 1) -> Any:
    """Zero observations (float32 for a Box, nested in the leaves' dtypes otherwise) to build
    a network's variables with."""
    if nested.is_nested(space):
        return tf.nest.map_structure(tf.constant, nested.zeros(space, (batch,)))
    return tf.zeros([batch, *(space.shape or ())])


def scale_actions(actions: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """[-1, 1] -> [low, high], element-wise (low maps to -1, high to +1)."""
    return low + (np.asarray(actions) + 1.0) * 0.5 * (high - low)


def unscale_actions(actions: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """[low, high] -> [-1, 1], the inverse of :func:`scale_actions`."""
    return 2.0 * (np.asarray(actions) - low) / (high - low) - 1.0


def build_torso(network: str | Callable[..., keras.layers.Layer],
                network_kwargs: dict[str, Any], algorithm: str,
                space: gym.Space | None = None) -> keras.layers.Layer:
    """A fresh feed-forward registry network (hidden layers of an actor or a critic); a
    recurrent one is an error (off-policy replay here samples single transitions). A
    Dict/Tuple ``space``'s image entries get their own convnet: the torso on top of the
    concatenated features must then take a vector (an mlp), not an image."""
    torso = build_network(network, **network_kwargs)
    # The registry's convention: recurrent layers say so with ``recurrent = True``.
    if is_recurrent(torso):
        raise RLBaseError(f"{algorithm} needs a feed-forward network, got recurrent "
                          f"{network!r}")
    if space is not None:
        name = network if isinstance(network, str) else network.__name__
        check_network_for_space(name, torso, space)
    return torso


class ObservationFeatures(Composite, keras.layers.Layer):
    """An observation -> the flat float features an actor's or a critic's torso takes.

    A Box observation is flattened (it arrives as float32, already normalized by the
    algorithm); a discrete one (Discrete, MultiDiscrete, MultiBinary: stored and passed as
    float32) is one-hot encoded, then flattened; a Dict/Tuple one goes through an
    :class:`ObservationEncoder` (weights only for image entries: the Nature convnet). Holds no
    weights for a Box, so the actors and critics of files saved before Dict support still load.
    """

    def __init__(self, space: gym.Space, **kwargs: Any):
        super().__init__(**kwargs)
        self.encoder = None if isinstance(space, gym.spaces.Box) else ObservationEncoder(space)
        self.nested = nested.is_nested(space)
        self.flatten = layers.Flatten()

    def call(self, obs: Any) -> tf.Tensor:
        if self.encoder is None:
            return self.flatten(obs)
        x = self.encoder(obs)
        return x if self.nested else self.flatten(x)


def final_layer(units: int, activation: str | None = None,
                init: float | None = FINAL_INIT) -> layers.Dense:
    """An output layer; ``init``: its weights and biases uniform in +-init (None: Keras')."""
    if init is None:
        return layers.Dense(units, activation=activation)
    uniform = keras.initializers.RandomUniform(-init, init)
    return layers.Dense(units, activation=activation, kernel_initializer=uniform,
                        bias_initializer=uniform)


class Critic(Composite, keras.Model):
    """Q(s, a): the action concatenated to the observation's features before the first layer
    (as in Baselines' and SB3's DDPG, TD3 and SAC), a registry torso, one linear output.
    Output shape ``[B]``. Twin critics are two of these.

    ob_space / num_actions: one observation's space (a Box, or Dict/Tuple: see
        :class:`ObservationFeatures`); the action dimension.
    torso: the hidden layers (see :func:`build_torso`).
    final_init: the output layer's uniform init range (None: Keras' default init).
    """

    def __init__(self, ob_space: gym.Space, num_actions: int, torso: keras.layers.Layer,
                 final_init: float | None = FINAL_INIT, **kwargs: Any):
        super().__init__(**kwargs)
        self.features = ObservationFeatures(ob_space)
        self.torso = torso
        self.out = final_layer(1, init=final_init)
        # Create the variables now.
        self(dummy_observations(ob_space), tf.zeros([1, num_actions]))

    def call(self, obs: Any, action: tf.Tensor) -> tf.Tensor:
        x = tf.concat([self.features(obs), action], axis=-1)
        return self.out(self.torso(x))[:, 0]

    def regularized_kernels(self) -> list[tf.Variable]:
        """The hidden layers' kernels (not biases, not the output layer): what L2 applies to."""
        out = {id(v) for v in self.out.weights}
        return [v for v in self.trainable_variables
                if len(v.shape) >= 2 and id(v) not in out]


class ContinuousAgent(TFModel):
    """What DDPG's (TD3's) and SAC's models share: the action bounds, the replay buffer of raw
    transitions (:class:`~rlbase.common.buffers.raw_replay.RawReplay`), the critics and their
    soft-updated targets, the compiled calls' observation specs, and a checkpoint's buffer and
    random generators. A subclass creates ``critics``, ``target_critics``, ``updates``, both
    optimizers, ``loop_rng`` (minibatches, warm-up actions) and ``generators`` (every random
    generator, by the name a checkpoint keeps it under)."""

    critics: list[Critic]
    target_critics: list[Critic]
    updates: tf.Variable
    actor_optimizer: keras.optimizers.Optimizer
    critic_optimizer: keras.optimizers.Optimizer
    loop_rng: np.random.Generator
    generators: dict[str, np.random.Generator]
    resume_hint = ""  # what else a checkpoint without the resume state may have been written by

    def __init__(self, observation_space: gym.Space, action_space: gym.spaces.Box, network: Any,
                 network_kwargs: dict[str, Any], config: Any, num_envs: int):
        super().__init__(observation_space, action_space, network, network_kwargs, config,
                         num_envs)
        self.num_actions = int(action_space.shape[0])
        self.low = action_space.low.astype(np.float64)
        self.high = action_space.high.astype(np.float64)
        self.gamma, self.tau = config.gamma, config.tau
        self.batch_size, self.gradient_steps = config.batch_size, config.gradient_steps
        self.target_update_gradient_steps = config.target_update_gradient_steps
        self._train_fns: dict[int, CompiledFunction] = {}
        self.replay_buffer = continuous_replay_buffer(observation_space, config, self.num_envs,
                                                      self.num_actions)
        self.raw_replay = RawReplay()  # see attach_env
        self.grad_steps = 0  # gradient steps taken (mirrors ``updates``)

    # -- variables -----------------------------------------------------------------------------
    @property
    def critic_variables(self) -> list[tf.Variable]:
        return [v for c in self.critics for v in c.trainable_variables]

    def target_pairs(self) -> list[tuple[tf.Variable, tf.Variable]]:
        """(online, target) variable pairs of every critic."""
        return [pair for c, t in zip(self.critics, self.target_critics)
                for pair in zip(c.weights, t.weights)]

    def soft_update_targets(self) -> None:
        """target <- (1 - tau) target + tau online, for every pair of :meth:`target_pairs`."""
        for src, dst in self.target_pairs():
            dst.assign((1.0 - self.tau) * dst + self.tau * src)

    def update_targets_when_due(self) -> None:
        """In the graph: :meth:`soft_update_targets` after the gradient steps whose count
        (``updates``) is a multiple of target_update_gradient_steps."""
        def update() -> tf.Tensor:
            self.soft_update_targets()
            return tf.constant(True)

        if self.target_update_gradient_steps == 1:
            self.soft_update_targets()
        else:
            tf.cond(tf.equal(self.updates % self.target_update_gradient_steps, 0), update,
                    lambda: tf.constant(False))

    def after_load(self) -> None:
        self.grad_steps = int(self.updates.numpy())

    def attach_env(self, env: VecEnv) -> None:
        """Also read the replay's raw transitions below the env's VecNormalize."""
        super().attach_env(env)
        self.raw_replay = RawReplay(env, self.raw_replay.reward_scale)
        self.replay_buffer = attach_replay_env(self.replay_buffer, env)

    # -- acting --------------------------------------------------------------------------------
    def to_env(self, actions: np.ndarray) -> np.ndarray:
        """[-1, 1] actions in the env's bounds and dtype."""
        return scale_actions(actions, self.low, self.high).astype(self.action_space.dtype)

    def random_actions(self) -> np.ndarray:
        """Uniform [-1, 1] actions for every env (the warm-up before learning_starts)."""
        return self.loop_rng.uniform(-1.0, 1.0, (self.num_envs, self.num_actions))

    # -- compiled calls ------------------------------------------------------------------------
    def _ob_spec(self, *lead: int | None) -> Any:
        """Box observations travel as float32 (what the buffer stores); Dict/Tuple ones nested,
        each leaf in its own dtype (uint8 images are scaled inside the call)."""
        if nested.is_nested(self.observation_space):
            return observation_spec(self.observation_space, lead)
        return spec_like([*lead, *(self.observation_space.shape or ())], np.float32)

    @property
    def train_fn(self) -> CompiledFunction:
        """The training call of one phase (``gradient_steps`` steps)."""
        return self.train_fn_for(self.gradient_steps)

    def train_fn_for(self, steps: int) -> CompiledFunction:
        raise NotImplementedError

    # -- resuming ------------------------------------------------------------------------------
    def resume_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The replay buffer and the random generators."""
        meta, arrays = super().resume_state()
        meta["replay"], replay_arrays = self.raw_replay.buffer_state(self.replay_buffer)
        arrays.update(replay_arrays)
        meta["rngs"] = {name: generator_state(rng) for name, rng in self.generators.items()}
        return meta, arrays

    def restore_resume_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super().restore_resume_state(meta, arrays)
        try:
            self.raw_replay.restore_buffer(self.replay_buffer, meta["replay"], arrays)
            for name, rng in self.generators.items():
                set_generator_state(rng, meta["rngs"][name])
            self.restore_exploration(meta, arrays)
        except (KeyError, TypeError) as exc:
            raise RLBaseError(f"the checkpoint lacks {self.algorithm.upper()}'s resume state "
                              f"({exc}): it was written by another algorithm{self.resume_hint}"
                              ) from exc

    def restore_exploration(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """What a subclass adds to :meth:`resume_state` (a missing entry is an error)."""
