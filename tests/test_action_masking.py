"""Action masking for A2C, PPO, DQN and QR-DQN (rlbase/docs/action_masking.md): masked
categoricals by hand, masks from the env's method and from its info, never a masked action
taken, the same masks in the update as in acting, predict/evaluate/export with masks, MaskablePPO,
DQN's greedy and exploring choices, and learning."""

import math

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf
from envs.masked_grid import MaskedGridEnv, MultiMaskedGridEnv, SwitchGridEnv

from rlbase import MaskablePPO
from rlbase.a2c import a2c
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.action_masks import check_masks
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.common.loops.rollout import RolloutRunner
from rlbase.common.networks.distributions import Categorical, MultiCategorical, masked_logits
from rlbase.common.networks.numpy_actor import NumpyActor
from rlbase.common.networks.policies import build_policy
from rlbase.common.vec_env import DummyVecEnv
from rlbase.ppo import ppo

QUIET = dict(log_interval=10**9)
LN2 = math.log(2.0)


def grid_envs(n=4, cls=MaskedGridEnv, **kwargs):
    """A DummyVecEnv of ``n`` grids and the grid objects themselves (to read their counts)."""
    envs = [cls(**kwargs) for _ in range(n)]
    made = iter(envs)
    return DummyVecEnv([lambda: next(made) for _ in range(n)]), envs


def test_masked_categorical_by_hand():
    # logits [0, 0, 0, 0], actions 0 and 2 valid: each has probability 1/2.
    pd = Categorical(masked_logits(tf.zeros([1, 4]), tf.constant([[1, 0, 1, 0]])))
    assert pd.neglogp(tf.constant([0])).numpy()[0] == pytest.approx(LN2, abs=1e-6)
    assert pd.neglogp(tf.constant([2])).numpy()[0] == pytest.approx(LN2, abs=1e-6)
    assert pd.entropy().numpy()[0] == pytest.approx(LN2, abs=1e-6)
    assert pd.neglogp(tf.constant([1])).numpy()[0] > 1e7  # a masked action: probability 0
    # logits [1, 2, 3, 4], valid 0 and 2: p0 = e/(e + e^3) = 1/(1 + e^2), p2 = 1 - p0.
    pd = Categorical(masked_logits(tf.constant([[1.0, 2.0, 3.0, 4.0]]),
                                   tf.constant([[True, False, True, False]])))
    p0 = 1.0 / (1.0 + math.e ** 2)
    p2 = 1.0 - p0
    assert pd.neglogp(tf.constant([2])).numpy()[0] == pytest.approx(-math.log(p2), abs=1e-6)
    assert pd.entropy().numpy()[0] == pytest.approx(-(p0 * math.log(p0) + p2 * math.log(p2)),
                                                    abs=1e-6)
    assert pd.mode().numpy()[0] == 2  # 3 (logit 4) is masked
    draws = pd.sample(tf.constant([1, 2], tf.int64))
    assert int(draws.numpy()[0]) in (0, 2)


def test_masked_gradients_are_finite_and_zero_for_masked_logits():
    logits = tf.Variable([[0.5, -1.0, 2.0]])
    with tf.GradientTape() as tape:
        pd = Categorical(masked_logits(logits, tf.constant([[True, True, False]])))
        loss = pd.neglogp(tf.constant([0])) - pd.entropy()
    grad = tape.gradient(loss, logits).numpy()
    assert np.all(np.isfinite(grad)) and grad[0, 2] == 0.0


def test_masked_multicategorical_by_hand():
    # nvec [3, 2], zero logits; first part: 0 and 1 valid (1/2 each), second: only 1.
    pd = MultiCategorical(masked_logits(tf.zeros([1, 5]), tf.constant([[1, 1, 0, 0, 1]])),
                          np.array([3, 2]))
    assert pd.neglogp(tf.constant([[0, 1]])).numpy()[0] == pytest.approx(LN2, abs=1e-6)
    assert pd.entropy().numpy()[0] == pytest.approx(LN2, abs=1e-6)
    assert pd.mode().numpy()[0].tolist()[1] == 1


