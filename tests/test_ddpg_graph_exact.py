"""rlbase/ddpg/graph.py by hand: the return statistics' merge, clipped targets, the actor's
action penalty, the training call's statistics (critic L2, normalized returns, the policy
delay's nan) against a plain numpy forward pass, gradient clipping, parameter noise."""

import numpy as np
import pytest
import tensorflow as tf
from test_ddpg import make_model  # the tiny model learn() would build (3-unit ReLU nets)

from rlbase.ddpg.graph import ReturnStats, clip_targets, policy_loss


def forward(net, x, tanh=False):
    """A one-hidden-layer ReLU net in numpy, from the net's own weights."""
    k1, b1, k2, b2 = (w.numpy().astype(np.float64) for w in net.weights)
    out = np.maximum(x @ k1 + b1, 0.0) @ k2 + b2
    return np.tanh(out) if tanh else out[:, 0]


def seeded(model, seed=0):
    rng = np.random.default_rng(seed)
    nets = [model.actor, model.target_actor, *model.critics, *model.target_critics]
    for net in nets:
        for v in net.weights:
            v.assign(rng.normal(0.0, 0.7, v.shape).astype(np.float32))


OBS = np.array([[0.3, -1.2], [1.5, 0.4], [-0.7, 0.9], [0.2, 2.0]], np.float32)
ACT = np.array([[0.5], [-0.8], [0.1], [0.9]], np.float32)
REW = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
NEXT = np.array([[1.1, 0.3], [-0.4, -1.5], [2.2, 0.6], [0.0, -0.3]], np.float32)
DONE = np.array([0.0, 0.0, 1.0, 0.0], np.float32)


def run(model, lr_actor=0.0, lr_critic=0.0):
    batch = tuple(x[None] for x in (OBS, ACT, REW, NEXT, DONE))
    noise = np.zeros((1, 4, 1), np.float32)
    zero, one = np.zeros(2, np.float32), np.ones(2, np.float32)
    return model.train_fn(*batch, noise, OBS[:1], zero, one, np.float32(lr_actor),
                          np.float32(lr_critic))[0].numpy()


def merged(count, mean, var, batch):
    """The pooled mean and variance of a population (count, mean, var) and a batch."""
    n, bm, bv = len(batch), np.mean(batch), np.var(batch)
    total = count + n
    new_mean = (count * mean + n * bm) / total
    new_var = (count * (var + (mean - new_mean) ** 2) + n * (bv + (bm - new_mean) ** 2)) / total
    return total, new_mean, new_var


def test_return_stats_start_and_merge_batches_as_pooled_moments():
    stats = ReturnStats()
    assert [float(v.numpy()) for v in stats.variables] == [0.0, 1.0, pytest.approx(1e-4)]
    state = (1e-4, 0.0, 1.0)
    for batch in ([1.0, 2.0, 3.0, 6.0], [-2.0, 10.0], [4.0, 4.5, 5.0]):
        old_mean, old_std = stats.update(tf.constant(batch), None)
        assert float(old_mean) == pytest.approx(state[1], rel=1e-6)
        assert float(old_std) == pytest.approx(np.sqrt(max(state[2], 1e-2)), rel=1e-6)
        state = merged(*state, np.array(batch, np.float64))
        got = [float(v.numpy()) for v in (stats.count, stats.mean, stats.var)]
        np.testing.assert_allclose(got, state, rtol=1e-5)


class TwoRanks:
    """An MPI communicator of two ranks whose other rank's moments are given: Allreduce sums
    this rank's vector with them, as MPI.SUM over two ranks would."""

    def __init__(self, other):
        self.other = np.asarray(other, np.float32)

    def Get_size(self):
        return 2

    def Allreduce(self, send, recv, op=None):
        recv[...] = send + self.other


def test_return_stats_pool_the_batches_of_every_mpi_rank():
    """Two ranks of 4 targets each, both from the statistics' start (mean 0): the merge is
    that of the 8 targets as one batch (the batch's count is 4 x the 2 ranks)."""
    pytest.importorskip("mpi4py")
    mine, theirs = np.array([1.0, 2.0, 3.0, 6.0]), np.array([-2.0, 10.0, 4.0, 0.5])
    stats = ReturnStats()
    stats.update(tf.constant(mine, tf.float32), TwoRanks([theirs.mean(), np.mean(theirs ** 2)]))
    got = [float(v.numpy()) for v in (stats.count, stats.mean, stats.var)]
    np.testing.assert_allclose(got, merged(1e-4, 0.0, 1.0, np.append(mine, theirs)), rtol=1e-5)


