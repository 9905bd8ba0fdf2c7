"""Port of baselines/common/tests/test_serialization.py: a model saved after training and
loaded with ``learn(total_timesteps=0, load_path=...)`` has the same parameters and acts the
same; and two models live side by side.

Deliberate differences:
- the image env is DigitsEnv (envs.py): MnistEnv's 28x28x1 images and ten classes without
  the download, in a uint8 image space (MnistEnv declared floats in [0, 1] but sent 0..255);
- no TF graphs or sessions: the parameters compared are ``model.get_parameters()`` (every
  array a model file holds), not the graph's trainable variables;
- ``model.step`` takes a batch: test_coexistence steps a batch of one observation (Baselines
  reshaped a single observation itself);
- cases Baselines skipped run where rlbase supports them: ACER with LSTM policies, and two
  DQN models at once. DQN has no recurrent networks (as in Baselines), so deepq with lstm
  and cnn_lnlstm stays skipped; so do trpo_mpi's (rlbase's TRPO refuses recurrent networks;
  Baselines skipped them). trpo_mpi is rlbase's ``trpo`` (the registry's alias).
"""

import os

import gymnasium as gym
import numpy as np
import pytest

from rlbase.common.vec_env import DummyVecEnv
from rlbase.registry import get_algorithm

from .envs import DigitsEnv

LEARN_KWARGS = {
    "deepq": {},
    "a2c": {},
    "acer": {},
    "acktr": {},
    "ppo2": {"nminibatches": 1, "nsteps": 10},
    "trpo_mpi": {},
}

NETWORK_KWARGS = {
    "mlp": {},
    "cnn": {"pad": "SAME"},
    "lstm": {},
    "cnn_lnlstm": {"pad": "SAME"},
}


# The recurrent cases take 5 to 20 s each: slow.
NETWORKS = [pytest.param(name, marks=pytest.mark.slow) if name.endswith("lstm") else name
            for name in NETWORK_KWARGS]


@pytest.mark.parametrize("learn_fn", LEARN_KWARGS)
@pytest.mark.parametrize("network_fn", NETWORKS)
def test_serialization(learn_fn, network_fn, tmp_path):
    """A trained model survives save and load."""
    if network_fn.endswith("lstm") and learn_fn == "deepq":
        pytest.skip("DQN takes feed-forward networks only (as in Baselines)")
    if network_fn.endswith("lstm") and learn_fn == "acktr":
        pytest.skip("ACKTR's K-FAC takes Dense and Conv2D layers only (as in Baselines)")
    if network_fn.endswith("lstm") and learn_fn == "trpo_mpi":
        pytest.skip("TRPO takes feed-forward networks only (Baselines skipped it too)")

    env = DummyVecEnv([lambda: DigitsEnv(episode_len=100)])
    env.seed(10)
    ob = env.reset().copy()
    kwargs = {**NETWORK_KWARGS[network_fn], **LEARN_KWARGS[learn_fn]}
    learn = get_algorithm(learn_fn).learn
    model_path = os.path.join(str(tmp_path), "serialization_test_model")

    model = learn(env=env, network=network_fn, seed=0, total_timesteps=100, **kwargs)
    model.save(model_path)
    mean1, std1 = _get_action_stats(model, ob)
    variables1 = model.get_parameters()

    model = learn(env=env, network=network_fn, seed=0, total_timesteps=0, load_path=model_path,
                  **kwargs)
    mean2, std2 = _get_action_stats(model, ob)
    variables2 = model.get_parameters()

    assert variables1.keys() == variables2.keys()
    for name, value in variables1.items():
        np.testing.assert_allclose(value, variables2[name], atol=0.01,
                                   err_msg=f"saved and loaded values of {name} differ")
    np.testing.assert_allclose(mean1, mean2, atol=0.5)
    np.testing.assert_allclose(std1, std2, atol=0.5)


@pytest.mark.parametrize("learn_fn", LEARN_KWARGS)
@pytest.mark.parametrize("network_fn", ["mlp"])
def test_coexistence(learn_fn, network_fn):
    """Two models built one after the other can both act."""
    env = DummyVecEnv([lambda: gym.make("CartPole-v1")])
    kwargs = {**NETWORK_KWARGS[network_fn], **LEARN_KWARGS[learn_fn]}
    learn = get_algorithm(learn_fn).learn
    model1 = learn(env=env, network=network_fn, total_timesteps=0, seed=1, **kwargs)
    model2 = learn(env=env, network=network_fn, total_timesteps=0, seed=2, **kwargs)
    model1.step(env.observation_space.sample()[None])
    model2.step(env.observation_space.sample()[None])


def _get_action_stats(model, ob):
    """Mean and standard deviation of 1000 sampled actions for one observation."""
    ntrials = 1000
    state = model.initial_state
    if state is None:
        actions = [model.step(ob)[0] for _ in range(ntrials)]
    else:
        actions = [model.step(ob, state, np.zeros(1, bool))[0] for _ in range(ntrials)]
    actions = np.array(actions)
    return np.mean(actions, axis=0), np.std(actions, axis=0)