def test_numpy_actor_never_samples_a_masked_action():
    policy = build_policy(gym.spaces.Discrete(3), gym.spaces.Discrete(6))
    actor = NumpyActor(policy, seed=0)
    rng = np.random.default_rng(0)
    masks = rng.random((2000, 6)) < 0.3
    masks[np.arange(2000), rng.integers(0, 6, 2000)] = True  # at least one valid
    actions = actor.act(rng.integers(0, 3, 2000), action_masks=masks)
    assert masks[np.arange(2000), actions].all()


def test_check_masks_refuses_bad_masks():
    space = gym.spaces.Discrete(4)
    assert check_masks([1, 0, 1, 0], space, 1).tolist() == [[True, False, True, False]]
    with pytest.raises(RLBaseError, match="4 entries per env"):
        check_masks([1, 0, 1], space, 1)
    with pytest.raises(RLBaseError, match="allows no action"):
        check_masks([[1, 0, 0, 0], [0, 0, 0, 0]], space, 2)
    with pytest.raises(RLBaseError, match="allows no action"):  # one MultiDiscrete part empty
        check_masks([1, 0, 0, 0, 0], gym.spaces.MultiDiscrete([3, 2]), 1)
    binary = gym.spaces.MultiBinary(2)  # per bit: (0 allowed, 1 allowed)
    assert check_masks([1, 1, 0, 1], binary, 1).tolist() == [[True, True, False, True]]
    with pytest.raises(RLBaseError, match="allows no action"):  # bit 1 can be neither
        check_masks([1, 1, 0, 0], binary, 1)
    with pytest.raises(RLBaseError, match="4 entries per env"):  # one per bit is too few
        check_masks([1, 1], binary, 1)
    with pytest.raises(RLBaseError, match="Discrete, 1-D MultiDiscrete or 1-D MultiBinary"):
        check_masks([1.0], gym.spaces.Box(-1, 1, (1,)), 1)


@pytest.mark.parametrize("source, numpy_act, steps", [("method", "1", 4096), ("info", "1", 4096),
                                                      (True, "0", 2048), ("info", "0", 2048)])
def test_ppo_never_takes_a_masked_action(source, numpy_act, steps, monkeypatch):
    """Thousands of steps (4 envs), with goals reached and time limits hit: an env that ended
    acts on its new episode's mask (the info source reads the reset's info, not the last
    step's), on the numpy act path and the TF one (slower: fewer steps)."""
    monkeypatch.setenv("RLBASE_NUMPY_ACT", numpy_act)
    venv, envs = grid_envs()
    ppo.learn("mlp", venv, total_timesteps=steps, seed=0, nsteps=256, action_masks=source,
              **QUIET)
    assert sum(e.total_steps for e in envs) >= steps
    assert [e.invalid_taken for e in envs] == [0, 0, 0, 0]


def test_a2c_and_multidiscrete_never_take_a_masked_action():
    venv, envs = grid_envs()
    a2c.learn("mlp", venv, total_timesteps=2000, seed=0, action_masks="method", **QUIET)
    assert [e.invalid_taken for e in envs] == [0, 0, 0, 0]
    venv, envs = grid_envs(2, MultiMaskedGridEnv)
    ppo.learn("mlp", venv, total_timesteps=2048, seed=0, nsteps=256, action_masks=True, **QUIET)
    assert [(e.invalid_taken, e.invalid_speed) for e in envs] == [(0, 0), (0, 0)]


@pytest.mark.parametrize("numpy_act", ["1", "0"])
def test_multibinary_never_takes_a_masked_bit(numpy_act, monkeypatch):
    """MultiBinary masks (sb3-contrib's layout): switch 0 forced on and switch 1 off over
    every step, on the numpy act path and the TF one; unmasked, both are set at random."""
    monkeypatch.setenv("RLBASE_NUMPY_ACT", numpy_act)
    venv, envs = grid_envs(2, SwitchGridEnv)
    ppo.learn("mlp", venv, total_timesteps=1024, seed=0, nsteps=128, action_masks="method",
              **QUIET)
    assert sum(e.total_steps for e in envs) >= 1024
    assert [e.invalid_switch for e in envs] == [0, 0]
    if numpy_act == "1":
        venv, envs = grid_envs(2, SwitchGridEnv)
        with pytest.warns(UserWarning, match="action_masks=False"):
            ppo.learn("mlp", venv, total_timesteps=512, seed=0, nsteps=128, **QUIET)
        assert sum(e.invalid_switch for e in envs) > 300  # ~1 of 2 switches wrong a step


