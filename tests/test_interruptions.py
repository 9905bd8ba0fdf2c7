"""What a run keeps when it is interrupted (rlbase/docs/interruptions.md): resumed logs, full
disks, concurrent runs, corrupt checkpoints, and memory refused up front."""

from __future__ import annotations

import contextlib
import csv
import errno
import json
import os
import re
import signal
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pytest
from process_util import ENV, ROOT, cli_in_process, kill_after_checkpoints, start_cli

from rlbase.common.buffers.replay_buffer import PrioritizedReplayBuffer, ReplayBuffer
from rlbase.common.errors import RLBaseError
from rlbase.common.io import serialization
from rlbase.common.io.checkpoint import (
    list_checkpoints,
    object_state,
    restore_object_state,
)
from rlbase.common.logs import logger
from rlbase.common.vec_env import DummyVecEnv, VecMonitor
from rlbase.run import check_writable, main

A2C = ["--alg=a2c", "--env=CartPole-v1", "--num_env=2", "--seed=0", "--log_interval=50",
       "--no_progress"]


@pytest.fixture(autouse=True)
def _fresh_logger():
    yield
    logger.reset()
    logger._warned.clear()


def run(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rlbase.run", *args], capture_output=True,
                          text=True, env=ENV, cwd=ROOT, timeout=timeout)


def progress_rows(folder) -> list[dict[str, str]]:
    with open(os.path.join(folder, "progress.csv"), newline="") as f:
        return list(csv.DictReader(f))


def steps_of(rows) -> list[int]:
    return [int(r["time/total_timesteps"]) for r in rows]


def log_table_steps(folder) -> list[int]:
    text = open(os.path.join(folder, "log.txt")).read()
    return [int(m) for m in re.findall(r"^\| time/total_timesteps +\| (\d+)", text, re.M)]


def monitor_lines(folder) -> list[str]:
    return open(os.path.join(folder, "0.monitor.csv")).read().splitlines()


# ---- --resume appends to the run's own history -------------------------------------------


def test_resumed_run_keeps_every_row_before_the_checkpoint_and_drops_those_after(tmp_path):
    """The first run checkpoints at 2000 steps and logs on to 3000 (rows 2500 and 3000 are
    past the checkpoint, as when a run is killed there); resumed to 4000, its files hold the
    first run's rows up to 2000 unchanged, then the resumed rows: the uninterrupted run's
    steps, no duplicate, no gap."""
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    done = run([*A2C, "--num_timesteps=4000", f"--log_path={whole}"])
    assert done.returncode == 0, done.stderr[-2000:]
    first = run([*A2C, "--num_timesteps=3000", "--checkpoint_interval=2000",
                 f"--log_path={cut}"])
    assert first.returncode == 0, first.stderr[-2000:]
    before, monitor_before = progress_rows(cut), monitor_lines(cut)
    checkpoints = list_checkpoints(str(cut / "checkpoints"))
    assert steps_of(before)[-1] == 3000 and [s for s, _ in checkpoints] == [2000, 3000]
    os.remove(checkpoints[-1][1])  # killed before its end: 2000 is its newest checkpoint

    resumed = run([*A2C, "--num_timesteps=4000", "--checkpoint_interval=2000", "--resume",
                   f"--log_path={cut}"])
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    after = progress_rows(cut)
    assert steps_of(after) == steps_of(progress_rows(whole)) == \
        [10, 500, 1000, 1500, 2000, 2500, 3000, 3500, 4000]
    kept = [r for r in before if int(r["time/total_timesteps"]) <= 2000]
    assert after[:len(kept)] == kept  # the rows before the checkpoint, value for value
    assert log_table_steps(cut) == steps_of(after)
    # monitor.csv: the episodes counted at the checkpoint, unchanged, then the resumed ones:
    # one data row per episode of the final count (none lost, none twice).
    at_ckpt = int(kept[-1]["time/episodes"])
    lines = monitor_lines(cut)
    assert lines[:2 + at_ckpt] == monitor_before[:2 + at_ckpt]
    assert len(lines) - 2 == int(after[-1]["time/episodes"]) > at_ckpt


