"""The model classes: life cycle of every class, probabilities, parameters, bad input."""

from __future__ import annotations

import tempfile

import gymnasium as gym
import numpy as np
import pytest
from identity_envs import DiscreteIdentityEnv, EndsAtThree

from rlbase import A2C, ACER, ACKTR, DDPG, DQN, ES, PPO, SAC, TD3, TRPO, QLearning
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.evaluation import evaluate_policy
from tests.envs.tracing import tracing_counts

TINY = {"num_layers": 1, "num_hidden": 8}
# (class, env id, hyperparameters): a few hundred cheap steps each.
CASES = {
    "a2c": (A2C, "CartPole-v1", {"nsteps": 5}),
    "ppo": (PPO, "CartPole-v1", {"nsteps": 40, "nminibatches": 2, "noptepochs": 1}),
    "acer": (ACER, "CartPole-v1", {"nsteps": 10, "replay_start": 20, "buffer_size": 100}),
    "acktr": (ACKTR, "CartPole-v1", {"nsteps": 5, "cold_iter": 2}),
    "trpo": (TRPO, "CartPole-v1", {"n_steps": 40, "batch_size": 20, "n_critic_updates": 2}),
    "dqn": (DQN, "CartPole-v1", {"learning_starts": 50, "batch_size": 16, "hiddens": (8,),
                                 "jit_compile": False}),
    "qlearning": (QLearning, "FrozenLake-v1", {}),
    "ddpg": (DDPG, "Pendulum-v1", {"train_freq": 50, "gradient_steps": 2,
                                   "batch_size": 16, "jit_compile": False}),
    "td3": (TD3, "Pendulum-v1", {"train_freq": 50, "gradient_steps": 2,
                                 "batch_size": 16, "jit_compile": False}),
    "es": (ES, "CartPole-v1", {"popsize": 4}),
    "sac": (SAC, "Pendulum-v1", {"train_freq": 50, "gradient_steps": 2, "batch_size": 16,
                                 "learning_starts": 50, "jit_compile": False}),
}


def make(name: str, seed: int = 0):
    cls, env_id, hyper = CASES[name]
    if cls is QLearning:
        return cls("TabularPolicy", env_id, seed=seed, **hyper)
    return cls("MlpPolicy", env_id, seed=seed, policy_kwargs=TINY, **hyper)


# A life cycle costs ~10 s for a TF model here: the rest run with --runslow (PPO and ACER
# are also built and probed by the probability tests below, DQN by its pretrain test).
FAST = ("a2c", "qlearning", "es")


@pytest.mark.parametrize("name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow)
                                  for n in CASES])
def test_life_cycle(name, tmp_path):
    model = make(name)
    model.learn(200)
    first = model.num_timesteps
    assert first >= 200
    model.learn(200, reset_num_timesteps=False)
    assert model.num_timesteps >= first + 200  # the count continues
    obs = model.get_env().reset()
    single, _ = model.predict(obs[0], deterministic=True)
    batch, _ = model.predict(np.concatenate([obs, obs]), deterministic=True)
    assert np.shape(single) == model.action_space.shape
    assert np.shape(batch) == (2, *model.action_space.shape)
    np.testing.assert_allclose(batch[0], single, rtol=1e-5, atol=1e-6)
    assert model.action_space.contains(np.asarray(single, model.action_space.dtype))
    path = str(tmp_path / "model.zip")
    model.save(path)
    loaded = type(model).load(path, env=CASES[name][1])
    assert loaded.num_timesteps == model.num_timesteps
    for out, expected in zip(np.atleast_1d(loaded.action_probability(obs)),
                             np.atleast_1d(model.action_probability(obs))):
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    if name != "qlearning":  # (a Q-table breaks ties at random)
        np.testing.assert_allclose(loaded.predict(obs, deterministic=True)[0],
                                   model.predict(obs, deterministic=True)[0], rtol=1e-5,
                                   atol=1e-6)
    # Without an env: the spaces come from the file.
    bare = type(model).load(path)
    assert bare.get_env() is None and bare.observation_space == model.observation_space
    params = model.model.get_parameters()
    assert params and all(np.array_equal(params[k], v)
                          for k, v in loaded.model.get_parameters().items())


# One case of each training loop shape per family runs by default; the rest with --runslow.
IN_MEMORY_FAST = ("a2c", "dqn", "sac")


@pytest.mark.parametrize("name", [n if n in IN_MEMORY_FAST else pytest.param(
    n, marks=pytest.mark.slow) for n in CASES if n not in ("qlearning", "es")])
