"""SAC's action density on an asymmetric action box: the squashed Gaussian's change of
variables includes the box scaling ``a = low + (tanh(u) + 1) (high - low) / 2``, whose
log-Jacobian ``sum_j log((high_j - low_j) / 2)`` is 0 on [-1, 1] (where the older test in
test_replay_normalization.py lives) but not here. Seen to fail with that term's sign flipped
in rlbase/sac/model.py: Model.log_prob."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np

from rlbase import SAC
from rlbase.common.vec_env import DummyVecEnv

LOW = np.array([-3.0, 0.0])
HIGH = np.array([1.0, 5.0])


class AsymmetricBox(gym.Env):
    """Observation [0.1 t, -0.2 t]; actions in the box [-3, 1] x [0, 5]; reward 0;
    truncated after 5 steps."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
        self.action_space = gym.spaces.Box(LOW.astype(np.float32), HIGH.astype(np.float32),
                                           dtype=np.float32)
        self.t = 0

    def _obs(self) -> np.ndarray:
        return np.array([0.1 * self.t, -0.2 * self.t], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), 0.0, False, self.t >= 5, {}


def hand_log_density(mean: np.ndarray, log_std: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """log pi(a|s) by hand: a = low + (y + 1) * (high - low) / 2 with y = tanh(u), u ~
    N(mean, std); so log pi(a) = log N(u) - sum log(1 - y^2) - sum log((high - low) / 2)."""
    y = 2.0 * (actions - LOW) / (HIGH - LOW) - 1.0
    u = 0.5 * np.log((1.0 + y) / (1.0 - y))
    std = np.exp(log_std)
    log_normal = -0.5 * ((u - mean) / std) ** 2 - np.log(std) - 0.5 * math.log(2.0 * math.pi)
    log_dtanh = np.log(1.0 - y ** 2)
    log_dscale = np.log((HIGH - LOW) / 2.0)  # log 2 and log 2.5: both nonzero
    return (log_normal - log_dtanh - log_dscale).sum(-1)


def test_sac_density_on_an_asymmetric_box_includes_the_box_scaling():
    env = DummyVecEnv([AsymmetricBox])
    model = SAC("MlpPolicy", env, seed=0, policy_kwargs=dict(net_arch=[4]))
    obs = np.array([[0.1, 0.2], [-0.3, 0.5], [0.0, 0.0]], np.float32)
    actions = np.array([[-2.5, 1.0], [0.5, 4.2], [-1.0, 2.5]], np.float64)
    mean, log_std = (x.numpy().astype(np.float64) for x in model.model.actor(obs))
    want = hand_log_density(mean, log_std, actions)
    got = model.action_probability(obs, actions=actions, logp=True)
    assert np.all(np.abs(want) < 20)  # moderate densities, so the comparison means something
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(model.action_probability(obs, actions=actions), np.exp(want),
                               rtol=1e-6)
    # Unbatched, the same value.
    np.testing.assert_allclose(model.action_probability(obs[1], actions=actions[1], logp=True),
                               want[1], rtol=1e-6)
    # On the box's edge (tanh never reaches it) and outside it the density is 0.
    edge = np.array([[1.0, 2.0], [-2.0, 0.0], [-3.5, 2.0]])
    assert np.all(model.action_probability(obs, actions=edge, logp=True) == -np.inf)


def test_density_integrates_to_one_over_the_box():
    """A numerical check of the whole change of variables: the density, integrated over the
    2-D box on a fine midpoint grid, is 1 (a wrong scaling term gives 1/25 or 25)."""
    env = DummyVecEnv([AsymmetricBox])
    model = SAC("MlpPolicy", env, seed=0, policy_kwargs=dict(net_arch=[4]))
    n = 400
    xs = LOW[0] + (np.arange(n) + 0.5) * (HIGH[0] - LOW[0]) / n
    ys = LOW[1] + (np.arange(n) + 0.5) * (HIGH[1] - LOW[1]) / n
    grid = np.stack(np.meshgrid(xs, ys, indexing="ij"), -1).reshape(-1, 2)
    obs = np.tile(np.array([[0.1, 0.2]], np.float32), (len(grid), 1))
    density = model.action_probability(obs, actions=grid)
    cell = (HIGH[0] - LOW[0]) * (HIGH[1] - LOW[1]) / n ** 2
    assert abs(density.sum() * cell - 1.0) < 0.02


def test_output_layers_start_uniform_in_one_over_root_fan_in():
    """PyTorch's nn.Linear initialization (the peer's): weights and biases uniform in
    +-1/sqrt(fan_in), so they fill that range and stay inside it."""
    from keras import layers

    from rlbase.common.families.squashed_gaussian import reinit_torch_linear

    layer = layers.Dense(64)
    layer.build((None, 256))
    reinit_torch_linear(layer)
    bound = 1.0 / math.sqrt(256)
    for values in (layer.kernel.numpy(), layer.bias.numpy()):
        assert np.abs(values).max() <= bound
    assert np.abs(layer.kernel.numpy()).max() > 0.95 * bound
    assert layer.kernel.numpy().min() < -0.95 * bound
