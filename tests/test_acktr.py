"""K-FAC (rlbase/acktr/kfac.py) against numpy computed by hand on tiny networks."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from rlbase.acktr import kfac
from rlbase.common.errors import RLBaseError


def _dense_net(seed: int = 0) -> keras.Sequential:
    keras.utils.set_random_seed(seed)
    net = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"),
                            keras.layers.Dense(2)])
    return net


def _record(net: keras.Model, x: np.ndarray, loss_fn) -> tuple[kfac.Recorder, dict, list]:
    layers = [layer for layer in net.layers
              if isinstance(layer, (keras.layers.Dense, keras.layers.Conv2D))]
    with tf.GradientTape(persistent=True) as tape:
        with kfac.recording(layers, tape) as rec:
            loss = loss_fn(net(x))
    probe_grads = {k: tape.gradient(loss, p) for k, p in rec.probes.items()}
    grads = tape.gradient(loss, net.trainable_variables)
    return rec, probe_grads, grads


def test_dense_factors_by_hand() -> None:
    net = _dense_net()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 3)).astype(np.float32)
    target = rng.normal(size=(5, 2)).astype(np.float32)
    rec, probe_grads, grads = _record(net, x, lambda y: tf.reduce_mean(
        tf.reduce_sum(tf.square(y - target), axis=1)))
    w1, b1, w2, b2 = [v.numpy() for v in net.trainable_variables]
    h = np.tanh(x @ w1 + b1)
    y = h @ w2 + b2
    n = len(x)
    # per-sample gradients of the per-sample loss w.r.t. each layer's pre-activations
    g2 = 2 * (y - target)
    g1 = (g2 @ w2.T) * (1 - h ** 2)
    for layer, a_in, g in zip(net.layers, (x, h), (g1, g2)):
        a_bar = np.concatenate([a_in, np.ones((n, 1))], axis=1)
        a, gg = kfac.batch_factors(layer, rec.inputs[id(layer)], probe_grads[id(layer)])
        np.testing.assert_allclose(a.numpy(), a_bar.T @ a_bar / n, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gg.numpy(), g.T @ g / n, rtol=1e-4, atol=1e-6)
    # the recorded pass computes the same gradients as the plain one
    np.testing.assert_allclose(grads[2].numpy(), h.T @ g2 / n, rtol=1e-4, atol=1e-6)


def test_preconditioned_gradient_against_dense_fisher() -> None:
    """One layer's block: u = (A (x) G + damping I)^-1 vec(grad), vec stacking row by row,
    built densely. K-FAC ignores the blocks between layers (block-diagonal Fisher)."""
    rng = np.random.default_rng(1)
    ma, mg = rng.normal(size=(4, 4)), rng.normal(size=(3, 3))
    a, g = ma @ ma.T / 4, mg @ mg.T / 3
    grad = rng.normal(size=(4, 3))
    damping = 0.05
    dense = np.kron(a, g) + damping * np.eye(12)
    expected = np.linalg.solve(dense, grad.reshape(-1)).reshape(4, 3)
    ea, qa = np.linalg.eigh(a)
    eg, qg = np.linalg.eigh(g)
    got = kfac.precondition(tf.constant(grad), tf.constant(qa), tf.constant(ea),
                            tf.constant(qg), tf.constant(eg), damping)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-8)


def test_optimizer_step_by_hand() -> None:
    """Factors, eigendecomposition, preconditioning and the kfac_clip scaling of a real step
    against the dense solve."""
    net = _dense_net(2)
    x = np.random.default_rng(2).normal(size=(6, 3)).astype(np.float32)
    opt = kfac.KFAC(net.layers, net.trainable_variables, momentum=0.9, kfac_clip=0.001,
                    damping=0.01, cold_iter=0)
    rec, probe_grads, grads = _record(net, x, lambda y: tf.reduce_mean(tf.square(y)))
    opt.update_stats(rec, probe_grads)
    opt.update_inverse()
    before = [v.numpy().copy() for v in net.trainable_variables]
    lr = 0.25
    updates, vfv = [], 0.0
    for layer, i in zip(net.layers, (0, 2)):
        a, g = [f.numpy().astype(np.float64) for f in opt.factors[net.layers.index(layer)]]
        gm = np.concatenate([grads[i].numpy(), grads[i + 1].numpy()[None]], axis=0)
        u = np.linalg.solve(np.kron(a, g) + 0.01 * np.eye(a.shape[0] * g.shape[0]),
                            gm.reshape(-1)).reshape(gm.shape)
        updates.append(u)
        vfv += float(np.sum(u * gm)) * lr ** 2
    scale = min(1.0, np.sqrt(0.001 / vfv))
    assert scale < 1.0  # the trust region is active at these numbers
    got = opt.apply(grads, tf.constant(lr)).numpy()
    np.testing.assert_allclose(got, scale, rtol=1e-3)
    for layer_i, u in enumerate(updates):
        w = before[2 * layer_i] - lr * 0.1 * scale * u[:-1]
        b = before[2 * layer_i + 1] - lr * 0.1 * scale * u[-1]
        np.testing.assert_allclose(net.trainable_variables[2 * layer_i].numpy(), w, rtol=2e-3,
                                   atol=1e-6)
        np.testing.assert_allclose(net.trainable_variables[2 * layer_i + 1].numpy(), b,
                                   rtol=2e-3, atol=1e-6)


def test_clip_scale_by_hand() -> None:
    u = [tf.constant([1.0, 2.0]), tf.constant([3.0])]
    g = [tf.constant([0.5, 0.5]), tf.constant([1.0])]
    # u.g = 0.5 + 1 + 3 = 4.5; lr^2 u.g = 0.0625 * 4.5 = 0.28125
    assert kfac.clip_scale(u, g, tf.constant(0.25), 0.001).numpy() == pytest.approx(
        np.sqrt(0.001 / 0.28125), rel=1e-6)
    assert kfac.clip_scale(u, g, tf.constant(0.001), 0.001).numpy() == 1.0


def test_conv2d_factors_by_hand() -> None:
    keras.utils.set_random_seed(3)
    conv = keras.layers.Conv2D(2, 2, strides=1, activation="relu")
    net = keras.Sequential([keras.Input((3, 3, 1)), conv, keras.layers.Flatten()])
    x = np.random.default_rng(3).normal(size=(2, 3, 3, 1)).astype(np.float32)
    rec, probe_grads, _ = _record(net, x, lambda y: tf.reduce_mean(tf.reduce_sum(y, axis=1)))
    kernel, bias = conv.kernel.numpy(), conv.bias.numpy()
    patches = np.array([[x[n, i:i + 2, j:j + 2, 0].reshape(-1) for i in range(2)
                         for j in range(2)] for n in range(2)])          # (2, 4 positions, 4)
    pre = patches @ kernel.reshape(4, 2) + bias
    g = (pre > 0).astype(np.float64)       # per-sample d(sum of outputs)/d pre
    rows = np.concatenate([patches.reshape(-1, 4), np.ones((8, 1))], axis=1)
    a, gg = kfac.batch_factors(conv, rec.inputs[id(conv)], probe_grads[id(conv)])
    np.testing.assert_allclose(a.numpy(), rows.T @ rows / 8, rtol=1e-5, atol=1e-6)
    gr = g.reshape(-1, 2)
    # G carries the 4 output positions: the per-sample gradient sums over them
    np.testing.assert_allclose(gg.numpy(), 4 * gr.T @ gr / 8, rtol=1e-5, atol=1e-6)


def test_conv2d_kronecker_product_equals_dense_fisher() -> None:
    """Where KFC's assumptions hold exactly, A (x) G is the dense Fisher of the conv weights
    (``E[vec(dW) vec(dW)^T]`` over per-sample gradients). Each input is repeated 4 times and
    copy k's loss weights position t by ``H[k, t] * v`` (H a 4x4 Hadamard matrix): the
    derivatives are then uncorrelated across the 4 positions and independent of the inputs.
    Without the positions' factor in G the product is 4 times too small."""
    keras.utils.set_random_seed(4)
    conv = keras.layers.Conv2D(2, 2, strides=1)
    net = keras.Sequential([keras.Input((3, 3, 1)), conv])
    base = np.random.default_rng(4).normal(size=(5, 3, 3, 1)).astype(np.float32)
    x = np.repeat(base, 4, axis=0)                                   # sample b = copy b % 4
    hadamard = np.array([[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]])
    v = np.array([1.0, -0.5])
    weights = (hadamard[np.arange(20) % 4][:, :, None] * v).reshape(20, 2, 2, 2)
    rec, probe_grads, _ = _record(net, x, lambda y: tf.reduce_mean(
        tf.reduce_sum(y * weights.astype(np.float32), axis=[1, 2, 3])))
    a, gg = kfac.batch_factors(conv, rec.inputs[id(conv)], probe_grads[id(conv)])
    patches = np.array([[x[n, i:i + 2, j:j + 2, 0].reshape(-1) for i in range(2)
                         for j in range(2)] for n in range(20)])         # (20, 4 positions, 4)
    rows = np.concatenate([patches, np.ones((20, 4, 1))], axis=2)
    per_sample = np.einsum("nti,ntj->nij", rows, weights.reshape(20, 4, 2))  # dW, (5, 2) each
    flat = per_sample.reshape(20, -1)                               # vec row by row
    dense = flat.T @ flat / 20
    np.testing.assert_allclose(np.kron(a.numpy(), gg.numpy()), dense, rtol=1e-4, atol=1e-5)


