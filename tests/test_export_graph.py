"""The export's post-processing (rlbase/common/export/graph.py) around a policy graph written
by hand: input names, the baked-in observation statistics, the casts to the network's dtypes,
the recurrent and action-mask inputs, the sample signature's seed, Box clipping and the
frozen module, each checked on numbers worked out by hand. No model is trained and no file is
written (a few seconds in all; tests/test_export.py checks whole exports against predict)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import tensorflow as tf

from rlbase.common.export.graph import DETERMINISTIC, STOCHASTIC, ExportedPolicy, input_names
from rlbase.common.export.graph import _normalizers as normalizers
from rlbase.common.networks.policy_graph import PolicyGraph
from rlbase.common.vec_env.vec_normalize import NormalizationStats

BOX2 = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)


class HandModel:
    """What the exporter reads of a model, around a hand-written policy graph."""

    algorithm, network, num_timesteps = "hand", "mlp", 0

    def __init__(self, observation_space, action_space, graph, normalization=None):
        self.observation_space, self.action_space = observation_space, action_space
        self.graph, self.normalization = graph, normalization

    def policy_graph(self):
        return self.graph

    def save(self, path):
        raise AssertionError("not used")


def stats_for(space, means, variances, clipob=1.5):
    """Observation statistics with these means and variances (None: a leaf without)."""
    stats = NormalizationStats(space, ret=False, clipob=clipob)
    for rms, mean, var in zip(stats.leaf_rms, means, variances):
        if rms is not None:
            rms.mean, rms.var = np.array(mean, np.float64), np.array(var, np.float64)
    return stats


# -- names and statistics --------------------------------------------------------------------
def test_input_names_per_leaf_with_unusable_characters_replaced():
    space = gym.spaces.Dict({"x-y": BOX2, "z": gym.spaces.Tuple((gym.spaces.Discrete(2),
                                                                 BOX2))})
    assert input_names(BOX2) == ["obs"]
    assert input_names(space) == ["obs_x_y", "obs_z_0", "obs_z_1"]


def test_normalizers_take_each_leafs_statistics_and_skip_the_others():
    """Dict(a: Box, b: Discrete, c: Box): std = sqrt(var + epsilon) as float32, the clip a
    float; none without statistics, with norm_obs off, or beyond the leaves counted."""
    space = gym.spaces.Dict({"a": BOX2, "b": gym.spaces.Discrete(3), "c": BOX2})
    stats = stats_for(space, [[1.0, -1.0], None, [0.5, 0.0]], [[4.0, 0.25], None, [1.0, 9.0]])
    stats.epsilon = 0.25
    out = normalizers(stats, 3)
    assert sorted(out) == [0, 2]
    mean, std, clip = out[2]
    np.testing.assert_array_equal(mean.numpy(), [0.5, 0.0])
    np.testing.assert_array_equal(std.numpy(), np.sqrt([1.25, 9.25]).astype(np.float32))
    assert std.dtype == tf.float32 and clip == 1.5 and isinstance(clip, float)
    assert sorted(normalizers(stats, 2)) == [0]
    assert normalizers(None, 3) == {}
    assert normalizers(NormalizationStats(None), 1) == {}
    stats.norm_obs = False
    assert normalizers(stats, 3) == {}


# -- one policy graph, by hand ---------------------------------------------------------------
def echo_graph(net_space, state_size=0, mask_size=0, stochastic=False):
    """act: the network's observation leaves side by side as the actions ([B, 3]: a's two
    entries, then n), plus 10 x the recurrent mask and 100 x the state's width (both 0 for a
    feed-forward policy) and, with action masks, 1000 x their count of valid actions; the next
    state is state + 1. sample: the same plus the seed's two numbers (x 1e4 and x 1e5)."""
    def act(obs, state, mask, *masks):
        leaves = [obs["a"], obs["n"][:, None]]
        extra = 10.0 * mask + 100.0 * tf.cast(tf.shape(state)[1], tf.float32)
        if masks:
            extra += 1000.0 * tf.reduce_sum(tf.cast(masks[0], tf.float32), axis=1)
        return tf.concat(leaves, axis=1) + extra[:, None], state + 1.0

    def sample(obs, state, mask, seed, *masks):
        actions, next_state = act(obs, state, mask, *masks)
        return actions + tf.cast(10000 * seed[0] + 100000 * seed[1], tf.float32), next_state

    return PolicyGraph(net_space, state_size, act, sample if stochastic else None, [],
                       mask_size)


