"""GAIL's defaults are Baselines' (gail/run_mujoco.py, gail/trpo_mpi.py, gail/adversary.py):
the trust-region step's cg_damping 0.1, the value fit's minibatches of 128, and the
discriminator's observation normalization dividing by sqrt(max(var, 0.01)) (Baselines'
RunningMeanStd floors the variance at 0.01, so a near-constant feature is divided by 0.1).
Seen to fail with the earlier cg_damping 0.01, vf_batch_size 64 and std floor 0.01."""

from __future__ import annotations

import inspect

import gymnasium as gym
import keras
import numpy as np
import pytest

from rlbase.common.families.trust_region.config import TrustRegionConfig
from rlbase.gail.adversary import Discriminator
from rlbase.gail.config import GAILConfig
from rlbase.trpo.config import CONFIG as TRPOConfig

# Baselines' gail/run_mujoco.py (and the value fit's batch in gail/trpo_mpi.py)
BASELINES_GAIL = dict(max_kl=0.01, cg_iters=10, cg_damping=0.1, nsteps=1024, gamma=0.995,
                      lam=0.97, ent_coef=0.0, vf_iters=5, vf_lr=1e-3, vf_batch_size=128,
                      g_step=3, d_step=1, d_lr=3e-4, adversary_hidden_size=100,
                      adversary_entcoeff=1e-3)


def test_gail_defaults_are_baselines() -> None:
    config = GAILConfig.build({})
    assert {k: getattr(config, k) for k in BASELINES_GAIL} == BASELINES_GAIL
    # learn() takes its defaults from the config
    from rlbase.gail.gail import learn

    params = inspect.signature(learn).parameters
    for name, value in BASELINES_GAIL.items():
        if name in params:
            assert params[name].default == value, name


def test_trpos_own_defaults_are_untouched() -> None:
    """The GAIL redefaults do not leak into TRPO (trpo_mpi's own cg_damping and batch)."""
    trpo = TRPOConfig.build({})
    assert (trpo.cg_damping, trpo.vf_batch_size) == (0.01, 64)
    assert TrustRegionConfig.defaults()["cg_damping"] == 0.01


def _hand_logits(disc: Discriminator, obs: np.ndarray, actions: np.ndarray,
                 std: np.ndarray) -> np.ndarray:
    (w1, b1), (w2, b2) = ([v.numpy().astype(np.float64) for v in (layer.kernel, layer.bias)]
                          for layer in disc.hidden)
    w3, b3 = (v.numpy().astype(np.float64) for v in (disc.logit.kernel, disc.logit.bias))
    x = np.concatenate([(obs - disc.obs_mean.numpy()) / std, actions], 1)
    h = np.tanh(np.tanh(x @ w1 + b1) @ w2 + b2)
    return (h @ w3 + b3)[:, 0]


def test_near_constant_feature_is_divided_by_the_variance_floors_root() -> None:
    keras.utils.set_random_seed(0)
    disc = Discriminator(gym.spaces.Box(-10.0, 10.0, (2,), np.float32),
                         gym.spaces.Box(-1.0, 1.0, (1,), np.float32), hidden_size=8)
    rng = np.random.default_rng(0)
    # feature 0 near-constant (variance 1e-6), feature 1 spread (variance 4)
    batch = np.stack([3.0 + 1e-3 * rng.standard_normal(500),
                      2.0 * rng.standard_normal(500)], 1).astype(np.float32)
    disc.update_statistics(batch.mean(0), batch.var(0), len(batch))
    var = disc.obs_var.numpy().astype(np.float64)
    assert var[0] < 1e-5 and var[1] > 1.0
    std = np.sqrt(np.maximum(var, 0.01))
    assert std[0] == pytest.approx(0.1) and std[1] == pytest.approx(np.sqrt(var[1]))
    obs = np.array([[3.05, 1.0], [2.9, -2.0], [3.0, 0.5]], np.float32)
    actions = np.array([[0.3], [-0.5], [0.9]], np.float32)
    want = _hand_logits(disc, obs, actions, std)
    got = disc.logits(obs, actions).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # and not what a floor of 0.01 on the std (the earlier rlbase) gives
    old = _hand_logits(disc, obs, actions, np.maximum(np.sqrt(var), 0.01))
    assert np.abs(old - want).max() > 1e-2