def test_a_second_learn_trains_the_same_model_in_memory(name, tmp_path, monkeypatch):
    """model.learn() continues the model it holds: no file is written, nothing is rebuilt and
    no compiled call is traced again."""
    monkeypatch.chdir(tmp_path)
    model = make(name)
    model.learn(300)
    held = model.model
    traces = tracing_counts(held)
    assert traces, "no compiled calls found on the model"
    weights = [w.copy() for w in model.model.get_parameters().values()]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where a temporary file would go
    model.learn(300, reset_num_timesteps=False)
    assert model.model is held
    assert model.num_timesteps >= 600
    assert tracing_counts(held) == traces
    assert not list(tmp_path.iterdir()), "learn() wrote files"
    assert any(not np.array_equal(a, b)
               for a, b in zip(weights, model.model.get_parameters().values())), \
        "nothing trained"


def test_learn_resets_the_count_by_default():
    model = make("qlearning")
    model.learn(100)
    model.learn(100)
    assert model.num_timesteps == 100


@pytest.mark.parametrize("name", ["ppo", "acer"])
def test_discrete_probabilities_match_the_policy(name):
    model = make(name)
    obs = np.repeat(model.get_env().reset(), 4, axis=0)
    probs = model.action_probability(obs)
    assert probs.shape == (4, 2)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(model.action_probability(obs[0]), probs[0], rtol=1e-6)
    # The probability of sampled actions is exp(-neglogp) of the policy's own step.
    actions, _, _, neglogp = model.model.step(obs, deterministic=False)
    np.testing.assert_allclose(model.action_probability(obs, actions=actions), np.exp(-neglogp),
                               rtol=1e-5)
    np.testing.assert_allclose(model.action_probability(obs, actions=actions, logp=True),
                               -neglogp, rtol=1e-5, atol=1e-6)


def test_box_mean_std_match_the_policy():
    model = PPO("MlpPolicy", "Pendulum-v1", seed=1, policy_kwargs=TINY, nsteps=8,
                nminibatches=1)
    obs = model.get_env().reset()
    mean, std = model.action_probability(obs)
    assert mean.shape == std.shape == (1, 1)
    np.testing.assert_allclose(mean, model.model.step(obs, deterministic=True)[0], rtol=1e-5)
    actions, _, _, neglogp = model.model.step(obs, deterministic=False)
    np.testing.assert_allclose(model.action_probability(obs, actions=actions, logp=True),
                               -neglogp, rtol=1e-5)
    z = (actions - mean) / std
    np.testing.assert_allclose(model.action_probability(obs, actions=actions),
                               (np.exp(-0.5 * z ** 2) / (std * np.sqrt(2 * np.pi)))[:, 0],
                               rtol=1e-5)


def test_dqn_probabilities_are_epsilon_greedy_and_match_sampling():
    model = make("dqn")
    model.model.epsilon = 0.3
    obs = model.get_env().reset()
    probs = model.action_probability(obs[0])
    assert sorted(probs.tolist()) == pytest.approx([0.15, 0.85])
    sampled, _ = model.predict(np.repeat(obs, 4000, axis=0))
    freq = np.bincount(sampled, minlength=2) / 4000
    np.testing.assert_allclose(freq, probs, atol=0.03)


def test_evaluate_policy_exact_return():
    model = QLearning("TabularPolicy", DiscreteIdentityEnv(n=4, episode_len=20))
    model.load_parameters({"q_table": np.eye(4)})  # the best action is the observation
    assert evaluate_policy(model, DiscreteIdentityEnv(n=4, episode_len=20), 3) == (20.0, 0.0)
    assert model.test(2) == (20.0, 0.0)
    # Any policy scores exactly 3 on an env that pays 1 a step and ends at step 3.
    ppo = PPO("MlpPolicy", EndsAtThree(truncate=False), policy_kwargs=TINY, nsteps=8,
              nminibatches=1)
    assert evaluate_policy(ppo, EndsAtThree(truncate=False), 4, deterministic=False) == \
        (3.0, 0.0)


def test_load_parameters_round_trip_and_errors(tmp_path):
    model = make("a2c")
    other = make("a2c", seed=1)
    params = model.model.get_parameters()
    assert not all(np.array_equal(v, other.model.get_parameters()[k])
                   for k, v in params.items())
    other.load_parameters(params)
    obs = model.get_env().reset()
    np.testing.assert_allclose(other.action_probability(obs), model.action_probability(obs),
                               rtol=1e-6)
    path = str(tmp_path / "a2c.zip")
    model.save(path)
    other.load_parameters(path)
    np.savez(tmp_path / "p.npz", **params)
    other.load_parameters(str(tmp_path / "p.npz"))
    name = sorted(params)[0]
    with pytest.raises(RLBaseError, match="missing parameter"):
        other.load_parameters({name: params[name]})
    other.load_parameters({name: params[name]}, exact_match=False)
    with pytest.raises(RLBaseError, match="has shape"):
        other.load_parameters({**params, name: np.zeros((3, 3, 3))})
    with pytest.raises(RLBaseError, match="unknown parameter"):
        other.load_parameters({**params, "nope": np.zeros(1)}, exact_match=False)


