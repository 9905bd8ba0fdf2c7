"""GAIL: the discriminator's loss, reward and statistics with exact values, and learning."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from rlbase.common.errors import RLBaseError
from rlbase.gail.adversary import Discriminator, encode_action
from rlbase.gail.losses import bernoulli_entropy, discriminator_loss, imitation_reward


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def test_reward_is_minus_log_one_minus_d() -> None:
    logits = np.array([-3.0, -0.5, 0.0, 2.0], np.float32)
    expected = -np.log(1.0 - _sigmoid(logits.astype(np.float64)))
    np.testing.assert_allclose(imitation_reward(tf.constant(logits)).numpy(), expected,
                               rtol=1e-6)
    # Where 1 - D rounds to 0 in float32 the formula still gives the logit's value.
    assert imitation_reward(tf.constant([40.0])).numpy()[0] == pytest.approx(40.0)


def test_bernoulli_entropy_exact() -> None:
    logits = np.array([-2.0, 0.0, 1.5], np.float64)
    p = _sigmoid(logits)
    expected = -p * np.log(p) - (1 - p) * np.log(1 - p)
    np.testing.assert_allclose(bernoulli_entropy(tf.constant(logits)).numpy(), expected,
                               rtol=1e-12)
    assert bernoulli_entropy(tf.constant(0.0)).numpy() == pytest.approx(np.log(2.0))


def test_discriminator_loss_by_hand() -> None:
    policy = np.array([-1.0, 0.5], np.float64)   # one classified right, one wrong
    expert = np.array([2.0, 1.0, -0.2], np.float64)
    coef = 0.1
    policy_term = -np.mean(np.log(1 - _sigmoid(policy)))
    expert_term = -np.mean(np.log(_sigmoid(expert)))
    p = _sigmoid(np.concatenate([policy, expert]))
    entropy = np.mean(-p * np.log(p) - (1 - p) * np.log(1 - p))
    loss, pt, et, ent, pacc, eacc = (t.numpy() for t in discriminator_loss(
        tf.constant(policy), tf.constant(expert), coef))
    np.testing.assert_allclose([loss, pt, et, ent],
                               [policy_term + expert_term - coef * entropy, policy_term,
                                expert_term, entropy], rtol=1e-12)
    assert (pacc, eacc) == (0.5, pytest.approx(2 / 3))


def test_action_encoding() -> None:
    one_hot = encode_action(gym.spaces.Discrete(3, start=1), tf.constant([1, 3])).numpy()
    np.testing.assert_array_equal(one_hot, [[1, 0, 0], [0, 0, 1]])
    multi = encode_action(gym.spaces.MultiDiscrete([2, 3]), tf.constant([[1, 2], [0, 0]]))
    np.testing.assert_array_equal(multi.numpy(), [[0, 1, 0, 0, 1], [1, 0, 1, 0, 0]])
    box = gym.spaces.Box(-1.0, 2.0, (2,))
    clipped = encode_action(box, tf.constant([[-3.0, 0.5], [1.0, 5.0]])).numpy()
    np.testing.assert_array_equal(clipped, [[-1.0, 0.5], [1.0, 2.0]])


def test_running_statistics_match_numpy() -> None:
    disc = Discriminator(gym.spaces.Box(-np.inf, np.inf, (3,)), gym.spaces.Discrete(2))
    rng = np.random.default_rng(0)
    batches = [rng.normal(2.0, 3.0, (n, 3)).astype(np.float32) for n in (40, 7, 13)]
    for batch in batches:
        disc.update_statistics(batch.mean(0), batch.var(0), len(batch))
    everything = np.concatenate(batches).astype(np.float64)
    np.testing.assert_allclose(disc.obs_mean.numpy(), everything.mean(0), rtol=1e-4)
    np.testing.assert_allclose(disc.obs_var.numpy(), everything.var(0), rtol=1e-4)
    assert disc.obs_count.numpy() == pytest.approx(60, abs=1e-3)
    # The statistics are saved with the weights.
    assert {w.name for w in disc.weights} >= {"obs_mean", "obs_var", "obs_count"}


def test_discriminator_refuses_images() -> None:
    with pytest.raises(RLBaseError, match="vector observations"):
        Discriminator(gym.spaces.Box(0, 255, (84, 84, 4), np.uint8), gym.spaces.Discrete(2))
