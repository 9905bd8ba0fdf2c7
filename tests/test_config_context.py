"""A spelling's conversion reads the other settings as they are actually used: the learn()
keywords or a hyperparameter row (``base``), under what the call itself sets, whichever
spelling set them (Baselines' ``save_interval`` counts updates of ``nsteps`` steps; SB3's
``batch_size`` divides ``n_steps * num_envs``; HER's ``clip_return`` depends on ``gamma``)."""

from __future__ import annotations

import warnings

import pytest

from rlbase.ddpg.config import DDPGConfig
from rlbase.ppo.config import PPOConfig


def build(cls, given, base, num_envs=1):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return cls.build(given, num_envs, base=base)


@pytest.mark.parametrize("base, given, want", [
    ({"nsteps": 64}, {"save_interval": 3}, 3 * 64),             # nsteps from learn()'s keyword
    ({}, {"save_interval": 3, "n_steps": 32}, 3 * 32),          # from SB3's spelling
    ({"nsteps": 2048}, {"save_interval": 3, "n_steps": 32}, 3 * 32),  # the call's wins
])
def test_save_interval_counts_updates_of_the_nsteps_used(base, given, want):
    assert build(PPOConfig, given, base).checkpoint_interval == want


@pytest.mark.parametrize("base, given, envs, want", [
    ({"nsteps": 64}, {"batch_size": 16}, 1, 4),
    ({"nsteps": 2048}, {"batch_size": 16, "n_steps": 32}, 1, 2),
    ({"nsteps": 64}, {"batch_size": 32}, 4, 8),
])
def test_batch_size_divides_the_rollout_used(base, given, envs, want):
    assert build(PPOConfig, given, base, envs).nminibatches == want


def test_her_clip_return_uses_the_gamma_used():
    config = build(DDPGConfig, {"clip_return": True}, {"gamma": 0.98})
    assert config.target_min == pytest.approx(-1 / (1 - 0.98))


def test_a_conversion_of_a_bad_value_is_one_line():
    from rlbase.common.errors import RLBaseError

    with pytest.raises(RLBaseError, match=r"^ppo: batch_size=16: .*'abc'$"):
        build(PPOConfig, {"batch_size": 16, "n_steps": "abc"}, {"nsteps": 64})
