"""ACER's resumable checkpoints: exact restore of model, averaged policy, optimizer, replay
buffer, counters and generators; Ctrl-C (a stop request); non-finite losses; and SIGKILL then
``--resume`` through the CLI."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest
from fault_envs import FaultyEnv
from process_util import ENV, ROOT, kill_after_checkpoints

from rlbase.acer.acer import learn
from rlbase.common.checkpoint import list_checkpoints
from rlbase.common.errors import NonFiniteError, RLBaseError
from rlbase.common.serialization import load_file
from rlbase.common.signals import clear_stop, request_stop
from rlbase.common.vec_env import DummyVecEnv, VecMonitor

# 2 envs x 5 steps: 10 env steps per update; a 10-rollout buffer that wraps within 200 steps.
SMALL = dict(network="mlp", nsteps=5, buffer_size=50, replay_start=10, replay_ratio=2,
             log_interval=10**9, jit_compile=False)


def venv(mode: str = "ok", at: int = 3):
    return VecMonitor(DummyVecEnv([lambda: FaultyEnv(0, mode, 1, at),
                                   lambda: FaultyEnv(1, mode, 1, at)]))


def arrays_of(variables) -> list[np.ndarray]:
    return [np.array(v.numpy()) for v in variables]


def assert_all_equal(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    assert len(a) == len(b) and len(a) > 0
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


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
    for name in ("frames", "actions", "rewards", "dones", "mus", "starts", "states"):
        np.testing.assert_array_equal(getattr(buf, name), getattr(new, name))
    assert (new.next_idx, new.num_in_buffer) == (buf.next_idx, buf.num_in_buffer)
    # The numpy act path was refreshed from the restored weights.
    obs = np.zeros((2, 2), np.float32)
    np.testing.assert_array_equal(model.calls.actor.params(obs), again.calls.actor.params(obs))


def test_resume_continues_the_count_and_the_schedule(tmp_path):
    folder = str(tmp_path)
    learn(env=venv(), seed=0, total_timesteps=100, checkpoint_interval=50,
          checkpoint_path=folder, **SMALL)
    seen = []
    model = learn(env=venv(), seed=0, total_timesteps=150, checkpoint_interval=50,
                  checkpoint_path=folder, resume=True,
                  callback=lambda m, info: seen.append((info["update"], m.num_timesteps)),
                  **SMALL)
    assert seen == [(u, 10 * u) for u in range(11, 16)]  # updates 11..15, not 1..5
    assert model.num_timesteps == 150
    meta = load_file(list_checkpoints(folder)[-1][1])[0]
    assert meta["resume"]["loop"]["update"] == 15 and meta["num_timesteps"] == 150


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
        if info["update"] == 3:
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
                  callback=lambda m, info: info["update"] < 2)
    assert model.num_timesteps == 20


def test_non_finite_loss_names_the_loss_and_update_and_the_checkpoint_stays_usable(tmp_path):
    folder = str(tmp_path)
    # Env 1's reward is 1e30 from its step 58 on (update 12): its squared Q error overflows.
    with pytest.raises(NonFiniteError,
                       match=r"acer: loss_q became (inf|nan) in the on-policy update 12$"):
        learn(env=venv("huge_reward", 58), seed=0, total_timesteps=1000,
              checkpoint_interval=20, checkpoint_path=folder, **SMALL)
    steps, latest = list_checkpoints(folder)[-1]
    assert steps == 100  # update 12 wrote nothing: its weights are already poisoned
    meta, arrays, _ = load_file(latest)
    assert meta["resume"]["loop"]["update"] == 10
    assert all(np.isfinite(a).all() for k, a in arrays.items()
               if k.startswith(("policy/", "average/")))


# ---- the CLI: SIGKILL, then --resume -----------------------------------------------------


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "rlbase.run", "--alg=acer", "--env=CartPole-v1",
            "--no_progress", "--num_env=2", "--nsteps=5", "--buffer_size=5000",
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
    assert before["update"] == steps // 10 and before["replay"]["num_in_buffer"] == steps // 10

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
    assert final["update"] == total // 10 and final["replay"]["num_in_buffer"] == total // 10
