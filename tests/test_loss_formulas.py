"""Exact values of the pure loss functions on tiny inputs, computed by hand (the numbers in the
comments): GAIL's discriminator loss (with tests/test_gail.py), the trust-region objective's
terms, ACER's Retrace targets and trust-region projection, ACKTR's sampled Fisher loss.

These are the fast tests mutation testing runs these modules against
(tests/mutation/targets.toml): each asserts a value a wrong sign, index or comparison changes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

from rlbase.acer.retrace import EPS, add_grads, avg_norm, q_retrace, trust_region_adjust
from rlbase.acktr.losses import sampled_fisher_loss
from rlbase.common.families.trust_region import losses as tr
from rlbase.common.networks.distributions import Categorical
from rlbase.gail.losses import discriminator_loss


def f32(*rows: object) -> tf.Tensor:
    return tf.constant(np.array(rows, dtype=np.float32))


# --- GAIL -------------------------------------------------------------------------------------

def test_discriminator_accuracy_counts_a_zero_logit_as_wrong() -> None:
    """D = 0.5 is right for neither label (tests/test_gail.py checks the loss's terms). Three
    of five right on each side, so that counting the wrong side (2 of 5) or the zero with the
    right one (4 of 5) shows."""
    *_, p_acc, e_acc = discriminator_loss(f32(1.0, -2.0, 0.0, -3.0, -0.5),
                                          f32(3.0, 0.0, -1.0, 2.0, 0.5), 0.5)
    assert p_acc.numpy() == pytest.approx(3 / 5) and e_acc.numpy() == pytest.approx(3 / 5)


def test_discriminator_loss_rewards_separating_the_labels() -> None:
    """Right answers cost less than wrong ones: swapping the labels would invert this."""
    right = discriminator_loss(f32(-4.0), f32(4.0), 0.0)[0].numpy()
    wrong = discriminator_loss(f32(4.0), f32(-4.0), 0.0)[0].numpy()
    assert right == pytest.approx(2 * math.log1p(math.exp(-4.0)), rel=1e-6)
    assert wrong == pytest.approx(2 * math.log1p(math.exp(4.0)), rel=1e-6)


# --- the trust-region objective -----------------------------------------------------------------

def test_surrogate_gain_is_the_importance_weighted_advantage() -> None:
    # ratios exp(1.5 - 1) and exp(1 - 2): (e^0.5 * 2 + e^-1 * -1) / 2
    got = tr.surrogate_gain(f32(1.0, 2.0), f32(1.5, 1.0), f32(2.0, -1.0)).numpy()
    assert got == pytest.approx((math.exp(0.5) * 2 - math.exp(-1.0)) / 2, rel=1e-6)


def test_mean_kl_is_old_to_new_and_mean_entropy() -> None:
    old = Categorical(f32([0.0, 0.0], [0.0, 0.0]))                   # (1/2, 1/2)
    new = Categorical(f32([math.log(3.0), 0.0], [0.0, 0.0]))         # (3/4, 1/4), then equal
    # KL(old || new) = 1/2 ln(2/3) + 1/2 ln 2 = 1/2 ln(4/3) on row 0, 0 on row 1; the other
    # direction, 3/4 ln(3/2) + 1/4 ln(1/2), differs
    assert tr.mean_kl(old, new).numpy() == pytest.approx(0.5 * math.log(4 / 3) / 2, rel=1e-5)
    h_new = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert tr.mean_entropy(new).numpy() == pytest.approx((h_new + math.log(2)) / 2, rel=1e-5)


def test_policy_gain_adds_the_entropy_bonus() -> None:
    pd = Categorical(f32([0.0, 0.0]))
    got = tr.policy_gain(f32(1.0), f32(1.0), f32(3.0), pd, 0.25).numpy()
    assert got == pytest.approx(3.0 + 0.25 * math.log(2), rel=1e-6)


def test_value_loss_is_the_mean_squared_error() -> None:
    assert tr.value_loss(f32(1.0, 2.0), f32(0.0, 5.0)).numpy() == pytest.approx((1 + 9) / 2)


# --- ACER ---------------------------------------------------------------------------------------

def test_q_retrace_by_hand() -> None:
    """Backwards from X = V(last): Qret_t = r_t + 0.9 (1 - d_t) X_{t+1},
    X_t = rho_t (Qret_t - Q_t) + V_t.

    env 0: Qret_2 = 3 + 0.9 * 4 = 6.6, X_2 = 0.25 * (6.6 - 2) + 3 = 4.15; step 1 ends an
    episode: Qret_1 = 2, X_1 = 1 * (2 - 1) + 2 = 3; Qret_0 = 1 + 0.9 * 3 = 3.7.
    env 1: Qret_2 = 1 + 0.9 * 2 = 2.8, X_2 = 3.8; Qret_1 = 3.42, X_1 = 4.42; Qret_0 = 3.978.
    """
    got = q_retrace(rewards=f32([1, 2, 3], [0, 0, 1]), dones=f32([0, 1, 0], [0, 0, 0]),
                    q_i=f32([0.5, 1, 2], [1, 1, 1]), values=f32([1, 2, 3, 4], [2, 2, 2, 2]),
                    rho_bar=f32([0.5, 1, 0.25], [1, 1, 1]), gamma=0.9).numpy()
    np.testing.assert_allclose(got, [[3.7, 2.0, 6.6], [3.978, 3.42, 2.8]], rtol=1e-6)


def test_trust_region_adjust_projects_only_rows_over_delta() -> None:
    g, k = f32([1, 0], [1, 1], [0.1, 0]), f32([1, 0], [0, 2], [1, 0])
    z, k_dot_g, adj = (t.numpy() for t in trust_region_adjust(g, k, 0.5))
    assert EPS == 1e-6  # Baselines' ACER epsilon, also in log(f + eps) and rho = f / (mu + eps)
    np.testing.assert_allclose(k_dot_g, [1.0, 2.0, 0.1], rtol=1e-6)
    # (k.g - delta) / (|k|^2 + eps): 0.5 / (1 + eps), 1.5 / (4 + eps), and 0 below delta
    np.testing.assert_allclose(adj, [0.5 / (1 + EPS), 1.5 / (4 + EPS), 0.0], rtol=1e-6)
    np.testing.assert_allclose(z, [[1 - 0.5 / (1 + EPS), 0], [1, 1 - 3 / (4 + EPS)], [0.1, 0]],
                               rtol=1e-6)


def test_trust_region_adjust_at_delta_exactly_is_unchanged() -> None:
    z, _, adj = (t.numpy() for t in trust_region_adjust(f32([2, 0]), f32([0.25, 0]), 0.5))
    assert adj[0] == 0.0 and z.tolist() == [[2.0, 0.0]]


def test_avg_norm_and_add_grads() -> None:
    assert avg_norm(f32([3, 4], [0, 1])).numpy() == pytest.approx(3.0)
    a, b = tf.constant(1.0), tf.constant(2.0)
    summed = add_grads([None, a, a, None], [b, None, b, None])
    assert summed[0] is b and summed[1] is a and summed[3] is None
    assert float(summed[2]) == 3.0


# --- ACKTR --------------------------------------------------------------------------------------

def test_sampled_fisher_loss_value_and_gradient() -> None:
    """-mean(neglogp) - c mean(noise^2): -(1 + 3) / 2 - 0.5 * (0.25 + 1) / 2 = -2.3125; the
    value term's gradient is -c * 2 (V - stop(V + noise)) / n = c * noise = [0.25, -0.5] (no
    gradient flows through the target), the log-likelihood's -1 / n each."""
    values = tf.Variable([1.0, 2.0])
    neglogp = tf.Variable([1.0, 3.0])
    with tf.GradientTape() as tape:
        loss = sampled_fisher_loss(neglogp, values, f32(0.5, -1.0), 0.5)
    d_values, d_neglogp = tape.gradient(loss, [values, neglogp])
    assert loss.numpy() == pytest.approx(-2.3125)
    np.testing.assert_allclose(d_values.numpy(), [0.25, -0.5], rtol=1e-6)
    np.testing.assert_allclose(d_neglogp.numpy(), [-0.5, -0.5], rtol=1e-6)
