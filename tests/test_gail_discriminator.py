"""GAIL's discriminator through the model (rlbase/gail/model.py), not only its pure loss and
reward functions: trained on separable expert and policy pairs it scores the expert's higher,
and the reward the policy update receives is ``-log(1 - D) = softplus(logit)``, larger on the
expert's pairs. Seen to fail with the expert and policy logits swapped in the discriminator's
loss call (Model._discriminator_graph) and with the reward inverted to softplus(-logit)
(Model.train_graph)."""

from __future__ import annotations

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from rlbase.common.families.trust_region.model import TrustRegionModel
from rlbase.gail.config import GAILConfig
from rlbase.gail.model import build_model

NSTEPS = 64


def _pairs(rng: np.random.Generator, expert: bool) -> tuple[np.ndarray, np.ndarray]:
    """Separable pairs: the expert acts +0.5 around observation (1, 1), the policy -0.5
    around (-1, -1)."""
    sign = 1.0 if expert else -1.0
    obs = (sign + 0.3 * rng.standard_normal((NSTEPS, 2))).astype(np.float32)
    actions = (0.5 * sign + 0.1 * rng.standard_normal((NSTEPS, 1))).astype(np.float32)
    return obs, actions


@pytest.fixture(scope="module")
def trained():
    """A tiny GAIL model (one env, 64 steps) whose discriminator took 40 phases."""
    keras.utils.set_random_seed(0)
    config = GAILConfig.build(dict(nsteps=NSTEPS, vf_batch_size=32, adversary_hidden_size=8,
                                   d_lr=1e-2, d_step=2))
    model = build_model(gym.spaces.Box(-10.0, 10.0, (2,), np.float32),
                        gym.spaces.Box(-1.0, 1.0, (1,), np.float32), 1, "mlp",
                        dict(num_layers=1, num_hidden=8), config)
    rng = np.random.default_rng(0)
    stats = []
    for _ in range(40):
        stats.append(model.train_discriminator(*_pairs(rng, False), *_pairs(rng, True)))
    return model, rng, stats


def test_trained_discriminator_scores_experts_higher(trained) -> None:
    model, rng, stats = trained
    expert_logits = model.discriminator.logits(*_pairs(rng, True)).numpy()
    policy_logits = model.discriminator.logits(*_pairs(rng, False)).numpy()
    # D = sigmoid(logit) is the probability of "expert": high on the expert's pairs.
    assert expert_logits.min() > policy_logits.max()
    assert expert_logits.min() > 0 > policy_logits.max()
    # The logged accuracies agree: expert pairs classified as expert, policy pairs as policy.
    assert stats[-1]["expert_pairs_accuracy"] == 1.0
    assert stats[-1]["policy_pairs_accuracy"] == 1.0
    assert stats[-1]["discriminator_loss"] < 0.5 * stats[0]["discriminator_loss"]


def _update_rewards(model, obs: np.ndarray, actions: np.ndarray, monkeypatch) -> np.ndarray:
    """The rewards GAIL's train_graph hands to TRPO's update (the rollout's own rewards 0)."""
    seen = {}

    def capture(self, obs, actions, rewards, *rest):
        seen["rewards"] = rewards
        return ()

    monkeypatch.setattr(TrustRegionModel, "train_graph", capture)
    zeros = np.zeros([1, NSTEPS], np.float32)
    model.train_graph(tf.constant(obs), tf.constant(actions), tf.constant(zeros),
                      tf.constant(zeros), tf.constant(zeros.ravel()),
                      tf.zeros([NSTEPS, 0]), tf.constant(obs[:1]), tf.zeros([1, 0]),
                      tf.zeros([1]))
    return seen["rewards"].numpy().ravel()


def test_update_rewards_are_minus_log_one_minus_d_and_favour_experts(trained,
                                                                     monkeypatch) -> None:
    model, rng, _ = trained
    expert, policy = _pairs(rng, True), _pairs(rng, False)
    expert_rewards = _update_rewards(model, *expert, monkeypatch)
    policy_rewards = _update_rewards(model, *policy, monkeypatch)
    assert expert_rewards.min() > policy_rewards.max()
    # Exactly -log(1 - sigmoid(logit)), by hand in float64.
    for (obs, actions), got in ((expert, expert_rewards), (policy, policy_rewards)):
        logits = model.discriminator.logits(obs, actions).numpy().astype(np.float64)
        want = -np.log(1.0 - 1.0 / (1.0 + np.exp(-logits)))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_logged_imitation_reward_is_the_policy_pairs_mean_reward(trained) -> None:
    """The phase's imitation_reward statistic is the mean reward of the policy's pairs (before
    that phase's steps): below what the expert's pairs earn."""
    model, rng, _ = trained
    policy, expert = _pairs(rng, False), _pairs(rng, True)
    logits = model.discriminator.logits(*policy).numpy().astype(np.float64)
    expert_logits = model.discriminator.logits(*expert).numpy().astype(np.float64)
    stats = model.train_discriminator(*policy, *expert)
    assert stats["imitation_reward"] == pytest.approx(np.mean(np.logaddexp(0.0, logits)),
                                                      rel=1e-4)
    assert stats["imitation_reward"] < np.mean(np.logaddexp(0.0, expert_logits))