def test_sigkilled_run_resumed_has_one_row_per_step_and_keeps_the_rows_before(tmp_path):
    log = tmp_path / "log"
    proc = start_cli([*A2C, "--num_timesteps=1e7", "--checkpoint_interval=1000",
                      f"--log_path={log}"], tmp_path / "first.txt")
    steps, _ = kill_after_checkpoints(proc, log / "checkpoints", tmp_path / "first.txt", 120)
    before, monitor_before = progress_rows(log), monitor_lines(log)
    resumed = run([*A2C, f"--num_timesteps={steps + 1000}", "--checkpoint_interval=1000",
                   "--resume", f"--log_path={log}"])
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    after = progress_rows(log)
    # a row every 50 updates of 2 x 5 steps, and the first update's
    assert steps_of(after) == [10] + list(range(500, steps + 1001, 500))
    kept = [r for r in before if int(r["time/total_timesteps"]) <= steps]
    assert after[:len(kept)] == kept
    assert log_table_steps(log) == steps_of(after)
    rows_at_ckpt = int(kept[-1]["time/episodes"])
    lines = monitor_lines(log)
    assert lines[:2 + rows_at_ckpt] == monitor_before[:2 + rows_at_ckpt]
    assert len(lines) - 2 == int(after[-1]["time/episodes"])


def test_logger_append_drops_rows_past_the_step_in_every_file_format(tmp_path):
    def dump(steps, x):
        logger.logkv("time/total_timesteps", steps)
        logger.logkv("x", x)
        logger.dumpkvs()
        logger.log(f"text after {steps}")

    logger.configure(str(tmp_path), ["log", "csv", "json"])
    for steps in (10, 20, 30):
        dump(steps, steps)
    logger.configure(str(tmp_path), ["log", "csv", "json"], append=True)
    logger.get_current().truncate_after(20)
    dump(30, 31)
    logger.reset()
    assert (tmp_path / "progress.csv").read_text().splitlines() == [
        "time/total_timesteps,x", "10,10", "20,20", "30,31"]
    assert [json.loads(line) for line in (tmp_path / "progress.json").read_text().splitlines()
            ] == [{"time/total_timesteps": s, "x": x} for s, x in ((10, 10), (20, 20), (30, 31))]
    text = (tmp_path / "log.txt").read_text()
    assert re.findall(r"^\| x +\| (\d+)", text, re.M) == ["10", "20", "31"]
    assert text.count("text after 30") == 1 and "text after 30" in text.split("| 31")[1]


# ---- corrupt checkpoints, empty folders, --resume=must -----------------------------------