def test_return_std_is_floored_at_a_variance_of_0_01():
    stats = ReturnStats()
    stats.var.assign(0.0004)
    assert float(stats.std()) == pytest.approx(0.1)
    stats.var.assign(0.04)
    assert float(stats.std()) == pytest.approx(0.2)


def test_clip_targets_each_bound_alone_and_both():
    t = tf.constant([-30.0, -2.0, 0.5, 4.0])
    np.testing.assert_array_equal(clip_targets(t, None, None).numpy(), [-30.0, -2.0, 0.5, 4.0])
    np.testing.assert_array_equal(clip_targets(t, -10.0, None).numpy(), [-10.0, -2.0, 0.5, 4.0])
    np.testing.assert_array_equal(clip_targets(t, None, 0.0).numpy(), [-30.0, -2.0, 0.0, 0.0])
    np.testing.assert_array_equal(clip_targets(t, -1.0, 1.0).numpy(), [-1.0, -1.0, 0.5, 1.0])


def test_policy_loss_is_minus_mean_q_plus_the_mean_squared_action_penalty():
    actions = tf.constant([[0.5, -1.0], [0.0, 0.5]])
    q = lambda critic, obs, a: tf.reduce_sum(a, axis=1) * 2.0 + 1.0  # noqa: E731
    actor = lambda obs: actions  # noqa: E731
    # Q = [0, 2]: -mean Q = -1; mean(a^2) = (0.25 + 1 + 0 + 0.25) / 4 = 0.375.
    assert float(policy_loss(q, None, actor, None, 0.0)) == pytest.approx(-1.0)
    assert float(policy_loss(q, None, actor, None, 0.2)) == pytest.approx(-1.0 + 0.2 * 0.375)


@pytest.mark.parametrize("twin", [False, True])
def test_training_statistics_against_numpy_with_critic_l2(twin):
    """Learning rates 0: the nets stay put, so each statistic is one numpy forward pass."""
    model = make_model(twin_q=twin, critic_l2_reg=0.3, gamma=0.9)
    seeded(model)
    next_a = forward(model.target_actor, NEXT, tanh=True)
    qs = [forward(t, np.concatenate([NEXT, next_a], 1)) for t in model.target_critics]
    targets = REW + 0.9 * (1.0 - DONE) * np.min(qs, axis=0)
    outs = [forward(c, np.concatenate([OBS, ACT], 1)) for c in model.critics]
    l2 = sum(np.sum(c.weights[0].numpy().astype(np.float64) ** 2) for c in model.critics)
    critic_loss = sum(np.mean((q - targets) ** 2) for q in outs) + 0.3 * 0.5 * l2
    mu = forward(model.actor, OBS, tanh=True)
    actor_loss = -np.mean(forward(model.critics[0], np.concatenate([OBS, mu], 1)))
    stats = run(model)
    np.testing.assert_allclose(stats, [critic_loss, actor_loss, np.mean(outs[0]), 1.0],
                               rtol=1e-5)


@pytest.mark.parametrize("twin", [False, True])
def test_normalized_returns_statistics_against_numpy(twin):
    """The targets use the statistics before this batch; the critics' loss and Q after it
    (Q's mean is critic 0's, as without normalization)."""
    model = make_model(normalize_returns=True, twin_q=twin)
    seeded(model, 1)
    model.returns.mean.assign(0.5)
    model.returns.var.assign(4.0)
    model.returns.count.assign(10.0)
    next_a = forward(model.target_actor, NEXT, tanh=True)
    q_next = np.min([forward(t, np.concatenate([NEXT, next_a], 1)) * 2.0 + 0.5
                     for t in model.target_critics], axis=0)
    targets = REW + 0.9 * (1.0 - DONE) * q_next
    _, mean, var = merged(10.0, 0.5, 4.0, targets)
    std = np.sqrt(var)
    outs = [forward(c, np.concatenate([OBS, ACT], 1)) for c in model.critics]
    critic_loss = sum(np.mean((out - (targets - mean) / std) ** 2) for out in outs)
    if twin:
        assert abs(np.mean(outs[0]) - np.mean(outs[1])) > 1e-3
    mu = forward(model.actor, OBS, tanh=True)
    actor_loss = -np.mean(forward(model.critics[0], np.concatenate([OBS, mu], 1)) * std + mean)
    stats = run(model)
    np.testing.assert_allclose(stats, [critic_loss, actor_loss, np.mean(outs[0] * std + mean),
                                       1.0], rtol=1e-5)


