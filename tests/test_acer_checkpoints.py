"""ACER's model files and resumable checkpoints: save/load round trips by every path, exact
restore of model, averaged policy, optimizer, replay buffer, counters and generators; exact
continuation; Ctrl-C (a stop request); non-finite losses; and SIGKILL then ``--resume``
through the CLI."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest
from fault_envs import FaultyEnv
from identity_envs import EndsAtThree
from process_util import ENV, ROOT, kill_after_checkpoints

from rlbase import registry
from rlbase.acer.acer import learn
from rlbase.common.envs.make import make_vec_env
from rlbase.common.errors import NonFiniteError, RLBaseError
from rlbase.common.io.checkpoint import list_checkpoints
from rlbase.common.io.serialization import load_file
from rlbase.common.loops.signals import clear_stop, request_stop
from rlbase.common.vec_env import DummyVecEnv, VecMonitor

# 2 envs x 5 steps: 10 env steps per update; a 10-rollout buffer that wraps within 200 steps.
SMALL = dict(network="mlp", nsteps=5, buffer_size_per_env=50, replay_start=10, replay_ratio=2,
             log_interval=10**9, jit_compile=False)


def venv(mode: str = "ok", at: int = 3):
    # Episodes are cut by a time limit every 20 steps: replayed truncations are exercised.
    return VecMonitor(DummyVecEnv([lambda: FaultyEnv(0, mode, 1, at),
                                   lambda: FaultyEnv(1, mode, 1, at)]))


def arrays_of(variables) -> list[np.ndarray]:
    return [np.array(v.numpy()) for v in variables]


def assert_all_equal(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    assert len(a) == len(b) and len(a) > 0
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


# ---- model files ---------------------------------------------------------------------------


def test_save_load_round_trip_by_every_path(tmp_path):
    env = make_vec_env("CartPole-v1", num_env=2, seed=0)
    model = learn("mlp", env, seed=0, total_timesteps=200, nsteps=10, replay_start=20,
                  buffer_size_per_env=100, value_network="copy", **{"log_interval": 10**9})
    path = str(tmp_path / "acer.zip")
    model.save(path)
    # The group names of files written before the one contract, so those still load.
    assert {k.split("/")[0] for k in model.parameter_arrays()} == \
        {"policy", "optimizer", "average"}
    assert load_file(path)[0]["network_kwargs"] == {"value_network": "copy"}
    obs = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
    state, mask = model.initial_states(64), np.zeros(64, np.float32)

    def assert_acts_like(other):
        np.testing.assert_array_equal(other.step(obs, deterministic=True)[0],
                                      model.step(obs, deterministic=True)[0])
        np.testing.assert_allclose(other.value(obs), model.value(obs), rtol=1e-6)
        np.testing.assert_allclose(other.act_with_probabilities(obs, state, mask)[1],
                                   model.act_with_probabilities(obs, state, mask)[1],
                                   rtol=1e-6)
        assert_all_equal(arrays_of(other.average.trainable_variables + other.optimizer.variables),
                         arrays_of(model.average.trainable_variables + model.optimizer.variables))
        assert other.num_timesteps == model.num_timesteps == 200

    # By file, into a model built with other weights.
    fresh = learn("mlp", env, seed=5, total_timesteps=0, nsteps=10, value_network="copy",
                  log_interval=10**9)
    assert not np.allclose(fresh.value(obs), model.value(obs))
    fresh.load(path)
    assert_acts_like(fresh)
    # Rebuilt from the file alone (its network, value_network included, and settings).
    assert_acts_like(registry.load(path))
    # learn() with total_timesteps=0 loads and trains nothing.
    loaded = learn("mlp", env, seed=1, total_timesteps=0, load_path=path, log_interval=10**9)
    assert_acts_like(loaded)
    resumed = learn("mlp", env, seed=1, total_timesteps=100, load_path=path,
                    log_interval=10**9)
    assert resumed.num_timesteps == 300
    with pytest.raises(RLBaseError, match="observation space"):
        learn("mlp", make_vec_env("Acrobot-v1", num_env=2, seed=0), total_timesteps=10,
              load_path=path, log_interval=10**9)


# ---- checkpoints ---------------------------------------------------------------------------


def test_resume_restores_everything_bit_for_bit(tmp_path):
    """Resuming with nothing left to train hands back exactly the state that was saved (the
    last checkpoint falls on the last update): a run seeded differently gets it all back."""
    folder = str(tmp_path / "ckpt")
    model = learn(env=venv(), seed=3, total_timesteps=200, checkpoint_interval=50,
                  checkpoint_path=folder, **SMALL)
    assert [s for s, _ in list_checkpoints(folder)] == [150, 200]  # the newest 2 are kept
    np_state, py_state = np.random.get_state()[1].copy(), random.getstate()
    buf = model.replay_buffer
    assert buf.num_in_buffer == buf.slots == 10 and buf.next_idx == 0  # it wrapped around
    assert buf.final_frames  # truncated steps' final observations are kept

    again = learn(env=venv(), seed=99, total_timesteps=200, checkpoint_path=folder,
                  resume=True, **SMALL)
    assert again.num_timesteps == model.num_timesteps == 200
    assert_all_equal(arrays_of(model.policy.weights), arrays_of(again.policy.weights))
    assert_all_equal(arrays_of(model.average.trainable_variables),
                     arrays_of(again.average.trainable_variables))
    assert_all_equal(arrays_of(model.optimizer.variables), arrays_of(again.optimizer.variables))
    assert int(again.optimizer.iterations.numpy()) > 20  # on-policy and replay updates
    np.testing.assert_array_equal(model.policy.sample_seed.numpy(),
                                  again.policy.sample_seed.numpy())
    np.testing.assert_array_equal(np.random.get_state()[1], np_state)
    assert random.getstate() == py_state
    assert model.replay_rng.bit_generator.state == again.replay_rng.bit_generator.state
    assert model.calls.actor.rng.bit_generator.state == \
        again.calls.actor.rng.bit_generator.state
    new = again.replay_buffer
    for name in ("frames", "actions", "rewards", "dones", "truncated", "mus", "starts",
                 "states"):
        np.testing.assert_array_equal(getattr(buf, name), getattr(new, name))
    for name in ("final_frames", "final_states"):
        old, restored = getattr(buf, name), getattr(new, name)
        assert sorted(old) == sorted(restored)
        assert_all_equal([old[k] for k in sorted(old)], [restored[k] for k in sorted(old)])
    assert (new.next_idx, new.num_in_buffer) == (buf.next_idx, buf.num_in_buffer)
    # The numpy act path was refreshed from the restored weights.
    obs = np.zeros((2, 2), np.float32)
    np.testing.assert_array_equal(model.calls.actor.params(obs), again.calls.actor.params(obs))


def exact_venv():
    # Deterministic observations; every episode lasts 3 steps (one cut by a time limit), so a
    # checkpoint after whole 3-step rollouts falls between episodes and the env's reset on
    # resuming changes nothing.
    return VecMonitor(DummyVecEnv([lambda: EndsAtThree(False), lambda: EndsAtThree(True)]))


def test_resume_continues_exactly(tmp_path):
    exact = dict(network="mlp", nsteps=3, buffer_size_per_env=30, replay_start=6, replay_ratio=2,
                 log_interval=10**9, jit_compile=False, lr=1e-2)
    straight = learn(env=exact_venv(), seed=0, total_timesteps=60, **exact)
    folder = str(tmp_path)
    # The same run, stopped after its checkpoint at 30 steps (as a kill would).
    learn(env=exact_venv(), seed=0, total_timesteps=60, checkpoint_interval=30,
          checkpoint_path=folder, callback=lambda m, info: m.num_timesteps < 30, **exact)
    assert [s for s, _ in list_checkpoints(folder)] == [30]
    resumed = learn(env=exact_venv(), seed=7, total_timesteps=60, checkpoint_path=folder,
                    resume=True, **exact)
    assert resumed.num_timesteps == straight.num_timesteps == 60
    assert_all_equal(arrays_of(straight.policy.weights + straight.average.trainable_variables
                               + straight.optimizer.variables),
                     arrays_of(resumed.policy.weights + resumed.average.trainable_variables
                               + resumed.optimizer.variables))
    assert straight.replay_rng.bit_generator.state == resumed.replay_rng.bit_generator.state


def test_resume_continues_the_count_and_the_schedule(tmp_path):
    folder = str(tmp_path)
    learn(env=venv(), seed=0, total_timesteps=100, checkpoint_interval=50,
          checkpoint_path=folder, **SMALL)
    seen = []
    model = learn(env=venv(), seed=0, total_timesteps=150, checkpoint_interval=50,
                  checkpoint_path=folder, resume=True,
                  callback=lambda m, info: seen.append((info["iteration"], m.num_timesteps,
                                                        info["learning_rate"])),
                  **SMALL)
    assert [s[:2] for s in seen] == [(u, 10 * u) for u in range(11, 16)]  # not 1..5
    # The linear schedule over the whole run: 7e-4 * (1 - steps before the update / 150).
    np.testing.assert_allclose([s[2] for s in seen],
                               [7e-4 * (1 - 10 * (u - 1) / 150) for u in range(11, 16)])
    assert model.num_timesteps == 150
    meta = load_file(list_checkpoints(folder)[-1][1])[0]
    assert meta["resume"]["loop"]["iterations"] == 15 and meta["num_timesteps"] == 150


def test_resume_with_an_empty_folder_starts_from_scratch(tmp_path):
    model = learn(env=venv(), seed=0, total_timesteps=30, checkpoint_path=str(tmp_path / "x"),
                  resume=True, **SMALL)
    assert model.num_timesteps == 30


def test_resume_needs_a_replay_buffer_when_replaying(tmp_path):
    folder = str(tmp_path)
    learn(env=venv(), seed=0, total_timesteps=20, checkpoint_interval=10,
          checkpoint_path=folder, **{**SMALL, "replay_ratio": 0})
    with pytest.raises(RLBaseError, match="holds no replay buffer .*replay_ratio=0"):
        learn(env=venv(), seed=0, total_timesteps=40, checkpoint_path=folder, resume=True,
              **SMALL)
    with pytest.raises(RLBaseError, match="checkpoint_interval .* got -1"):
        learn(env=venv(), total_timesteps=20, checkpoint_interval=-1, checkpoint_path=folder,
              **SMALL)


def test_stop_request_checkpoints_and_returns(tmp_path):
    """Ctrl-C sets the stop request: the loop ends after the update, writes a checkpoint when
    checkpoints are active and returns the model."""
    def stop_at_3(model, info):
        if info["iteration"] == 3:
            request_stop()

    try:
        model = learn(env=venv(), seed=0, total_timesteps=10**6, checkpoint_path=str(tmp_path),
                      callback=stop_at_3, **SMALL)
    finally:
        clear_stop()
    assert model.num_timesteps == 30
    assert [s for s, _ in list_checkpoints(str(tmp_path))] == [30]
    # Without a checkpoint folder or interval, a stop writes nothing.
    model = learn(env=venv(), seed=0, total_timesteps=10**6, **SMALL,
                  callback=lambda m, info: info["iteration"] < 2)
    assert model.num_timesteps == 20


def test_non_finite_loss_names_the_loss_and_update_and_the_checkpoint_stays_usable(tmp_path):
    folder = str(tmp_path)
    # Env 1's reward is 1e30 from its step 58 on (update 12): its squared Q error overflows.
    with pytest.raises(NonFiniteError, match=r"acer: value_loss became (inf|nan) in the "
                                             r"on-policy update of iteration 12 \(120 "
                                             r"timesteps\)$"):
        learn(env=venv("huge_reward", 58), seed=0, total_timesteps=1000,
              checkpoint_interval=20, checkpoint_path=folder, **SMALL)
    steps, latest = list_checkpoints(folder)[-1]
    assert steps == 100  # update 12 wrote nothing: its weights are already poisoned
    meta, arrays, _ = load_file(latest)
    assert meta["resume"]["loop"]["iterations"] == 10
    assert all(np.isfinite(a).all() for k, a in arrays.items()
               if k.startswith(("policy/", "average/")))


# ---- the CLI: SIGKILL, then --resume -----------------------------------------------------


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "rlbase.run", "--alg=acer", "--env=CartPole-v1",
            "--no_progress", "--num_env=2", "--nsteps=5", "--buffer_size_per_env=5000",
            "--replay_start=50", "--log_interval=20", *args]


@pytest.mark.slow  # two CLI processes that each start TensorFlow: ~30 s on a loaded machine
def test_sigkill_then_cli_resume_continues_from_the_last_checkpoint(tmp_path):
    ckpt, interval = tmp_path / "ckpt", 500
    with open(tmp_path / "first.txt", "w") as out:
        first = subprocess.Popen(cli("--num_timesteps=1e6", "--seed=0",
                                     f"--checkpoint_interval={interval}",
                                     f"--checkpoint_path={ckpt}"),
                                 stdout=out, stderr=subprocess.STDOUT, env=ENV, cwd=ROOT)
    steps, latest = kill_after_checkpoints(first, ckpt, tmp_path / "first.txt", 180)
    before = load_file(latest)[0]["resume"]["loop"]
    assert steps >= 2 * interval and steps % interval == 0
    assert before["iterations"] == steps // 10
    assert before["model"]["replay"]["num_in_buffer"] == steps // 10

    total, saved = steps + 2 * interval, tmp_path / "final.zip"
    proc = subprocess.run(cli(f"--num_timesteps={total}", "--seed=1",
                              f"--checkpoint_interval={interval}", f"--checkpoint_path={ckpt}",
                              "--resume", f"--log_path={tmp_path / 'log'}",
                              f"--save_path={saved}"),
                          capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"Resumed from {latest} at {steps} timesteps" in proc.stdout
    assert load_file(saved)[0]["num_timesteps"] == total  # the count went on
    rows = (tmp_path / "log" / "progress.csv").read_text().splitlines()
    col = rows[0].split(",").index("time/total_timesteps")
    logged = [float(r.split(",")[col]) for r in rows[1:]]
    assert logged and logged[0] > steps and logged[-1] == total
    final = load_file(list_checkpoints(str(ckpt))[-1][1])[0]["resume"]["loop"]
    # The replay buffer came back: it holds the rollouts from before the kill too.
    assert final["iterations"] == total // 10
    assert final["model"]["replay"]["num_in_buffer"] == total // 10


def test_a_file_saved_with_baselines_names_loads(tmp_path):
    # Files written before the typed config kept rprop_alpha, rprop_epsilon and alpha (the
    # average's decay): they load, converted silently (tau = 1 - alpha).
    import warnings

    from rlbase import ACER
    from rlbase.common.io.serialization import save_file

    env = make_vec_env("CartPole-v1", num_env=2, seed=0)
    model = learn(env=env, seed=0, total_timesteps=20, rms_alpha=0.9, rms_epsilon=1e-3,
                  tau=0.2, **SMALL)
    path = str(tmp_path / "old.zip")
    model.save(path)
    meta, arrays, _ = load_file(path)
    hp = meta["hyperparameters"]
    hp["rprop_alpha"], hp["rprop_epsilon"] = hp.pop("rms_alpha"), hp.pop("rms_epsilon")
    hp["alpha"] = 1 - hp.pop("tau")
    hp["total_timesteps"] = 20  # older files kept learn()'s every argument
    save_file(path, meta, arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        loaded = registry.load(path)
        by_class = ACER.load(path)
        resumed = learn(env=env, seed=0, total_timesteps=10, load_path=path, **SMALL)
    for m in (loaded, by_class.model):
        assert (m.config.rms_alpha, m.config.rms_epsilon) == (0.9, 1e-3)
        assert m.config.tau == m.tau == 1 - (1 - 0.2)
        assert (m.optimizer.rho, m.optimizer.epsilon) == (0.9, 1e-3)
        assert_all_equal(arrays_of(m.average.trainable_variables),
                         arrays_of(model.average.trainable_variables))
    assert resumed.num_timesteps == 30