def test_unmasked_runs_take_invalid_actions():
    """The count the tests above hold at 0 is not 0 by construction."""
    venv, envs = grid_envs()
    ppo.learn("mlp", venv, total_timesteps=1024, seed=0, nsteps=256, **QUIET)
    assert sum(e.invalid_taken for e in envs) > 500  # ~3/4 of the actions are decoys


def _masked_softmax(logits, masks):
    """Softmax over the valid logits only (0 elsewhere), by its formula, in float64."""
    z = np.where(masks, logits.astype(np.float64), -np.inf)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _masked_entropy(logits, masks):
    p = _masked_softmax(logits, masks)
    return -np.where(masks, p * np.log(np.where(masks, p, 1.0)), 0.0).sum(axis=1)


@pytest.mark.parametrize("algorithm", ["ppo", "a2c"])
def test_update_uses_the_rollouts_masks(algorithm):
    """The update's log-probabilities and entropy are those of the masks the rollout acted
    under: PPO's first (only) minibatch has approx_kl 0 against the behaviour policy, and
    both algorithms' entropy is the masked one (ln 16 = 2.77 unmasked, at most ln 4 = 1.39
    with at most 4 of 16 actions valid)."""
    venv, _ = grid_envs(2)
    module = ppo if algorithm == "ppo" else a2c
    settings = dict(nsteps=64, nminibatches=1, noptepochs=1) if algorithm == "ppo" else \
        dict(nsteps=64)
    model = module.learn("mlp", venv, total_timesteps=0, seed=0, action_masks="method",
                         **settings, **QUIET)
    runner = RolloutRunner(venv, model, nsteps=64, gamma=0.99, action_masks="method")
    rollout = runner.run()
    assert rollout.action_masks.shape == (128, 16) and rollout.action_masks.sum(1).max() <= 4
    assert rollout.action_masks[np.arange(128), rollout.actions].all()
    policy = model.policy
    params = policy.forward(tf.constant(rollout.obs), tf.constant(rollout.state),
                            tf.constant(rollout.starts))[0].numpy()
    expected = _masked_entropy(params, rollout.action_masks).mean()
    neglogp = model.behaviour(tf.constant(rollout.obs), tf.constant(rollout.state),
                              tf.constant(rollout.starts), tf.constant(rollout.actions),
                              tf.constant(rollout.action_masks))[0].numpy()
    p = _masked_softmax(params, rollout.action_masks)[np.arange(128), rollout.actions]
    np.testing.assert_allclose(neglogp, -np.log(p), rtol=1e-5)
    assert neglogp.max() < 1.5  # ~uniform over <= 4 valid actions (ln 16 = 2.77 unmasked)
    scalars = (1e-3, 0.2, 0.2) if algorithm == "ppo" else (1e-3,)
    stats, _ = model.train(rollout, *scalars)
    assert -stats["entropy_loss"] == pytest.approx(expected, rel=1e-4)
    if algorithm == "ppo":
        assert stats["approx_kl"] == pytest.approx(0.0, abs=1e-10)
        assert stats["clip_fraction"] == 0.0


def test_predict_with_action_masks():
    venv, _ = grid_envs(2)
    model = MaskablePPO("MlpPolicy", venv, n_steps=64, seed=0)
    only_right = np.eye(16, dtype=bool)[3]
    action, _ = model.predict(0, action_masks=only_right, deterministic=True)
    assert int(action) == 3
    batch = np.stack([np.eye(16, dtype=bool)[1], only_right])
    actions, _ = model.predict(np.array([0, 7]), action_masks=batch)
    assert actions.tolist() == [1, 3]
    with pytest.raises(RLBaseError, match="16 entries per env"):
        model.predict(0, action_masks=[1, 0])
    with pytest.raises(RLBaseError, match="allows no action"):
        model.predict(0, action_masks=np.zeros(16))


def test_evaluate_policy_honours_the_models_masks():
    venv, _ = grid_envs(2)
    model = MaskablePPO("MlpPolicy", venv, n_steps=64, seed=0)
    eval_env, envs = grid_envs(1)
    evaluate_policy(model, eval_env, 3, deterministic=False)
    assert envs[0].total_steps >= 3 and envs[0].invalid_taken == 0