OBS_SPACE = gym.spaces.Dict({"a": BOX2, "n": gym.spaces.Discrete(3)})
# the network takes n as a float (as an embedding's input would be)
NET_SPACE = gym.spaces.Dict({"a": BOX2, "n": gym.spaces.Box(0.0, 2.0, (), np.float32)})
WIDE = gym.spaces.Box(-1e9, 1e9, (3,), np.float32)
OBS = {"obs_a": np.array([[3.0, -2.0], [1.0, 0.0], [-5.0, -1.5]], np.float32),
       "obs_n": np.array([2, 0, 1], np.int64)}


def test_feed_forward_act_normalizes_casts_and_passes_an_empty_state():
    """a normalized by mean (1, -1), std (2, 0.5), clipped to 1.5: (3, -2) -> (1, -1.5),
    (1, 0) -> (0, 1.5) (2 before the clip), (-5, -1.5) -> (-1.5, -1); n cast to float32;
    the state [3, 0] and mask zeros add nothing."""
    stats = stats_for(OBS_SPACE, [[1.0, -1.0], None], [[4.0, 0.25], None])
    policy = ExportedPolicy(HandModel(OBS_SPACE, WIDE, echo_graph(NET_SPACE), stats))
    assert policy.names == ["obs_a", "obs_n"] and not policy.recurrent
    assert [(s.name, s.shape.as_list(), s.dtype) for s in policy.input_specs] == [
        ("obs_a", [None, 2], tf.float32), ("obs_n", [None], tf.int64)]
    assert policy.sample is None and policy.mask_space is None and not policy.stochastic
    assert list(policy.signatures()) == [DETERMINISTIC]
    out = policy.run(OBS)
    assert list(out) == ["actions"]
    np.testing.assert_array_equal(out["actions"].numpy(),
                                  [[1.0, -1.5, 2.0], [0.0, 1.5, 0.0], [-1.5, -1.0, 1.0]])
    # without statistics the raw observations reach the network
    raw = ExportedPolicy(HandModel(OBS_SPACE, WIDE, echo_graph(NET_SPACE)))
    np.testing.assert_array_equal(raw.run(OBS)["actions"].numpy(),
                                  [[3.0, -2.0, 2.0], [1.0, 0.0, 0.0], [-5.0, -1.5, 1.0]])


def test_box_actions_are_clipped_to_their_bounds_and_discrete_ones_cast():
    box = gym.spaces.Box(np.array([-1.0, -2.0, 0.0], np.float32),
                         np.array([1.0, 0.5, 1.5], np.float32))
    policy = ExportedPolicy(HandModel(OBS_SPACE, box, echo_graph(NET_SPACE)))
    np.testing.assert_array_equal(policy.run(OBS)["actions"].numpy(),
                                  [[1.0, -2.0, 1.5], [1.0, 0.0, 0.0], [-1.0, -1.5, 1.0]])
    multi = gym.spaces.MultiDiscrete([6, 6, 6])
    ints = ExportedPolicy(HandModel(OBS_SPACE, multi, echo_graph(NET_SPACE))).run(
        {"obs_a": np.array([[3.0, 4.0]], np.float32), "obs_n": np.array([5], np.int64)})
    assert ints["actions"].dtype == tf.int64
    np.testing.assert_array_equal(ints["actions"].numpy(), [[3, 4, 5]])