def test_popart_rescales_the_output_layers_exactly():
    model = make_model(twin_q=True, normalize_returns=True, popart=True)
    model.returns.mean.assign(1.0)
    model.returns.var.assign(4.0)
    model.returns.count.assign(2.0)
    nets = model.critics + model.target_critics
    before = [(n.out.kernel.numpy().copy(), n.out.bias.numpy().copy()) for n in nets]
    model.update_return_stats(tf.constant([5.0, 9.0]))
    _, mean, var = merged(2.0, 1.0, 4.0, np.array([5.0, 9.0]))
    for net, (k, b) in zip(nets, before):
        np.testing.assert_allclose(net.out.kernel.numpy(), k * 2.0 / np.sqrt(var), rtol=1e-5)
        np.testing.assert_allclose(net.out.bias.numpy(), (b * 2.0 + 1.0 - mean) / np.sqrt(var),
                                   rtol=1e-5)


def test_actor_loss_is_nan_except_at_every_delayed_actor_step():
    model = make_model(policy_delay=2)
    seeded(model, 2)
    first = run(model)
    assert np.isnan(first[1]) and first[3] == 0.0
    mu = forward(model.actor, OBS, tanh=True)
    second = run(model)
    assert second[3] == 1.0
    assert second[1] == pytest.approx(-np.mean(forward(model.critics[0],
                                                       np.concatenate([OBS, mu], 1))), rel=1e-5)
    third, fourth = run(model), run(model)  # the 4th step is due again, the 3rd is not
    assert np.isnan(third[1]) and third[3] == 0.0
    assert fourth[3] == 1.0 and fourth[1] == pytest.approx(second[1], rel=1e-5)


@pytest.mark.parametrize("max_norm", [None, 0.01])
def test_a_plain_sgd_step_is_clipped_to_max_grad_norm(max_norm):
    """SGD in place of Adam (whose first step ignores the gradient's scale): the actor's and
    the critic's steps have a global norm of lr * max_grad_norm when clipped, more when not."""
    model = make_model(max_grad_norm=max_norm)
    seeded(model, 3)
    model.actor_optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)
    model.critic_optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)
    actor, critic = model.actor.trainable_variables, model.critic_variables
    before = [[v.numpy().copy() for v in vs] for vs in (actor, critic)]
    run(model, 0.1, 0.1)
    for vs, old in zip((actor, critic), before):
        norm = np.sqrt(sum(np.sum((v.numpy() - o) ** 2) for v, o in zip(vs, old)))
        if max_norm is None:
            assert norm > 0.1 * 0.02
        else:
            assert norm == pytest.approx(0.1 * max_norm, rel=1e-4)


def test_parameter_noise_perturbs_each_weight_with_its_own_stream():
    model = make_model(noise_type="adaptive-param_0.2")
    seeded(model, 4)
    seed = np.array([5, 9], np.int64)
    model.perturb_fn(np.float32(0.3), seed)
    for k, (src, dst) in enumerate(zip(model.actor.weights, model.perturbed_actor.weights)):
        noise = tf.random.stateless_normal(src.shape, seed=seed + [0, k]).numpy()
        np.testing.assert_allclose(dst.numpy(), src.numpy() + 0.3 * noise, rtol=1e-5,
                                   atol=1e-6)
    zero, one = np.zeros(2, np.float32), np.ones(2, np.float32)
    got = float(model.distance_fn(OBS, zero, one, np.float32(0.3), seed))
    perturbed = forward(model.perturbed_actor, OBS, tanh=True)  # the same draw again
    want = np.sqrt(np.mean((forward(model.actor, OBS, tanh=True) - perturbed) ** 2))
    assert got == pytest.approx(want, rel=1e-5)


