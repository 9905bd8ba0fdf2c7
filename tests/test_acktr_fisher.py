"""ACKTR's sampled Fisher through the model (rlbase/acktr/model.py): after one update the
K-FAC factors of every layer equal a numpy computation from the policy's own outputs, the
actions taken and the value noise drawn: ``G`` of the logits layer from ``onehot(a) -
softmax(z)``, of the value layer from ``2 vf_fisher_coef eps``, of the torso from both
back-propagated through tanh; and the first K-FAC step is ``-lr (1 - momentum) scale (A (x) G +
damping I)^-1 vec(grad)`` with those factors. Seen to fail with the sampled Fisher loss
replaced by zero (every G factor zero)."""

from __future__ import annotations

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

import rlbase.acktr.model as acktr_model
from rlbase.acktr.config import ACKTRConfig
from rlbase.acktr.kfac import KFAC

NUM_ENVS, NSTEPS, N_ACTIONS = 2, 4, 3
NBATCH = NUM_ENVS * NSTEPS
LR = 0.25


def _update(monkeypatch, **config):
    """One update of a tiny ACKTR model called eagerly; returns (model, weights before,
    weights after, obs, actions, value noise, loss gradients, stats)."""
    keras.utils.set_random_seed(0)
    model = acktr_model.build_model(
        gym.spaces.Box(-5.0, 5.0, (2,), np.float32), gym.spaces.Discrete(N_ACTIONS), NUM_ENVS,
        "mlp", dict(num_layers=1, num_hidden=4, activation="tanh"),
        ACKTRConfig.build(dict(nsteps=NSTEPS, **config)))
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(NBATCH, 2)).astype(np.float32)
    actions = rng.integers(0, N_ACTIONS, NBATCH).astype(np.int64)
    rewards = rng.normal(size=(NUM_ENVS, NSTEPS)).astype(np.float32)
    seen: dict = {}
    fisher_loss = acktr_model.sampled_fisher_loss

    def noting_noise(neglogp, values, noise, coef):
        seen["noise"] = noise.numpy()
        return fisher_loss(neglogp, values, noise, coef)

    minimize = KFAC.minimize

    def noting_grads(self, grads, *args):
        seen["grads"] = [g.numpy() for g in grads]
        return minimize(self, grads, *args)

    monkeypatch.setattr(acktr_model, "sampled_fisher_loss", noting_noise)
    monkeypatch.setattr(KFAC, "minimize", noting_grads)
    before = {layer.name: [v.numpy() for v in (layer.kernel, layer.bias)]
              for layer in model.layers}
    zeros = np.zeros((NUM_ENVS, NSTEPS), np.float32)
    stats = model.train_graph(
        tf.constant(obs), tf.constant(actions), tf.constant(rewards), tf.constant(zeros),
        tf.constant(zeros.ravel()), tf.zeros([NBATCH, 0]), tf.constant(obs[:NUM_ENVS]),
        tf.zeros([NUM_ENVS, 0]), tf.zeros([NUM_ENVS]), tf.constant(LR, tf.float32))[0]
    after = {layer.name: [v.numpy() for v in (layer.kernel, layer.bias)]
             for layer in model.layers}
    return model, before, after, obs, actions, seen, stats.numpy()


def _hand_factors(before, obs, actions, noise, coef):
    """[(A, G)] of the torso, logits and value layers, in numpy (float64)."""
    (w0, b0), (w1, b1), (w2, b2) = (
        [x.astype(np.float64) for x in before[name]] for name in before)  # torso, logits, value
    h = np.tanh(obs @ w0 + b0)
    z = h @ w1 + b1
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    # per-sample gradients of the sampled log-likelihood w.r.t. each layer's pre-activations
    g_logits = np.eye(N_ACTIONS)[actions] - p                   # d log pi(a|s) / dz
    g_value = (2.0 * coef * noise).reshape(-1, 1)               # d -c (v - stop(v + eps))^2 / dv
    g_torso = (g_logits @ w1.T + g_value @ w2.T) * (1.0 - h ** 2)

    def homogeneous(x):
        return np.concatenate([x, np.ones((len(x), 1))], 1)

    return [(homogeneous(x).T @ homogeneous(x) / NBATCH, g.T @ g / NBATCH)
            for x, g in ((obs, g_torso), (h, g_logits), (h, g_value))]


def test_model_layers_are_torso_logits_value() -> None:
    keras.utils.set_random_seed(0)
    model = acktr_model.build_model(
        gym.spaces.Box(-5.0, 5.0, (2,), np.float32), gym.spaces.Discrete(N_ACTIONS), NUM_ENVS,
        "mlp", dict(num_layers=1, num_hidden=4, activation="tanh"),
        ACKTRConfig.build(dict(nsteps=NSTEPS)))
    # in this order (the tests below rely on it, not on the layers' names, whose numbers
    # depend on how many layers other tests made before)
    assert [tuple(layer.kernel.shape) for layer in model.layers] == [(2, 4), (4, N_ACTIONS),
                                                                      (4, 1)]


def test_factors_after_one_update_equal_the_sampled_fisher_by_hand(monkeypatch) -> None:
    coef = 0.7
    model, before, _, obs, actions, seen, _ = _update(monkeypatch, vf_fisher_coef=coef)
    want = _hand_factors(before, obs, actions, seen["noise"], coef)
    # model.layers is (torso, logits, value), as _hand_factors returns them; names would sort
    # 'dense_10' before 'dense_9' once other tests have made layers
    for (a_var, g_var), (a_want, g_want) in zip(model.optimizer.factors, want):
        a_got, g_got = a_var.numpy(), g_var.numpy()
        assert np.abs(g_got).max() > 1e-3  # the Fisher is not zero
        np.testing.assert_allclose(a_got, a_want, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(g_got, g_want, rtol=1e-4, atol=1e-6)


def test_first_kfac_step_is_the_damped_kronecker_solve(monkeypatch) -> None:
    """With cold_iter=0 the first update is a K-FAC step on the first batch's factors, folded
    into the zero averages with weight 1 - stats_decay."""
    kw = dict(cold_iter=0, stats_decay=0.5, damping=1e-3)  # the curvature, not the damping,
    config = ACKTRConfig.build(dict(nsteps=NSTEPS, **kw))  # dominates the step
    model, before, after, obs, actions, seen, stats = _update(monkeypatch, **kw)
    scale = stats[list(acktr_model.STAT_NAMES).index("trust_region_scale")]
    want = _hand_factors(before, obs, actions, seen["noise"], config.vf_fisher_coef)
    index = {id(v): i for i, v in enumerate(model.policy.trainable_variables)}
    for layer, (a, g) in zip(model.layers, want):
        grad = np.concatenate([seen["grads"][index[id(layer.kernel)]],
                               seen["grads"][index[id(layer.bias)]][None]], 0)
        w = 1.0 - config.stats_decay
        fisher = np.kron(w * a, w * g) + config.damping * np.eye(a.shape[0] * g.shape[0])
        u = np.linalg.solve(fisher, grad.astype(np.float64).ravel()).reshape(grad.shape)
        step = -LR * (1.0 - config.momentum) * scale * u
        got = np.concatenate([after[layer.name][0] - before[layer.name][0],
                              (after[layer.name][1] - before[layer.name][1])[None]], 0)
        np.testing.assert_allclose(got, step, rtol=2e-3, atol=1e-7)
        # K-FAC's step is not the plain gradient's direction
        cosine = np.sum(got * -grad) / (np.linalg.norm(got) * np.linalg.norm(grad))
        assert cosine < 0.999
    assert 0.0 < scale <= 1.0


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