def test_recurrent_masked_act_sample_and_frozen_module():
    """State width 1, three action-mask entries, a sample signature: inputs obs_a, obs_n,
    state [B, 1], mask [B], action_masks [B, 3] (then seed [2] for sample). Row by row:
    + 10 x mask + 100 (the state's width) + 1000 x valid actions; sample adds 1e4 x seed[0] +
    1e5 x seed[1]; next_state = state + 1. The frozen module (weights as constants) acts alike,
    each output under its own name."""
    policy = ExportedPolicy(HandModel(OBS_SPACE, WIDE, echo_graph(NET_SPACE, 1, 3, True)))
    assert policy.recurrent and policy.state_size == 1 and policy.action_mask_size == 3
    assert policy.mask_space is WIDE and policy.stochastic
    assert [(s.name, s.shape.as_list(), s.dtype) for s in policy.input_specs[2:]] == [
        ("state", [None, 1], tf.float32), ("mask", [None], tf.float32),
        ("action_masks", [None, 3], tf.bool)]
    assert policy.seed_spec.shape.as_list() == [2] and policy.seed_spec.dtype == tf.int64
    assert sorted(policy.signatures()) == sorted([DETERMINISTIC, STOCHASTIC])
    state = np.array([[0.5], [2.0], [-4.0]], np.float32)
    inputs = dict(OBS, state=state, mask=np.array([1.0, 0.0, 1.0], np.float32),
                  action_masks=np.array([[True, True, False], [False, False, True],
                                         [True, True, True]]))
    raw = np.array([[3.0, -2.0, 2.0], [1.0, 0.0, 0.0], [-5.0, -1.5, 1.0]])
    want = raw + np.array([10 + 100 + 2000, 100 + 1000, 10 + 100 + 3000])[:, None]
    out = policy.run(inputs)
    np.testing.assert_array_equal(out["actions"].numpy(), want)
    np.testing.assert_array_equal(out["next_state"].numpy(), state + 1.0)
    args = [inputs[s.name] for s in policy.input_specs]
    assert policy.sample is not None
    drawn = policy.sample(*args, tf.constant([2, 3], tf.int64))
    np.testing.assert_array_equal(drawn["actions"].numpy(), want + 320000.0)
    frozen = policy.frozen().act(*args)
    assert sorted(frozen) == ["actions", "next_state"]
    np.testing.assert_array_equal(frozen["actions"].numpy(), want)
    np.testing.assert_array_equal(frozen["next_state"].numpy(), state + 1.0)


def test_frozen_module_holds_the_weights_as_constants():
    """A graph reading a variable (w = 2, through its owner layer): the frozen act returns
    obs * 2 and keeps doing so after the variable changes (it holds the value as a constant)."""
    layer = tf.Module()
    layer.w = tf.Variable(2.0)
    graph = PolicyGraph(BOX2, 0, lambda obs, state, mask: (obs * layer.w, state), None, [layer])
    policy = ExportedPolicy(HandModel(BOX2, BOX2, graph))
    frozen = policy.frozen()
    layer.w.assign(3.0)
    obs = np.array([[1.0, -2.0]], np.float32)
    np.testing.assert_array_equal(frozen.act(obs)["actions"].numpy(), [[2.0, -4.0]])
    np.testing.assert_array_equal(policy.run({"obs": obs})["actions"].numpy(), [[3.0, -6.0]])
    assert policy.graph_owners == [layer]


def test_a_box_observation_is_normalized_as_one_leaf():
    """A plain Box: input "obs", mean (1, -1), std (2, 0.5), clipped at 1.5."""
    stats = stats_for(BOX2, [[1.0, -1.0]], [[4.0, 0.25]])
    graph = PolicyGraph(BOX2, 0, lambda obs, state, mask: (obs, state))
    policy = ExportedPolicy(HandModel(BOX2, BOX2, graph, stats))
    np.testing.assert_array_equal(
        policy.run({"obs": np.array([[3.0, -2.0], [2.0, -1.25]], np.float32)})["actions"],
        [[1.0, -1.5], [0.5, -0.5]])


def test_a_recurrent_policy_of_one_observation_leaf_takes_state_then_mask():
    """A plain Box and state width 1: inputs obs, state, mask, in that order; act returns
    obs + 10 x mask and the next state state + 1."""
    def act(obs, state, mask):
        return obs + 10.0 * mask[:, None], state + 1.0

    wide2 = gym.spaces.Box(-100.0, 100.0, (2,), np.float32)
    policy = ExportedPolicy(HandModel(BOX2, wide2, PolicyGraph(BOX2, 1, act)))
    assert [s.name for s in policy.input_specs] == ["obs", "state", "mask"]
    out = policy.run({"obs": np.array([[1.0, 2.0], [3.0, 4.0]], np.float32),
                      "state": np.array([[5.0], [6.0]], np.float32),
                      "mask": np.array([1.0, 0.0], np.float32)})
    np.testing.assert_array_equal(out["actions"].numpy(), [[11.0, 12.0], [3.0, 4.0]])
    np.testing.assert_array_equal(out["next_state"].numpy(), [[6.0], [7.0]])