def test_maskable_ppo_learn_refusals_and_use_masking():
    venv, envs = grid_envs(2)
    model = MaskablePPO("MlpPolicy", venv, n_steps=64, seed=0)
    model.learn(256, use_masking=False)
    assert sum(e.invalid_taken for e in envs) > 0  # trained this call without masks
    assert model.action_masks is True                # the setting is back
    with pytest.raises(RLBaseError, match="use_masking must be True or False"):
        model.learn(128, use_masking="yes")
    cartpole = MaskablePPO("MlpPolicy", "CartPole-v1", n_steps=64, seed=0)
    with pytest.raises(RLBaseError, match="no action_masks\\(\\) method"):
        cartpole.learn(128)


def _masked_model(algorithm, multi=False):  # multi: MultiDiscrete, or "binary": MultiBinary
    """An untrained masked model whose random weights make the masks matter: over the grid's
    36 cells its unmasked greedy action is a decoy for most observations."""
    from rlbase import DQN

    kind = {False: MaskedGridEnv, True: MultiMaskedGridEnv, "binary": SwitchGridEnv}[multi]
    venv, _ = grid_envs(2, kind)
    if algorithm == "dqn":
        return DQN("MlpPolicy", venv, seed=0, action_masks=True, learning_starts=10).model
    return ppo.learn("mlp", venv, total_timesteps=0, seed=0, nsteps=64, action_masks=True,
                     **QUIET)


# Each format once, each model kind once (a format reads the masks the same whatever the
# model): an export costs seconds, and the exporter's own check covers the others.
@pytest.mark.parametrize("fmt,algorithm,multi", [("saved_model", "ppo", False),
                                                 ("tflite", "dqn", False),
                                                 ("onnx", "ppo", True),
                                                 ("saved_model", "ppo", "binary")])
def test_exported_masked_policy_takes_the_masks(tmp_path, algorithm, multi, fmt):
    """The exported policy takes ``action_masks`` as an input and acts as
    ``step(obs, action_masks=..., deterministic=True)`` on random masks: the same actions,
    each valid; the same observations without masks (all valid) give other actions."""
    from rlbase.common.export import export_model as export
    from rlbase.common.export.runners import load, random_masks
    from rlbase.common.loops.action_masks import mask_groups

    if fmt == "onnx":
        pytest.importorskip("tf2onnx")
        pytest.importorskip("onnxruntime")
    model = _masked_model(algorithm, multi)
    space = model.action_space
    run = load(export(model, str(tmp_path / "policy"), format=fmt))
    obs = np.arange(36, dtype=np.int64)
    masks = random_masks(space, 36, np.random.default_rng(3))
    got = run(obs=obs, action_masks=masks)["actions"]
    want = model.step(obs, deterministic=True, action_masks=masks)[0]
    np.testing.assert_array_equal(got, want)
    chosen = got.reshape(36, -1)
    sizes = mask_groups(space)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    assert masks[np.arange(36)[:, None], chosen + offsets].all()
    unmasked = run(obs=obs, action_masks=np.ones_like(masks))["actions"]
    np.testing.assert_array_equal(unmasked, model.step(obs, deterministic=True)[0])
    assert not np.array_equal(unmasked, got)


def test_exported_masked_sampling_draws_only_valid_actions(tmp_path):
    """The SavedModel's ``sample`` signature of a masked PPO and a masked exploring DQN:
    4,000 seeded draws, each among its row's valid actions, both valid ones drawn."""
    from rlbase.common.export import export_model as export
    from rlbase.common.export.runners import load

    for algorithm in ("ppo", "dqn"):
        model = _masked_model(algorithm)
        model.epsilon = 1.0  # DQN: every draw explores
        out = export(model, str(tmp_path / algorithm), format="saved_model")
        valid = np.zeros((4000, 16), bool)
        valid[:, [2, 9]] = True
        got = load(out, "sample")(obs=np.zeros(4000, np.int64), action_masks=valid,
                                  seed=np.array([1, 2], np.int64))["actions"]
        assert set(got.tolist()) == {2, 9}, algorithm