def test_corrupt_newest_checkpoint_falls_back_to_the_newest_intact_one(tmp_path, capsys):
    from rlbase.a2c.a2c import learn

    folder = str(tmp_path / "ckpt")
    learn("mlp", "CartPole-v1", total_timesteps=300, seed=0, nsteps=5, checkpoint_interval=100,
          checkpoint_path=folder)
    (old, _), (newest, path) = list_checkpoints(folder)[-2:]
    with open(path, "r+b") as f:  # a checkpoint cut short (a disk that filled mid-write)
        f.truncate(os.path.getsize(path) // 2)
    intact = list_checkpoints(folder)[-2][1]
    capsys.readouterr()
    model = learn("mlp", "CartPole-v1", total_timesteps=old + 10, seed=0, nsteps=5,
                  checkpoint_interval=0, checkpoint_path=folder, resume=True)
    out = capsys.readouterr().out
    assert f"Skipped unreadable checkpoint(s) {path}" in out
    assert f"Resumed from {intact} at {old} timesteps" in out
    assert model.num_timesteps == old + 10


def test_resume_into_an_empty_folder_says_so_and_must_refuses(tmp_path, capsys):
    empty = tmp_path / "nothing-here"
    main([*A2C, "--num_timesteps=20", f"--checkpoint_path={empty}", "--resume"])
    assert f"No checkpoint in {empty}: starting from scratch" in capsys.readouterr().out
    empty = tmp_path / "nothing-here-either"  # the run above left its final checkpoint
    with pytest.raises(RLBaseError, match=f"--resume=must: no checkpoint in {empty}"):
        main([*A2C, "--num_timesteps=20", f"--checkpoint_path={empty}", "--resume=must"])


# ---- a full disk -------------------------------------------------------------------------


class FullDisk:
    """A file whose writes fail with ENOSPC, as on a full disk."""

    def __init__(self, file):
        self._file = file
        self.name = file.name

    def write(self, text):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def flush(self):
        pass

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def full_disk_open(real_open=open):
    def fake_open(path, mode="r", *args, **kwargs):  # writes fail, reads work
        f = real_open(path, mode, *args, **kwargs)
        return FullDisk(f) if any(m in mode for m in "wa") else f
    return fake_open


def test_full_disk_for_logs_monitor_and_checkpoints_warns_once_and_saves_the_model(
        tmp_path, monkeypatch, capsys):
    """progress.csv, log.txt, monitor.csv and every checkpoint fail with ENOSPC: training
    goes on to the end with one warning per output, and the model at a healthy --save_path
    is written."""
    from rlbase.common.envs import monitor  # writes VecMonitor's file

    monkeypatch.setattr(logger, "open", full_disk_open(), raising=False)
    monkeypatch.setattr(monitor, "open", full_disk_open(), raising=False)
    real_atomic = serialization.atomic_write

    @contextlib.contextmanager
    def no_space_for_checkpoints(path):
        if "checkpoint_" in os.fspath(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(path))
        with real_atomic(path) as tmp:
            yield tmp

    monkeypatch.setattr(serialization, "atomic_write", no_space_for_checkpoints)
    save = tmp_path / "models" / "m.zip"
    model = main([*A2C, "--num_timesteps=1000", "--checkpoint_interval=200",
                  f"--log_path={tmp_path / 'log'}", f"--save_path={save}"])
    assert model.num_timesteps == 1000 and save.exists()
    err = capsys.readouterr().err.splitlines()
    warnings = [line for line in err if line.startswith("rlbase: warning:")]
    assert len(warnings) == 4, err  # progress.csv, log.txt, monitor.csv, checkpoints: once each
    assert all("No space left on device" in w for w in warnings)
    assert sum("could not write checkpoint" in w for w in warnings) == 1
    assert sum("monitor.csv" in w for w in warnings) == 1


def test_monitor_write_failure_keeps_the_statistics(tmp_path, capsys):
    env = VecMonitor(DummyVecEnv([lambda: gym.make("CartPole-v1")]), str(tmp_path))
    assert env.monitor_file is not None
    env.monitor_file._file = FullDisk(env.monitor_file._file)
    env.monitor_file._writer = csv.writer(env.monitor_file._file)
    env.reset()
    for _ in range(300):
        env.step(np.zeros(1, dtype=np.int64))
    assert len(env.episode_returns) > 3  # every episode counted after the file failed
    assert capsys.readouterr().err.count("rlbase: warning:") == 1
    env.close()


def test_final_save_that_cannot_be_written_exits_non_zero(tmp_path, monkeypatch, capsys):
    real_atomic = serialization.atomic_write
    target = str(tmp_path / "m.zip")

    @contextlib.contextmanager
    def full_at_target(path):
        if os.path.abspath(os.fspath(path)) == target:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), target)
        with real_atomic(path) as tmp:
            yield tmp

    monkeypatch.setattr(serialization, "atomic_write", full_at_target)
    with pytest.raises(SystemExit) as exit_info:
        main([*A2C, "--num_timesteps=20", f"--save_path={target}",
              f"--log_path={tmp_path / 'log'}"])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"rlbase: error: could not write {target}")
    kept = err[0].split("the model is in ")[1]
    assert os.path.exists(kept)
    os.remove(kept)