def test_bad_input():
    with pytest.raises(RLBaseError, match="does not support policy 'MlpLstmPolicy'"):
        DQN("MlpLstmPolicy", "CartPole-v1")
    with pytest.raises(RLBaseError, match="unknown policy 'Nope'"):
        A2C("Nope", "CartPole-v1")
    with pytest.raises(RLBaseError, match="no hyperparameter 'nstep'"):
        A2C("MlpPolicy", "CartPole-v1", nstep=5)
    model = QLearning("TabularPolicy", "FrozenLake-v1")
    with pytest.raises(RLBaseError, match="differ from the model's"):
        model.set_env("CliffWalking-v1")
    model.set_env(gym.make("FrozenLake-v1"))  # same spaces: accepted
    with pytest.raises(RLBaseError, match="pretrain is not supported by qlearning"):
        model.pretrain(None)
    with pytest.raises(RLBaseError, match="holds a 'qlearning' model, not 'a2c'"):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            model.save(tmp + "/q.zip")
            A2C.load(tmp + "/q.zip")


def test_recurrent_policy_predict_carries_state():
    model = A2C("MlpLstmPolicy", "CartPole-v1", policy_kwargs={"nlstm": 8}, nsteps=5)
    obs = model.get_env().reset()
    actions, state = model.predict(obs, deterministic=True)
    assert state.shape == (1, 16)
    _, state2 = model.predict(obs, state=state, mask=[0.0], deterministic=True)
    assert not np.allclose(state, state2)


def test_seeded_construction_repeats():
    a, b = make("ppo", seed=3), make("ppo", seed=3)
    for k, v in a.model.get_parameters().items():
        np.testing.assert_array_equal(v, b.model.get_parameters()[k])


# -- Stable-Baselines3's methods and attributes ------------------------------------------------


def test_learn_takes_a_whole_float():
    model = make("a2c")
    model.learn(total_timesteps=1e2)
    assert model.num_timesteps == 100
    with pytest.raises(RLBaseError, match="whole number.*100.5"):
        model.learn(total_timesteps=100.5)


def test_save_adds_zip_and_load_finds_it(tmp_path, monkeypatch):
    import io
    import pathlib

    monkeypatch.chdir(tmp_path)
    model = make("a2c")
    model.save("ppo_pend")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ppo_pend.zip"]
    assert A2C.load("ppo_pend").num_timesteps == 0
    model.save(pathlib.Path("sub") / "m.model")  # a suffix given is kept
    assert (tmp_path / "sub" / "m.model").is_file()
    buffer = io.BytesIO()
    model.save(buffer)
    loaded = A2C.load(buffer)
    for name, arrays in model.get_parameters().items():
        for key, value in arrays.items():
            np.testing.assert_array_equal(value, loaded.get_parameters()[name][key])
    with pytest.raises(RLBaseError, match="a file path is a str"):
        model.save(123)


def test_save_exclude_include(tmp_path):
    model = A2C("MlpPolicy", "CartPole-v1", gamma=0.5, n_steps=5, verbose=1, seed=0)
    model.learn(50)
    model.save(tmp_path / "m", exclude=["gamma", "verbose", "num_timesteps"],
               include=["num_timesteps"])
    loaded = A2C.load(tmp_path / "m")
    assert (loaded.gamma, loaded.verbose, loaded.num_timesteps) == (0.99, 0, 50)
    with pytest.raises(RLBaseError, match="cannot exclude 'n_steps'"):
        model.save(tmp_path / "m", exclude=["n_steps"])  # it shapes the variables
    with pytest.raises(RLBaseError, match="'nope' is not something"):
        model.save(tmp_path / "m", exclude=["nope"])
    with pytest.raises(RLBaseError, match="save_replay_buffer"):
        model.save(tmp_path / "m", include=["replay_buffer"])
    model.save(tmp_path / "m", exclude=["env"])  # never saved: nothing to leave out


def test_policy_object():
    model = make("a2c")
    assert model.policy_name == "MlpPolicy" and model.policy_class is type(model.policy)
    policy = model.policy
    assert policy.observation_space == model.observation_space
    assert policy.action_space == model.action_space
    obs = model.get_env().reset()[0]
    action, state = policy.predict(obs, deterministic=True)
    # One observation: an array of the action space's shape (0-d for Discrete), like SB3.
    assert isinstance(action, np.ndarray) and action.shape == () and state is None
    assert action == model.predict(obs, deterministic=True)[0]
    batch, vectorized = policy.obs_to_tensor(obs)
    assert batch.shape == (1, 4) and vectorized is False
    policy.set_training_mode(False)
    assert policy.training is False
    assert set(policy.get_parameters()) == {f"policy/{k}" for k in
                                            model.get_parameters()["policy"]}
    with pytest.raises(RLBaseError, match="True or False"):
        policy.set_training_mode("no")