@pytest.mark.parametrize("source", ["method", "info"])
def test_dqn_never_takes_a_masked_action_exploring_or_greedy(source):
    """Epsilon falls from 1 (all exploring) to 0.05 (mostly greedy) over the run: neither
    the random choice nor the argmax ever lands on a masked action."""
    from rlbase.dqn import dqn

    venv, envs = grid_envs()
    dqn.learn("mlp", venv, total_timesteps=3000, seed=0, learning_starts=200, batch_size=16,
              exploration_fraction=0.5, exploration_final_eps=0.05, action_masks=source,
              best_model_interval=None, **QUIET)
    assert sum(e.total_steps for e in envs) >= 3000
    assert [e.invalid_taken for e in envs] == [0, 0, 0, 0]
    venv, envs = grid_envs()  # unmasked, it takes them: the count is not 0 by construction
    with pytest.warns(UserWarning, match="action_masks=False"):
        dqn.learn("mlp", venv, total_timesteps=1000, seed=0, learning_starts=200,
                  batch_size=16, best_model_interval=None, **QUIET)
    assert sum(e.invalid_taken for e in envs) > 300


def test_q_network_masks_by_hand():
    """The greedy action is the best valid one even when a masked action scores higher;
    exploring draws uniformly among the valid ones (each of 2 valid of 16 about half the
    time); predict() and evaluate_policy() take masks; export refuses a masked model."""
    from rlbase import DQN, QRDQN
    from rlbase.common.envs.env_util import make_vec_env

    venv, _ = grid_envs(2)
    model = DQN("MlpPolicy", venv, seed=0, action_masks=True, learning_starts=10)
    inner = model.model
    q = np.zeros((1, 16), np.float32)
    q[0, [2, 5, 9]] = [1.0, 3.0, 2.0]
    inner.q_values = lambda obs, perturbed=False: np.repeat(q, len(obs), axis=0)
    valid = np.zeros((1, 16), bool)
    valid[0, [2, 9]] = True
    greedy, qmax = inner.act(np.zeros((1,)), 0.0, action_masks=valid)
    assert greedy.tolist() == [9] and qmax.tolist() == [2.0]
    drawn, _ = inner.act(np.zeros((4000,)), 1.0, action_masks=np.repeat(valid, 4000, axis=0))
    assert set(drawn.tolist()) == {2, 9} and 0.45 < np.mean(drawn == 9) < 0.55
    action, _ = model.predict(0, action_masks=valid[0], deterministic=True)
    assert int(action) == 9
    eval_env, envs = grid_envs(1)
    evaluate_policy(model, eval_env, 2, deterministic=False)
    assert envs[0].invalid_taken == 0
    assert inner.policy_graph().action_mask_size == 16
    qrdqn = QRDQN("MlpPolicy", venv, seed=0, action_masks="method", n_quantiles=3)
    assert qrdqn.model.action_masking == "method"
    with pytest.raises(RLBaseError, match="no action_masks\\(\\) method"):
        DQN("MlpPolicy", make_vec_env("CartPole-v1"), action_masks=True).learn(64)


def test_taxi_reports_its_mask_in_info():
    """Taxi (gymnasium) has no action_masks() method: True finds its info['action_mask']."""
    venv = DummyVecEnv([lambda: gym.make("Taxi-v4")] * 2)
    model = ppo.learn("mlp", venv, total_timesteps=512, seed=0, nsteps=256, action_masks=True,
                      **QUIET)
    obs = venv.reset()
    masks = np.stack([info["action_mask"] for info in venv.reset_infos])
    actions = model.step(obs, action_masks=masks)[0]
    assert masks[np.arange(2), actions].all()


GRID_BUDGET = 8192


def _final_return(action_masks, seed):
    venv, _ = grid_envs()
    model = ppo.learn("mlp", venv, total_timesteps=GRID_BUDGET, seed=seed, nsteps=128,
                      ent_coef=0.01, action_masks=action_masks, **QUIET)
    return evaluate_policy(model, DummyVecEnv([MaskedGridEnv]), 10)[0]


@pytest.mark.slow
def test_masks_learn_the_grid_faster():
    """PPO on the 6x6 grid with 12 decoy actions, 8192 steps, 3 seeds (~14 s a run here):
    with masks every seed walks the shortest path (return 1 - 10 * 0.01 = 0.9); without,
    measured -0.5 for every seed (it never reaches the goal in 50 steps; it does by ~20k
    steps), which the threshold 0.8 fails."""
    masked = [_final_return(True, seed) for seed in range(3)]
    unmasked = [_final_return(False, seed) for seed in range(3)]
    assert min(masked) >= 0.8, masked
    assert np.mean(masked) > np.mean(unmasked) + 0.5, (masked, unmasked)