def test_unwritable_output_paths_are_refused_up_front_even_for_root():
    with pytest.raises(RLBaseError, match=r"--save_path=/proc/no/such/dir/m.zip cannot be "
                                          r"written: /proc is not writable"):
        check_writable("--save_path", "/proc/no/such/dir/m.zip", is_file=True)
    proc = run([*A2C, "--num_timesteps=20", "--log_path=/proc/no/such/dir"], timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("rlbase: error: --log_path=/proc/no/such/dir cannot")


# ---- two runs into one folder --------------------------------------------------------------


def test_a_second_run_into_the_same_log_folder_is_refused_naming_the_first(tmp_path, capsys):
    from rlbase.common.io.run_lock import LOCK_NAME

    log = tmp_path / "log"
    out = tmp_path / "first.txt"
    with open(out, "w") as f:
        first = subprocess.Popen([sys.executable, "-m", "rlbase.run", *A2C, "--num_timesteps=1e7",
                                  f"--log_path={log}"], stdout=f, stderr=subprocess.STDOUT,
                                 env=ENV, cwd=ROOT)
    try:
        end = time.monotonic() + 120
        while not (log / "progress.csv").exists():
            assert time.monotonic() < end and first.poll() is None, out.read_text()[-2000:]
            time.sleep(0.1)
        # The second and third runs in this process: the lock is a file, whoever takes it.
        code, _, err = cli_in_process(capsys, *A2C, "--num_timesteps=100", f"--log_path={log}")
        assert code == 2
        assert err.strip() == (
            f"rlbase: error: --log_path={log} is in use by another rlbase run (PID "
            f"{first.pid}): wait for it to end, or give this run another folder")
    finally:
        first.send_signal(signal.SIGKILL)  # its lock file stays behind, stale
        first.wait(30)
    assert (log / LOCK_NAME).read_text().strip() == str(first.pid)
    main([*A2C, "--num_timesteps=100", f"--log_path={log}"])  # a dead run's lock is taken over
    assert (log / LOCK_NAME).read_text().strip() == str(os.getpid())


# ---- replay buffers: checkpoints of the filled part, memory refused up front ---------------


def test_checkpoint_of_a_large_buffer_holds_only_the_filled_part_and_loads_back_exactly():
    rng = np.random.default_rng(0)
    buf = ReplayBuffer(int(2e7), (4,), np.float32)
    for _ in range(1000):
        obs = rng.normal(size=(2, 4)).astype(np.float32)
        buf.add(obs, rng.integers(0, 2, 2), rng.normal(size=2), obs + 1, rng.random(2) < 0.1,
                np.zeros(2, bool))
    meta, arrays = object_state(buf, "replay")
    per_transition = 2 * 4 * 4 + 8 + 4 + 4
    assert sum(a.nbytes for a in arrays.values()) == 2000 * per_transition  # not 2e7 x 56
    fresh = ReplayBuffer(int(2e7), (4,), np.float32)
    restore_object_state(fresh, meta, arrays, "replay")
    assert (fresh.pos, fresh.size) == (buf.pos, buf.size) == (2000, 2000)
    for name in ReplayBuffer.ring_fields:
        assert np.array_equal(getattr(fresh, name)[:2000], getattr(buf, name)[:2000])
        assert not np.count_nonzero(getattr(fresh, name)[2000:])


def test_prioritized_buffer_round_trip_is_exact_after_the_ring_wrapped():
    rng = np.random.default_rng(1)

    def make():
        return PrioritizedReplayBuffer(ReplayBuffer(100, (3,), np.float32), alpha=0.6)

    buf = make()
    for _ in range(70):  # 140 transitions: the ring wrapped
        obs = rng.normal(size=(2, 3)).astype(np.float32)
        idx, _ = buf.add(obs, rng.integers(0, 2, 2), rng.normal(size=2), obs, np.zeros(2, bool),
                         np.zeros(2, bool))
        buf.update_priorities(idx, rng.random(2) + 0.1)
    meta, arrays = object_state(buf, "replay")
    fresh = make()
    restore_object_state(fresh, meta, arrays, "replay")
    assert np.array_equal(fresh.sum_tree.tree, buf.sum_tree.tree)
    assert np.array_equal(fresh.min_tree.tree, buf.min_tree.tree)
    assert np.array_equal(fresh.storage.obs, buf.storage.obs)
    assert fresh.max_priority == buf.max_priority and fresh.storage.pos == buf.storage.pos


def test_dqn_checkpoint_of_a_2e7_buffer_is_small(tmp_path):
    from rlbase.dqn.dqn import learn

    folder = str(tmp_path / "ckpt")
    learn("mlp", "CartPole-v1", total_timesteps=2000, seed=0, buffer_size=int(2e7),
          learning_starts=500, checkpoint_interval=2000, checkpoint_path=folder)
    (steps, path), = list_checkpoints(folder)
    assert steps == 2000 and os.path.getsize(path) < 1_000_000  # was 881 MB


def test_replay_buffer_that_cannot_fit_in_memory_is_refused_up_front():
    from rlbase.dqn.dqn import learn

    start = time.monotonic()
    with pytest.raises(RLBaseError, match=r"the replay buffer needs 1,000,000,000 transitions x "
                                          r"44 bytes = 44 GB, more than the .* GB of memory "
                                          r"available: lower buffer_size"):
        # a transition: 2 observations of 4 float32, an int32 action, a reward, a done flag
        learn("mlp", "CartPole-v1", total_timesteps=100, buffer_size=int(1e9))
    assert time.monotonic() - start < 30


class HugeActions(gym.Env):
    """One observation, a Discrete action space of ``n`` actions."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def __init__(self, n: int):
        self.action_space = gym.spaces.Discrete(n)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, True, False, {}


@pytest.mark.parametrize("alg", ["a2c", "ppo", "dqn", "acer", "es"])
def test_an_action_space_whose_network_cannot_fit_is_refused_before_building(alg):
    # Discrete(1e9): a 64-wide layer to its logits is 6.4e10 parameters, 1 TB to train.
    from rlbase.registry import get_algorithm

    start = time.monotonic()
    with pytest.raises(RLBaseError, match=r"the dense layer .* x 1,000,000,000 outputs\) needs "
                                          r"[\d,]+ parameters \(weight, gradient, 2 optimizer "
                                          r"slots\) x 16 bytes = [\d.]+ TB, more than "
                                          r"[^\n]*available: use a smaller action[^\n]*$"):
        get_algorithm(alg).learn("mlp", HugeActions(10**9), total_timesteps=10)
    assert time.monotonic() - start < 30


def test_a_layer_is_checked_against_the_memory_available(monkeypatch):
    from rlbase.common.io import memory
    from rlbase.common.networks.registry import Dense

    monkeypatch.setattr(memory, "available_bytes", lambda: 10**6)
    Dense(10).build((None, 6249))  # (6249 + 1) x 10 x 16 = 1,000,000 bytes: fits
    with pytest.raises(RLBaseError, match=r"needs 125,000 parameters .* = 2 MB, more than "
                                          r"the 1 MB of memory available"):
        Dense(10).build((None, 12499))


def test_resume_after_a_finished_run_keeps_the_finished_model(tmp_path):
    # A scheduler that starts a finished job again: the run's last checkpoint is its end, so
    # --resume has nothing left to train and hands back the finished model (it went back to
    # the last periodic checkpoint and retrained, overwriting the finished model).
    args = ["--alg=a2c", "--env=CartPole-v1", "--num_timesteps=200", "--seed=0", "--num_env=2",
            "--nsteps=5", "--checkpoint_interval=128", f"--log_path={tmp_path}",
            f"--save_path={tmp_path / 'm.zip'}", "--no_progress"]
    finished = main(args)
    assert finished.num_timesteps == 200
    again = main([*args, "--resume"])
    assert again.num_timesteps == 200
    for a, b in zip(finished.get_parameters().values(), again.get_parameters().values()):
        np.testing.assert_array_equal(a, b)