def test_predict_episode_start_resets_the_recurrent_state():
    model = A2C("MlpLstmPolicy", "CartPole-v1", policy_kwargs={"nlstm": 8}, nsteps=5)
    obs = model.get_env().reset()
    first, state = model.predict(obs, deterministic=True)
    _, carried = model.predict(obs, state=state, episode_start=[0.0])
    _, restarted = model.predict(obs, state=state, episode_start=[1.0])
    _, fresh = model.predict(obs)
    np.testing.assert_allclose(restarted, fresh, rtol=1e-6)
    assert not np.allclose(carried, restarted)
    with pytest.raises(RLBaseError, match="not both"):
        model.predict(obs, state=state, episode_start=[1.0], mask=[1.0])


def test_get_set_parameters_by_object(tmp_path):
    model, other = make("a2c"), make("a2c", seed=1)
    params = model.get_parameters()
    assert set(params) == {"policy", "optimizer"}
    other.set_parameters(params)
    obs = model.get_env().reset()
    np.testing.assert_allclose(other.action_probability(obs), model.action_probability(obs),
                               rtol=1e-6)
    with pytest.raises(RLBaseError, match="unknown object 'policy.optimizer'"):
        other.set_parameters({**params, "policy.optimizer": {}})  # SB3's torch name
    with pytest.raises(RLBaseError, match="use load_parameters"):
        other.set_parameters(model.model.get_parameters())  # the flat form
    with pytest.raises(RLBaseError, match=r"missing object\(s\) \['optimizer'\]"):
        other.set_parameters({"policy": params["policy"]})
    other.set_parameters({"policy": params["policy"]}, exact_match=False)
    model.save(tmp_path / "a2c")
    other.set_parameters(tmp_path / "a2c.zip")


def test_set_env_and_load_refuse_what_they_cannot_do(tmp_path):
    model = make("a2c")
    with pytest.raises(RLBaseError, match="force_reset=True"):
        model.set_env("CartPole-v1", force_reset=False)
    model.save(tmp_path / "m")
    with pytest.raises(RLBaseError, match="force_reset=True"):
        A2C.load(tmp_path / "m", force_reset=False)
    with pytest.raises(RLBaseError, match="device must be"):
        A2C.load(tmp_path / "m", device="tpu")
    import tensorflow as tf

    if not tf.config.list_physical_devices("GPU"):
        with pytest.raises(RLBaseError, match="sees no GPU"):
            A2C.load(tmp_path / "m", device="cuda")
    with pytest.raises(RLBaseError, match="not something"):
        A2C.load(tmp_path / "m", custom_objects={"dummy": 1})
    loaded = A2C.load(tmp_path / "m", custom_objects={"lr_schedule": 1e-5, "verbose": 1})
    assert (loaded.learning_rate, loaded.lr, loaded.verbose) == (1e-5, 1e-5, 1)


def test_attributes():
    from rlbase.common.vec_env import DummyVecEnv, VecNormalize

    venv = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2))
    model = PPO("MlpPolicy", venv, n_steps=16, batch_size=32, gamma=0.9, policy_kwargs=TINY)
    assert model.get_vec_normalize_env() is venv and model.n_envs == 2
    assert (model.gamma, model.n_steps, model.nsteps, model.learning_rate) == \
        (0.9, 16, 16, 3e-4)
    assert model.nminibatches == 1
    with pytest.raises(AttributeError, match="batch_size.*nminibatches=1"):
        model.batch_size  # noqa: B018 - SB3 counts it in another unit
    with pytest.raises(RLBaseError, match="is a hyperparameter"):
        model.gamma = 0.5
    with pytest.raises(AttributeError, match="no replay buffer"):
        model.replay_buffer  # noqa: B018
    assert not hasattr(model, "replay_buffer")
    with pytest.raises(AttributeError, match="no replay buffer"):
        model.save_replay_buffer("x")
    assert make("a2c").get_vec_normalize_env() is None


def test_load_refuses_settings_that_would_not_fit_the_file(tmp_path):
    A2C("MlpPolicy", "CartPole-v1", policy_kwargs={"net_arch": [16]}, n_steps=5).save(
        tmp_path / "m")
    A2C.load(tmp_path / "m", policy_kwargs={"net_arch": [16]}, nsteps=5)  # the file's own
    with pytest.raises(RLBaseError, match="leave policy_kwargs out"):
        A2C.load(tmp_path / "m", policy_kwargs={"net_arch": [32]})
    with pytest.raises(RLBaseError, match="nsteps=8 differs from the file's 5"):
        A2C.load(tmp_path / "m", n_steps=8)
