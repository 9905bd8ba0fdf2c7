"""TF's thread plans (tf_util.configure_threads) and the convnet batch split they enable."""

import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from rlbase.common import tf_util
from rlbase.common.networks.registry import build_network
from rlbase.common.tf_util import batch_blocks, configure_threads, split_rows


def _rowwise(x: tf.Tensor) -> tf.Tensor:
    return tf.reduce_sum(tf.square(x), axis=1, keepdims=True) + tf.cast(tf.shape(x)[0], x.dtype)


@pytest.mark.parametrize("blocks", [2, 3])
@pytest.mark.parametrize("rows", [1, 2, 3, 7, 8])
def test_split_rows_is_the_whole_computation(rows, blocks):
    x = tf.constant(np.arange(rows * 3, dtype=np.float32).reshape(rows, 3))
    fn = tf.function(lambda t: split_rows(lambda u: u * 2.0 + 1.0, t, blocks),
                     input_signature=[tf.TensorSpec([None, 3], tf.float32)], autograph=False)
    np.testing.assert_array_equal(fn(x).numpy(), x.numpy() * 2.0 + 1.0)


def test_split_rows_calls_fn_per_block_and_whole_below_the_block_count():
    # _rowwise adds the row count fn saw: it tells the blocks apart from the whole batch.
    sizes = lambda n, blocks: split_rows(_rowwise, tf.zeros([n, 2]), blocks).numpy().ravel()
    np.testing.assert_array_equal(sizes(7, 2), [3, 3, 3, 4, 4, 4, 4])
    np.testing.assert_array_equal(sizes(7, 3), [2, 2, 2, 2, 3, 3, 3])  # bounds 0, 2, 4, 7
    np.testing.assert_array_equal(sizes(1, 2), [1])  # no empty block
    np.testing.assert_array_equal(sizes(5, 1), [5] * 5)


def test_convnet_features_and_gradients_are_the_same_in_blocks():
    net = build_network("cnn", num_hidden=16)
    x = tf.constant(np.random.default_rng(0).random((5, 84, 84, 4)), tf.float32)
    whole = net._features(x)

    def loss_and_grads(blocks: int) -> tuple[tf.Tensor, list[tf.Tensor]]:
        with tf.GradientTape() as tape:
            out = split_rows(net._features, x, blocks)
            loss = tf.reduce_sum(tf.square(out))
        return out, tape.gradient(loss, net.trainable_variables)

    out1, grads1 = loss_and_grads(1)
    out2, grads2 = loss_and_grads(2)
    np.testing.assert_allclose(out2.numpy(), whole.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out1.numpy(), whole.numpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(grads1, grads2):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("intra, inter, blocks", [(1, 2, 2), (1, 4, 4), (0, 0, 1), (1, 1, 1),
                                                   (2, 2, 1)])
def test_batch_blocks_follow_the_thread_plan(monkeypatch, intra, inter, blocks):
    monkeypatch.setattr(tf.config.threading, "get_intra_op_parallelism_threads", lambda: intra)
    monkeypatch.setattr(tf.config.threading, "get_inter_op_parallelism_threads", lambda: inter)
    assert batch_blocks() == blocks


def test_unknown_plan_is_refused():
    with pytest.raises(ValueError, match="unknown thread plan 'huge'"):
        configure_threads("huge")


_PLAN = """
import json, sys
import tensorflow as tf
from rlbase.common.tf_util import available_cores, batch_blocks, configure_threads
configure_threads(sys.argv[1])
print(json.dumps([tf.config.threading.get_intra_op_parallelism_threads(),
                  tf.config.threading.get_inter_op_parallelism_threads(), batch_blocks(),
                  available_cores()]))
"""


@pytest.mark.parametrize("plan", ["small", "convnet", "large"])
def test_each_plan_sets_the_pools_in_a_fresh_process(plan, monkeypatch):
    monkeypatch.delenv("RLBASE_TF_THREADS", raising=False)
    out = subprocess.run([sys.executable, "-c", _PLAN, plan], capture_output=True, text=True,
                         check=True).stdout
    intra, inter, blocks, cores = json.loads(out.strip().splitlines()[-1])
    expected = {"small": (1, 1, 1), "convnet": (1, cores, cores if cores > 1 else 1),
                "large": (0, 0, 1)}[plan]
    assert (intra, inter, blocks) == expected


def test_the_override_wins_and_turns_the_split_off(monkeypatch):
    monkeypatch.setenv("RLBASE_TF_THREADS", "3")
    out = subprocess.run([sys.executable, "-c", _PLAN, "convnet"], capture_output=True,
                         text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1])[:3] == [3, 3, 1]


def test_available_cores_is_the_affinity(monkeypatch):
    monkeypatch.setattr(tf_util.os, "sched_getaffinity", lambda pid: {0, 5, 7})
    assert tf_util.available_cores() == 3


_EXPORT = """
import sys
import gymnasium as gym
import numpy as np
import tensorflow as tf
import rlbase
from rlbase.common.tf_util import batch_blocks
from rlbase.common.export import runners

class Frames(gym.Env):
    observation_space = gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)
    action_space = gym.spaces.Discrete(3)
    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}
    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}

model = rlbase.PPO("CnnPolicy", Frames(), seed=0)
assert batch_blocks() == 2, batch_blocks()  # the convnet plan, its batch split on
space = Frames.observation_space
space.seed(0)
obs = np.stack([space.sample() for _ in range(5)])
expected = model.predict(obs, deterministic=True)[0]
for fmt in sys.argv[1:]:
    run = runners.load(model.export(f"{sys.argv[0]}_{fmt}", format=fmt))
    np.testing.assert_array_equal(run(obs=obs)["actions"], expected)
print("ok")
"""


@pytest.mark.skipif(tf_util.available_cores() < 2, reason="the batch split needs 2 cores")
def test_a_convnet_traced_with_the_batch_split_exports(tmp_path, monkeypatch):
    # A fresh process whose first model is a convnet runs the 'convnet' plan: its exported
    # graph then holds the split (a cond and its blocks) and must give predict's actions.
    from tests.test_export import HAVE_ONNX

    monkeypatch.delenv("RLBASE_TF_THREADS", raising=False)
    formats = ["saved_model", "tflite"] + (["onnx"] if HAVE_ONNX else [])
    script = tmp_path / "export_convnet.py"
    script.write_text(_EXPORT)
    done = subprocess.run([sys.executable, str(script), *formats], capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "ok"
