"""tf_util and misc_util against hand-computed numbers."""

import math
import random
from collections import deque

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from rlbase.common import misc_util, tf_util
from rlbase.common.errors import RLBaseError
from rlbase.common.tf_util import (
    Adam,
    RMSprop,
    assign_from_arrays,
    clip_by_global_norm,
    compile_fn,
    discounted_returns,
    explained_variance,
    gae_advantages,
    variables_to_arrays,
)

# --------------------------------------------------------------------------- discounted returns

REWARDS = [[1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 0.0, 1.0]]
DONES = [[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
LAST_VALUES = [10.0, 5.0]
GAMMA = 0.9
# env 0: t3 = 4 + .9*10 = 13; t2 = 3 + .9*13 = 14.7; t1 = 2 (done); t0 = 1 + .9*2 = 2.8
# env 1: t3 = 1 (done: 5 is not used); t2 = .9; t1 = 1 + .81 = 1.81; t0 = .9*1.81 = 1.629
EXPECTED_RETURNS = [[2.8, 2.0, 14.7, 13.0], [1.629, 1.81, 0.9, 1.0]]


def _f32(x):
    return tf.constant(np.asarray(x, np.float32))


def test_discounted_returns_hand_computed():
    out = discounted_returns(_f32(REWARDS), _f32(DONES), _f32(LAST_VALUES), GAMMA).numpy()
    assert out.shape == (2, 4)
    np.testing.assert_allclose(out, EXPECTED_RETURNS, rtol=1e-6)


def test_discounted_returns_matches_discount_with_dones():
    out = discounted_returns(_f32(REWARDS), _f32(DONES), _f32(LAST_VALUES), GAMMA).numpy()
    for env in range(2):
        rewards, dones, value = REWARDS[env], DONES[env], LAST_VALUES[env]
        if dones[-1] == 0:  # the a2c way: bootstrap by appending the value as a last reward
            ref = misc_util.discount_with_dones(rewards + [value], dones + [0], GAMMA)[:-1]
        else:
            ref = misc_util.discount_with_dones(rewards, dones, GAMMA)
        np.testing.assert_allclose(out[env], ref, rtol=1e-6)
        np.testing.assert_allclose(ref, EXPECTED_RETURNS[env], rtol=1e-12)


def _returns(rewards, dones, last_values):
    return discounted_returns(rewards, dones, last_values, GAMMA)


def test_discounted_returns_in_compiled_call():
    fn = compile_fn(_returns, [tf.TensorSpec([None, 4], tf.float32)] * 2
                    + [tf.TensorSpec([None], tf.float32)])
    out = fn(np.asarray(REWARDS, np.float32), np.asarray(DONES, np.float32),
             np.asarray(LAST_VALUES, np.float32))
    np.testing.assert_allclose(out.numpy(), EXPECTED_RETURNS, rtol=1e-6)


def test_discount_with_dones_gamma_one_and_zero():
    np.testing.assert_allclose(misc_util.discount_with_dones([1, 1, 1], [0, 0, 0], 1.0),
                               [3, 2, 1])
    np.testing.assert_allclose(misc_util.discount_with_dones([1, 2, 3], [0, 0, 1], 0.0),
                               [1, 2, 3])
    np.testing.assert_allclose(misc_util.discount_with_dones([1, 1, 1], [1, 0, 0], 0.5),
                               [1, 1.5, 1])


# --------------------------------------------------------------------------- GAE

# env 0 terminates at t1; env 1 is truncated at t2, its reward 4.6 = 1 + 0.9 * V(final obs) 4
# already holding the bootstrap (the rollout folds it in), so both ends stop the recursion.
GAE_REWARDS = [[1.0, 2.0, 0.0, 1.0], [0.0, 1.0, 4.6, 2.0]]
GAE_VALUES = [[0.5, 1.0, 2.0, -1.0], [1.0, 2.0, 3.0, 0.5]]
GAE_DONES = [[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]
GAE_LAST = [3.0, -2.0]
# deltas r + 0.9 * (1 - done) * V(next) - V:
#   env 0: t3 = 1 + 2.7 + 1 = 4.7, t2 = -0.9 - 2 = -2.9, t1 = 2 - 1 = 1 (done), t0 = 1 + 0.9 - 0.5
#   env 1: t3 = 2 - 1.8 - 0.5 = -0.3, t2 = 4.6 - 3 = 1.6 (done), t1 = 1 + 2.7 - 2, t0 = 1.8 - 1
GAE_DELTAS = [[1.4, 1.0, -2.9, 4.7], [0.8, 1.7, 1.6, -0.3]]
# A[t] = delta[t] + 0.9 * 0.8 * (1 - done[t]) * A[t + 1]:
#   env 0: A2 = -2.9 + 0.72 * 4.7 = 0.484, A0 = 1.4 + 0.72 * 1 = 2.12
#   env 1: A1 = 1.7 + 0.72 * 1.6 = 2.852, A0 = 0.8 + 0.72 * 2.852 = 2.85344
GAE_EXPECTED = [[2.12, 1.0, 0.484, 4.7], [2.85344, 2.852, 1.6, -0.3]]


def _gae(lam, gamma=0.9):
    return gae_advantages(_f32(GAE_REWARDS), _f32(GAE_VALUES), _f32(GAE_DONES),
                          _f32(GAE_LAST), gamma, lam).numpy()


def test_gae_with_a_termination_and_a_truncation_by_hand():
    out = _gae(0.8)
    assert out.shape == (2, 4)
    np.testing.assert_allclose(out, GAE_EXPECTED, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_gae(0.0), GAE_DELTAS, rtol=1e-6, atol=1e-6)  # lam 0: deltas


def test_gae_with_lambda_one_is_the_returns_minus_the_values():
    # returns: env 0 t3 = 1 + 2.7 = 3.7, t2 = 0.9 * 3.7 = 3.33, t1 = 2, t0 = 1 + 1.8 = 2.8
    #          env 1 t3 = 2 - 1.8 = 0.2, t2 = 4.6, t1 = 1 + 4.14 = 5.14, t0 = 4.626
    returns = [[2.8, 2.0, 3.33, 3.7], [4.626, 5.14, 4.6, 0.2]]
    np.testing.assert_allclose(_gae(1.0), np.subtract(returns, GAE_VALUES), rtol=1e-6,
                               atol=1e-6)
    np.testing.assert_allclose(
        discounted_returns(_f32(GAE_REWARDS), _f32(GAE_DONES), _f32(GAE_LAST), 0.9).numpy(),
        returns, rtol=1e-6)


# --------------------------------------------------------------------------- thread plans


def _plan_settings(monkeypatch, plan, gpus=(), override=None):
    """(intra, inter) that configure_threads(plan) asks TF for, or None when it leaves TF's
    pools alone (recorded in this process: its pools have started, so no setting could show)."""
    calls = {}
    monkeypatch.setattr(tf.config.threading, "set_intra_op_parallelism_threads",
                        lambda n: calls.__setitem__("intra", n))
    monkeypatch.setattr(tf.config.threading, "set_inter_op_parallelism_threads",
                        lambda n: calls.__setitem__("inter", n))
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: list(gpus))
    monkeypatch.setattr(tf_util, "available_cores", lambda: 6)
    if override is None:
        monkeypatch.delenv("RLBASE_TF_THREADS", raising=False)
    else:
        monkeypatch.setenv("RLBASE_TF_THREADS", override)
    tf_util.configure_threads(plan)
    return (calls["intra"], calls["inter"]) if calls else None


def test_thread_plans_ask_tf_for_these_pools(monkeypatch):
    assert _plan_settings(monkeypatch, "small") == (1, 1)
    assert _plan_settings(monkeypatch, "convnet") == (1, 6)  # one op per core
    assert _plan_settings(monkeypatch, "convnet", gpus=["GPU:0"]) is None  # TF's own pools
    assert _plan_settings(monkeypatch, "large") is None
    assert _plan_settings(monkeypatch, "large", override="3") == (3, 3)
    assert _plan_settings(monkeypatch, "small", override="") == (1, 1)  # empty: no override


def test_plans_named_by_strings_built_at_run_time(monkeypatch):
    # a plan read from a config file is an equal string, not the same object as the literal
    assert _plan_settings(monkeypatch, "".join(["sm", "all"])) == (1, 1)
    assert _plan_settings(monkeypatch, "".join(["conv", "net"])) == (1, 6)


def test_a_plan_after_tf_started_its_pools_keeps_them(monkeypatch):
    def started(n):
        raise RuntimeError("Intra op parallelism cannot be modified after initialization.")

    monkeypatch.setattr(tf.config.threading, "set_intra_op_parallelism_threads", started)
    monkeypatch.delenv("RLBASE_TF_THREADS", raising=False)
    tf_util.configure_threads("small")  # no error: the pools TF runs stay


def test_available_cores_are_this_process_affinity(monkeypatch):
    # pid 0 is this process; another pid (1: init) may run on other cores
    monkeypatch.setattr(tf_util.os, "sched_getaffinity", lambda pid: {0, 5, 7} if pid == 0 else {0})
    assert tf_util.available_cores() == 3


def test_available_cores_without_affinity_is_the_cpu_count_or_one(monkeypatch):
    monkeypatch.delattr(tf_util.os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(tf_util.os, "cpu_count", lambda: 5)
    assert tf_util.available_cores() == 5
    monkeypatch.setattr(tf_util.os, "cpu_count", lambda: None)  # unknown: assume one
    assert tf_util.available_cores() == 1


@pytest.mark.parametrize("intra, inter, blocks", [(1, 3, 3), (1, 2, 2), (0, 3, 1), (2, 3, 1),
                                                   (1, 1, 1), (1, 0, 1)])
def test_batch_blocks_are_the_ops_at_once_when_each_runs_on_one_thread(monkeypatch, intra,
                                                                        inter, blocks):
    monkeypatch.setattr(tf.config.threading, "get_intra_op_parallelism_threads", lambda: intra)
    monkeypatch.setattr(tf.config.threading, "get_inter_op_parallelism_threads", lambda: inter)
    assert tf_util.batch_blocks() == blocks


def _rows_seen(n, blocks):
    # each output row is the number of rows fn was called with: the blocks show
    calls = []

    def fn(u):
        calls.append(int(tf.shape(u)[0]))
        return tf.fill([tf.shape(u)[0], 1], tf.shape(u)[0])

    out = tf_util.split_rows(fn, tf.zeros([n, 2]), blocks).numpy()
    assert out.shape == (n, 1)  # the blocks' rows one after the other
    assert 0 not in calls  # an empty block is never computed
    return out[:, 0]


def test_split_rows_blocks_by_hand():
    np.testing.assert_array_equal(_rows_seen(2, 2), [1, 1])  # as many rows as blocks: split
    np.testing.assert_array_equal(_rows_seen(7, 2), [3, 3, 3, 4, 4, 4, 4])  # bounds 0, 3, 7
    np.testing.assert_array_equal(_rows_seen(7, 3), [2, 2, 2, 2, 3, 3, 3])  # 0, 2, 4, 7
    np.testing.assert_array_equal(_rows_seen(1, 2), [1])  # fewer rows than blocks: whole
    np.testing.assert_array_equal(_rows_seen(5, 0), [5] * 5)  # 0 or 1 block: whole
    np.testing.assert_array_equal(_rows_seen(5, 1), [5] * 5)


# --------------------------------------------------------------------------- fused Adam


def test_adam_first_step_by_hand():
    # step 1: m = .1 g, v = .001 g^2, lr_t = lr sqrt(1 - .999) / (1 - .9),
    # x -= lr_t m / (sqrt(v) + eps)
    var = keras.Variable(1.0)
    Adam(learning_rate=0.1, epsilon=1e-5).apply_gradients([(tf.constant(2.0), var)])
    lr_t = 0.1 * math.sqrt(1 - 0.999) / (1 - 0.9)
    assert float(var.numpy()) == pytest.approx(1.0 - lr_t * 0.2 / (math.sqrt(0.004) + 1e-5),
                                               rel=1e-6)


def test_adam_with_amsgrad_is_kerass():
    grads = [4.0, 0.1, 0.1, 0.1]  # shrinking gradients: amsgrad keeps the largest v
    mine, kerass = keras.Variable(1.0), keras.Variable(1.0)
    ours = Adam(0.1, beta_2=0.5, amsgrad=True)
    theirs = keras.optimizers.Adam(0.1, beta_2=0.5, amsgrad=True)
    for g in grads:
        ours.apply_gradients([(tf.constant(g), mine)])
        theirs.apply_gradients([(tf.constant(g), kerass)])
    plain = keras.Variable(1.0)
    fused = Adam(0.1, beta_2=0.5)
    for g in grads:
        fused.apply_gradients([(tf.constant(g), plain)])
    assert float(mine.numpy()) == pytest.approx(float(kerass.numpy()), rel=1e-6)
    assert abs(float(mine.numpy()) - float(plain.numpy())) > 1e-3  # amsgrad changed the steps


@pytest.mark.parametrize("jit", [False, True])
def test_adam_matches_keras_adam_over_several_steps(jit):
    """The fused kernel takes Keras' steps: weights and both moments agree after 4 steps."""
    rng = np.random.default_rng(0)
    start = [rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=3).astype(np.float32)]
    grads = [[rng.normal(size=w.shape).astype(np.float32) for w in start] for _ in range(4)]

    def train(optimizer_class, compiled):
        variables = [keras.Variable(w) for w in start]
        optimizer = optimizer_class(learning_rate=0.01, epsilon=1e-5)
        optimizer.build(variables)
        step = tf.function(lambda g: optimizer.apply_gradients(zip(g, variables)),
                           jit_compile=compiled)
        for g in grads:
            step([tf.constant(x) for x in g])
        return [v.numpy() for v in variables + list(optimizer.variables)]

    reference = train(keras.optimizers.Adam, False)
    fused = train(Adam, jit)
    assert not np.allclose(reference[0], start[0])  # it trained
    for a, b in zip(reference, fused):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- RMSprop

LR, RHO, EPS, GRAD = 0.1, 0.9, 0.1, 2.0


def _rmsprop_reference(acc0, inside, steps):
    """x starts at 1.0 and always sees gradient 2.0."""
    x, ms, out = 1.0, acc0, []
    for _ in range(steps):
        ms = RHO * ms + (1 - RHO) * GRAD**2
        denom = math.sqrt(ms + EPS) if inside else math.sqrt(ms) + EPS
        x -= LR * GRAD / denom
        out.append(x)
    return out


# the first two entries written out by hand:
#   acc 0, inside:  ms = .4, x = 1 - .2/sqrt(.5) ; ms = .76, x -= .2/sqrt(.86)
#   acc 1, outside: ms = 1.3, x = 1 - .2/(sqrt(1.3)+.1)
HAND = {
    (0.0, True): [0.717157288, 0.501491752],
    (1.0, False): [0.838732498, None],
}


@pytest.mark.parametrize("acc0", [0.0, 1.0])
@pytest.mark.parametrize("inside", [True, False])
def test_rmsprop_two_steps(acc0, inside):
    var = keras.Variable(1.0)
    opt = RMSprop(learning_rate=LR, rho=RHO, epsilon=EPS, initial_accumulator=acc0,
                  epsilon_inside_sqrt=inside)
    expected = _rmsprop_reference(acc0, inside, 2)
    for step in range(2):
        opt.apply_gradients([(tf.constant(GRAD), var)])
        assert float(var.numpy()) == pytest.approx(expected[step], rel=1e-6)
        hand = HAND.get((acc0, inside), [None, None])[step]
        if hand is not None:
            assert float(var.numpy()) == pytest.approx(hand, rel=1e-6)


def test_rmsprop_defaults():
    # Baselines' A2C's rate, decay and epsilon; the mean square starting at 0 like Keras'
    opt = RMSprop()
    assert float(opt.learning_rate) == pytest.approx(7e-4) and opt.rho == 0.99
    assert opt.epsilon == 1e-5 and opt.initial_accumulator == 0.0 and opt.epsilon_inside_sqrt


def test_rmsprop_placements_and_accumulators_differ():
    # the four settings must not collapse onto each other
    finals = {(a, i): _rmsprop_reference(a, i, 1)[0] for a in (0.0, 1.0) for i in (True, False)}
    assert len({round(v, 6) for v in finals.values()}) == 4
    for (acc0, inside), final in finals.items():
        var = keras.Variable(1.0)
        RMSprop(LR, RHO, EPS, initial_accumulator=acc0, epsilon_inside_sqrt=inside
                ).apply_gradients([(tf.constant(GRAD), var)])
        assert float(var.numpy()) == pytest.approx(final, rel=1e-6)


def test_rmsprop_in_tf_function():
    var = keras.Variable([1.0, -1.0])
    opt = RMSprop(LR, RHO, EPS, initial_accumulator=1.0, epsilon_inside_sqrt=False)
    opt.build([var])

    @tf.function
    def update(g):
        opt.apply_gradients([(g, var)])

    update(tf.constant([GRAD, GRAD]))
    update(tf.constant([GRAD, GRAD]))
    expected = _rmsprop_reference(1.0, False, 2)[1]
    np.testing.assert_allclose(var.numpy(), [expected, expected - 2.0], rtol=1e-6)


def _rmsprop_numpy(x, grads, acc0, inside):
    ms = np.full_like(x, acc0)
    for g in grads:
        ms = RHO * ms + (1 - RHO) * g * g
        x = x - LR * g / (np.sqrt(ms + EPS) if inside else np.sqrt(ms) + EPS)
    return x, ms


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("acc0, inside", [(0.0, False), (1.0, True), (0.0, True)])
def test_rmsprop_fused_kernels_follow_the_formula_over_many_steps(acc0, inside, jit):
    # Gradients jumping over six orders of magnitude: Adam's first-moment slot rounds
    # m + (g - m) away from g unless it starts every step from 0.
    rng = np.random.default_rng(0)
    scales = 10.0 ** rng.integers(-6, 1, size=(12, 1))
    grads = (rng.standard_normal((12, 5)) * scales).astype(np.float32)
    x0 = rng.standard_normal(5).astype(np.float32)
    var = tf.Variable(x0)
    opt = RMSprop(LR, RHO, EPS, initial_accumulator=acc0, epsilon_inside_sqrt=inside)
    opt.build([var])
    update = tf.function(lambda g: opt.apply_gradients([(g, var)]), jit_compile=jit)
    for g in grads:
        update(tf.constant(g))
    x, ms = _rmsprop_numpy(x0.astype(np.float64), grads.astype(np.float64), acc0, inside)
    np.testing.assert_allclose(var.numpy(), x, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(opt.variables[-1].numpy(), ms, rtol=1e-5, atol=1e-12)


def test_rmsprop_saves_only_kerass_slots():
    var = tf.Variable(np.ones(3, np.float32))
    ours, kerass = RMSprop(LR, RHO, EPS), keras.optimizers.RMSprop(LR, RHO, epsilon=EPS)
    ours.build([var])
    kerass.build([var])
    assert [v.shape for v in ours.variables] == [v.shape for v in kerass.variables]


@pytest.mark.parametrize("options", [dict(momentum=0.9), dict(centered=True)])
def test_rmsprop_with_momentum_or_centered_is_kerass(options):
    a, b = tf.Variable([1.0, -2.0]), tf.Variable([1.0, -2.0])
    ours = RMSprop(LR, RHO, EPS, **options)
    kerass = keras.optimizers.RMSprop(LR, RHO, epsilon=EPS, **options)
    for g in ([0.5, 2.0], [1e-4, -3.0], [2.0, 0.1]):
        ours.apply_gradients([(tf.constant(g), a)])
        kerass.apply_gradients([(tf.constant(g), b)])
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


# --------------------------------------------------------------------------- clipping


def test_clip_by_global_norm_scales_to_max():
    grads = [tf.constant([3.0, 4.0]), tf.constant([[12.0]])]  # global norm 13
    clipped, norm = clip_by_global_norm(grads, 6.5)
    assert float(norm) == pytest.approx(13.0)
    np.testing.assert_allclose(clipped[0].numpy(), [1.5, 2.0], rtol=1e-6)
    np.testing.assert_allclose(clipped[1].numpy(), [[6.0]], rtol=1e-6)
    assert float(tf.linalg.global_norm(clipped)) == pytest.approx(6.5, rel=1e-6)


def test_clip_by_global_norm_leaves_small_or_unclipped():
    grads = [tf.constant([3.0, 4.0])]
    for max_norm in (None, 10.0):
        out, norm = clip_by_global_norm(grads, max_norm)
        assert float(norm) == pytest.approx(5.0)
        np.testing.assert_allclose(out[0].numpy(), [3.0, 4.0])


# --------------------------------------------------------------------------- workers


def test_average_over_workers_without_mpi_is_the_gradients_themselves():
    grads = [tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([5.0, 6.0, 7.0])]
    out = tf_util.average_over_workers(grads, None)
    assert out is grads


def test_average_over_workers_averages_each_entry_and_keeps_the_shapes(monkeypatch):
    # a second worker whose gradients are all 10: the Allreduce mean is (x + 10) / 2
    seen = []

    def two_workers(flat, comm):
        seen.append(flat.copy())
        return ((flat + comm) / 2.0).astype(np.float32)

    monkeypatch.setattr(tf_util, "allreduce_mean_f32", two_workers)
    grads = [tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([5.0, 6.0, 7.0])]
    out = tf_util.average_over_workers(grads, np.float32(10.0))
    np.testing.assert_array_equal(seen[0], [1, 2, 3, 4, 5, 6, 7])  # one flat Allreduce
    np.testing.assert_array_equal(out[0].numpy(), [[5.5, 6.0], [6.5, 7.0]])
    np.testing.assert_array_equal(out[1].numpy(), [7.5, 8.0, 8.5])


# --------------------------------------------------------------------------- compiled functions


def affine(x):
    return x * 2.0 + 1.0


def small_net(x, w):
    h = tf.tanh(tf.matmul(x, w))
    return tf.reduce_sum(h * h, axis=1), tf.reduce_max(h, axis=1)


def test_compile_fn_traces_once():
    fn = compile_fn(affine, [tf.TensorSpec([None, 3], tf.float32)])
    assert fn.function.experimental_get_tracing_count() == 1
    for i in range(5):
        x = np.full((2, 3), float(i), np.float32)
        np.testing.assert_allclose(fn(x).numpy(), 2.0 * i + 1.0)
    fn(np.zeros((7, 3), np.float32))  # another batch size fits the [None, 3] signature
    fn(tf.zeros([2, 3]))  # a tensor goes through as is
    fn([[1, 2, 3]])  # a list is converted to the signature's dtype
    assert fn.function.experimental_get_tracing_count() == 1


def test_compile_fn_rejects_wrong_shape():
    fn = compile_fn(affine, [tf.TensorSpec([None, 3], tf.float32)])
    with pytest.raises((ValueError, TypeError, tf.errors.InvalidArgumentError)):
        fn(np.zeros((2, 4), np.float32))
    assert fn.function.experimental_get_tracing_count() == 1


def test_compile_fn_jit_matches_plain():
    sig = [tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([3, 2], tf.float32)]
    x = np.array([[0.1, -0.2, 0.3], [1.0, 0.5, -0.5]], np.float32)
    w = np.array([[0.2, -0.1], [0.4, 0.3], [-0.6, 0.7]], np.float32)
    plain = compile_fn(small_net, sig, jit_compile=False)(x, w)
    jit = compile_fn(small_net, sig, jit_compile=True)(x, w)
    h = np.tanh(x.astype(np.float64) @ w.astype(np.float64))
    for a, b, ref in zip(plain, jit, ((h * h).sum(axis=1), h.max(axis=1))):
        np.testing.assert_allclose(a.numpy(), ref, rtol=1e-5)
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("error", [ValueError, TypeError])
def test_compile_fn_falls_back_to_tf_conversion_where_the_fast_path_refuses(monkeypatch, error):
    def refuse(*args):
        raise error("no fast path")

    monkeypatch.setattr(tf_util, "_EagerTensor", refuse)
    fn = compile_fn(affine, [tf.TensorSpec([None, 3], tf.float32)])
    np.testing.assert_array_equal(fn(np.ones((2, 3), np.float32)).numpy(), np.full((2, 3), 3.0))


def test_observation_specs_keep_each_leafs_shape_after_the_leading_axes():
    box = gym.spaces.Box(-1.0, 1.0, (2, 3), np.float32)
    assert tf_util.observation_spec(box, [None]) == tf.TensorSpec([None, 2, 3], tf.float32)
    space = gym.spaces.Dict({"x": box, "k": gym.spaces.Discrete(4)})
    spec = tf_util.observation_spec(space, [5, None])
    assert spec["x"] == tf.TensorSpec([5, None, 2, 3], tf.float32)
    assert spec["k"] == tf.TensorSpec([5, None], tf.int64)


def test_spec_like_takes_numpy_dtypes():
    assert tf_util.spec_like([3, None], np.int8) == tf.TensorSpec([3, None], tf.int8)


def _doubled_in_numpy(x):
    return tf.numpy_function(lambda a: a * 2.0, [x], tf.float32)  # no XLA kernel


def test_compiled_calls_are_not_xla_unless_asked():
    sig = [tf.TensorSpec([2], tf.float32)]
    for fn in (compile_fn(_doubled_in_numpy, sig),
               tf_util.CompiledFunction(_doubled_in_numpy, sig)):
        np.testing.assert_array_equal(fn(np.ones(2, np.float32)).numpy(), [2.0, 2.0])


def test_compiled_calls_do_not_convert_python_conditions():
    # no AutoGraph: a Python `if` on a tensor is an error at tracing, not a converted tf.cond
    with pytest.raises(TypeError):
        compile_fn(lambda x: x if x > 0 else -x, [tf.TensorSpec([], tf.float32)])


def test_tf_explained_variance():
    y = _f32([1.0, 2.0, 3.0, 4.0])
    assert float(explained_variance(_f32([1.0, 2.0, 3.0, 3.0]), y)) == pytest.approx(0.85)
    assert float(explained_variance(y, y)) == pytest.approx(1.0)
    # predicting 0.5 everywhere: Var[y - 0.5] = Var[y] -> 0
    assert float(explained_variance(_f32([0.5] * 4), y)) == pytest.approx(0.0, abs=1e-6)
    # Var[y] = 0.0625 < 1 is still a variance: Var[y - ypred] = Var[0, 0.5] = 0.0625 too -> 0
    assert float(explained_variance(_f32([0.0, 0.0]), _f32([0.0, 0.5]))) == pytest.approx(0.0)
    const = _f32([2.0, 2.0, 2.0, 2.0])
    assert math.isnan(float(explained_variance(y, const)))  # constant y: nan, not -inf
    assert math.isnan(float(explained_variance(const, const)))


# --------------------------------------------------------------------------- variable arrays


def _variables():
    return [tf.Variable(np.arange(2, dtype=np.float32)),
            tf.Variable(np.ones((3, 3), np.float32)),
            tf.Variable(np.float32(5.0))]


def test_variables_round_trip():
    src, dst = _variables(), _variables()
    for v in src:
        v.assign(v + 10.0)
    arrays = variables_to_arrays(src, "policy")
    assert sorted(arrays) == ["policy/0000", "policy/0001", "policy/0002"]
    arrays["other/0000"] = np.zeros(4)  # another prefix is ignored
    assign_from_arrays(dst, arrays, "policy")
    for s, d in zip(src, dst):
        np.testing.assert_array_equal(d.numpy(), s.numpy())


def _assert_untouched(variables):
    np.testing.assert_array_equal(variables[0].numpy(), [0.0, 1.0])
    np.testing.assert_array_equal(variables[1].numpy(), np.ones((3, 3)))
    assert float(variables[2].numpy()) == 5.0


def test_assign_wrong_shape_leaves_variables_unchanged():
    dst = _variables()
    arrays = {"policy/0000": np.full(2, 7.0, np.float32),  # fits, would be assigned first
              "policy/0001": np.zeros((3, 4), np.float32),  # wrong shape
              "policy/0002": np.float32(9.0)}
    with pytest.raises(RLBaseError) as info:
        assign_from_arrays(dst, arrays, "policy", path="model.zip")
    assert "policy/0001" in str(info.value) and "model.zip" in str(info.value)
    assert "(3, 3)" in str(info.value)
    _assert_untouched(dst)


def test_assign_wrong_count_leaves_variables_unchanged():
    dst = _variables()
    arrays = {"policy/0000": np.full(2, 7.0, np.float32),
              "policy/0001": np.zeros((3, 3), np.float32)}
    with pytest.raises(RLBaseError, match="another network"):
        assign_from_arrays(dst, arrays, "policy")
    _assert_untouched(dst)


# --------------------------------------------------------------------------- misc_util


def test_explained_variance_numpy():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    # Var[y - ypred] = Var[0,0,0,1] = 0.1875, Var[y] = 1.25 -> 1 - 0.15
    assert misc_util.explained_variance(np.array([1.0, 2.0, 3.0, 3.0]), y) == pytest.approx(0.85)
    assert misc_util.explained_variance(y, y) == 1.0
    assert misc_util.explained_variance(np.full(4, 2.5), y) == pytest.approx(0.0)
    # predicting -y: Var[2y] = 4 Var[y] -> -3
    assert misc_util.explained_variance(-y, y) == pytest.approx(-3.0)
    assert math.isnan(misc_util.explained_variance(y, np.full(4, 3.0)))
    assert isinstance(misc_util.explained_variance(y, y), float)


def test_safemean():
    assert math.isnan(misc_util.safemean([]))
    assert math.isnan(misc_util.safemean(deque(maxlen=10)))
    assert misc_util.safemean([1, 2, 3, 6]) == 3.0
    assert misc_util.safemean(x for x in (2.0, 4.0)) == 3.0
    assert isinstance(misc_util.safemean(deque([1, 2], maxlen=5)), float)


def _draws():
    return (random.random(), float(np.random.rand()), float(tf.random.uniform([])))


def test_set_global_seeds_repeats_draws():
    misc_util.set_global_seeds(123)
    first = _draws()
    misc_util.set_global_seeds(123)
    assert _draws() == first
    misc_util.set_global_seeds(124)
    assert _draws() != first
    misc_util.set_global_seeds(None)  # allowed: leaves generators as they are


def test_env_seed():
    assert misc_util.env_seed(None, 3) is None
    assert misc_util.env_seed(5, 0) == 5
    assert misc_util.env_seed(5, 2) == 7
    seeds = {misc_util.env_seed(5, i, r) for i in range(16) for r in range(4)}
    assert len(seeds) == 64