def test_synced_variables_are_the_actors_then_the_critics():
    model = make_model(twin_q=True)
    got = [id(v) for v in model.synced_variables]
    want = [id(v) for v in model.actor.trainable_variables + model.critic_variables]
    assert got == want and len(want) == 12


def test_smoothed_target_actions_are_clipped_to_minus_one_one():
    """Target actions tanh(-0.9) = -0.716 plus noise clipped to +-0.4: -1.116 clipped to -1,
    -0.816 and -0.316 kept."""
    model = make_model(target_noise=0.2, target_noise_clip=0.4)
    seeded(model, 5)
    for v in model.target_actor.weights:
        v.assign(tf.zeros_like(v))
    model.target_actor.out.bias.assign([-0.9])
    noise = np.array([[-0.5], [-0.1], [0.4], [3.0]], np.float32)
    base = np.tanh(-0.9)
    actions = np.clip(base + np.clip(noise, -0.4, 0.4), -1.0, 1.0)
    assert actions[0, 0] == -1.0 and -1.0 < actions[1, 0] < 0.0
    q = forward(model.target_critics[0], np.concatenate([NEXT, actions], 1))
    got = model.critic_targets(REW, NEXT, DONE, noise).numpy()
    np.testing.assert_allclose(got, REW + 0.9 * (1.0 - DONE) * q, rtol=1e-5)


def test_a_call_of_several_steps_logs_its_steps_means_and_the_first_critics_q():
    """Four gradient steps in one call at learning rates 0, twin critics, policy delay 2,
    smoothing noise that differs per step: each step's critic loss by numpy (its own noise,
    clipped to 0.5, in the target actions), the logged one their mean; Q's mean the same at
    every step; the actor steps at updates 2 and 4, its logged loss their mean. The targets
    start equal to the online nets, so the soft updates leave them put. The call's acting
    outputs: the actor's action and critic 0's Q of it."""
    model = make_model(twin_q=True, policy_delay=2, target_noise=0.2, target_noise_clip=0.5)
    seeded(model, 6)
    for online, target in model.target_pairs():
        target.assign(online)
    noise = np.random.default_rng(7).normal(0.0, 0.6, (4, 4, 1)).astype(np.float32)
    outs = [forward(c, np.concatenate([OBS, ACT], 1)) for c in model.critics]
    losses = []
    for k in range(4):
        next_a = np.clip(forward(model.target_actor, NEXT, tanh=True)
                         + np.clip(noise[k], -0.5, 0.5), -1.0, 1.0)
        qs = [forward(t, np.concatenate([NEXT, next_a], 1)) for t in model.target_critics]
        targets = REW + 0.9 * (1.0 - DONE) * np.min(qs, axis=0)
        losses.append(sum(np.mean((q - targets) ** 2) for q in outs))
    assert np.ptp(losses) > 1e-3  # the noise changes the targets
    mu = forward(model.actor, OBS, tanh=True)
    actor_loss = -np.mean(forward(model.critics[0], np.concatenate([OBS, mu], 1)))
    batch = [np.stack([x] * 4) for x in (OBS, ACT, REW, NEXT, DONE)]
    zero, one = np.zeros(2, np.float32), np.ones(2, np.float32)
    stats, clean, explore, q = model.train_fn_for(4)(*batch, noise, OBS[:2], zero, one,
                                                     np.float32(0.0), np.float32(0.0))
    np.testing.assert_allclose(stats.numpy(), [np.mean(losses), actor_loss, np.mean(outs[0]),
                                               2.0], rtol=1e-5)
    np.testing.assert_allclose(clean.numpy(), mu[:2], rtol=1e-5)
    np.testing.assert_allclose(explore.numpy(), mu[:2], rtol=1e-5)
    q0 = forward(model.critics[0], np.concatenate([OBS[:2], mu[:2]], 1))
    q1 = forward(model.critics[1], np.concatenate([OBS[:2], mu[:2]], 1))
    assert np.all(np.abs(q0 - q1) > 1e-3)
    np.testing.assert_allclose(np.ravel(q.numpy()), q0, rtol=1e-5)