def test_unfactorable_layer_refused() -> None:
    with pytest.raises(RLBaseError, match="Dense and Conv2D layers only, not LSTM"):
        kfac.check_layers([keras.layers.LSTM(4)])


def test_compiled_update_cold_then_kfac() -> None:
    """One compiled call per update: cold SGD steps while the factors are averaged with equal
    weights, then K-FAC steps; the trace count stays flat and a regression fit improves."""
    net = _dense_net(4)
    rng = np.random.default_rng(4)
    x = rng.normal(size=(32, 3)).astype(np.float32)
    target = (x @ rng.normal(size=(3, 2))).astype(np.float32)
    opt = kfac.KFAC(net.layers, net.trainable_variables, kfac_clip=0.01, cold_iter=2,
                    inverse_interval=2, stats_decay=0.9)
    factored = [layer for layer in net.layers]
    seen: list[np.ndarray] = []

    @tf.function
    def update(xb: tf.Tensor, tb: tf.Tensor, lr: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        with tf.GradientTape(persistent=True) as tape:
            with kfac.recording(factored, tape) as rec:
                y = net(xb)
            loss = tf.reduce_mean(tf.reduce_sum(tf.square(y - tb), axis=1))
            # the Fisher's sampled loss: a unit Gaussian around the output, targets drawn
            fisher = tf.reduce_mean(tf.reduce_sum(tf.square(
                y - tf.stop_gradient(y + tf.random.normal(tf.shape(y)))), axis=1))
        probe_grads = {k: tape.gradient(fisher, p) for k, p in rec.probes.items()}
        grads = tape.gradient(loss, net.trainable_variables)
        return loss, opt.minimize(grads, rec, probe_grads, lr)

    losses, scales = [], []
    for _ in range(12):
        seen.append(opt.factors[0][0].numpy().copy())
        loss, scale = update(tf.constant(x), tf.constant(target), tf.constant(0.25))
        losses.append(float(loss))
        scales.append(float(scale))
    assert update.experimental_get_tracing_count() == 1
    assert scales[:2] == [1.0, 1.0]
    assert all(0 < s < 1 for s in scales[2:])          # the trust region binds at lr 0.25
    assert int(opt.updates.numpy()) == 12
    assert losses[-1] < 0.5 * losses[0]
    # A is the same every batch (same inputs): its average equals it from the first update
    np.testing.assert_allclose(seen[1], seen[5], rtol=1e-5)


def test_recurrent_network_and_async_refused() -> None:
    from rlbase.acktr.acktr import learn

    with pytest.raises(RLBaseError, match="recurrent network 'lstm'"):
        learn("lstm", "CartPole-v1", total_timesteps=0)
    with pytest.raises(RLBaseError, match="is_async=True"):
        learn("mlp", "CartPole-v1", total_timesteps=0, is_async=True)


def _mean_reward(model, seed: int) -> float:
    import gymnasium as gym

    from rlbase.common.loops.evaluation import evaluate_policy
    from rlbase.common.vec_env import DummyVecEnv

    env = DummyVecEnv([lambda: gym.make("CartPole-v1", max_episode_steps=200)])
    env.seed(100 + seed)
    return float(evaluate_policy(model, env, n_eval_episodes=10)[0])


@pytest.mark.slow
def test_cartpole_learns_over_seeds() -> None:
    """The classic_control row (the Stable Baselines zoo's CartPole row: 8 envs, no entropy
    bonus, a separate value torso) at 1e5 steps. Measured 2026-11-28 (10 deterministic
    episodes capped at 200 steps): 138, 200, 200, 171, 200 at seeds 0-4 and 200, 200, 176, 200,
    200 at seeds 5-9, against the threshold 100 (the lowest of 10 seeds clears it by 38). It
    fails the broken variants it was tried on: untrained 59, trained on zeroed rewards 29
    (seed 0)."""
    from rlbase.acktr.acktr import learn
    from rlbase.common.envs.env_util import make_vec_env

    untrained = learn("mlp", "CartPole-v1", total_timesteps=0, seed=0)
    assert _mean_reward(untrained, 0) < 100
    for seed in range(3):
        env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
        model = learn("mlp", env, total_timesteps=100_000, seed=seed, ent_coef=0.0,
                      value_network="copy")
        assert _mean_reward(model, seed) > 100, seed

