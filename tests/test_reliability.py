"""Faults a long run meets: SIGKILL and resume, Ctrl-C, kills during saves, crashing env
workers, NaN/inf, dying MPI ranks, and memory growth (hostile files: test_loader_fuzz.py)."""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest
from fault_envs import FaultyEnv
from process_util import ENV, ROOT, kill_after_checkpoints

from rlbase.common.errors import NonFiniteError, RLBaseError
from rlbase.common.io.checkpoint import Checkpointer, list_checkpoints
from rlbase.common.io.serialization import load_file, save_file
from rlbase.common.vec_env import (
    DummyVecEnv,
    EnvWorkerError,
    SubprocVecEnv,
    VecCheckFinite,
    VecMonitor,
)


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "rlbase.run", "--env=CartPole-v1", "--no_progress", *args]


def wait_for(predicate, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def popen(args: list[str], out_path) -> subprocess.Popen:
    with open(out_path, "w") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=ENV, cwd=ROOT)


# ---- kill and resume --------------------------------------------------------------------


@pytest.mark.parametrize("alg,interval,extra", [
    ("a2c", 1000, ["--num_env=2"]),
    pytest.param("dqn", 1000, ["--num_env=1", "--buffer_size=5000", "--learning_starts=500",
                               "--log_interval=5"], marks=pytest.mark.slow),
])
def test_sigkill_then_resume_continues_from_the_last_checkpoint(tmp_path, alg, interval, extra):
    ckpt_dir = tmp_path / "ckpt"
    first = popen(cli(f"--alg={alg}", "--num_timesteps=1e6", "--seed=0",
                      f"--checkpoint_interval={interval}", f"--checkpoint_path={ckpt_dir}",
                      *extra), tmp_path / "first.txt")
    steps, latest = kill_after_checkpoints(first, ckpt_dir, tmp_path / "first.txt", 120)
    loop = load_file(latest)[0]["resume"]["loop"]
    assert steps >= 2 * interval and steps % interval < interval

    total = steps + 2 * interval
    model_path = tmp_path / "final.zip"
    proc = subprocess.run(cli(f"--alg={alg}", f"--num_timesteps={total}", "--seed=1",
                              f"--checkpoint_interval={interval}",
                              f"--checkpoint_path={ckpt_dir}", "--resume",
                              f"--log_path={tmp_path / 'log'}", f"--save_path={model_path}",
                              *extra),
                          capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"Resumed from {latest} at {steps} timesteps" in proc.stdout
    meta = load_file(model_path)[0]
    assert meta["num_timesteps"] == total  # not total - steps: the count went on
    rows = (tmp_path / "log" / "progress.csv").read_text().splitlines()
    header = rows[0].split(",")
    logged = [float(r.split(",")[header.index("time/total_timesteps")]) for r in rows[1:]]
    assert logged and logged[0] > steps and logged[-1] <= total
    final = load_file(list_checkpoints(str(ckpt_dir))[-1][1])[0]["resume"]["loop"]
    if alg == "dqn":
        # The replay buffer came back: it holds steps from before the kill too.
        assert final["model"]["replay"]["size"] == min(5000, total)
        assert final["iterations"] == total  # one env: an iteration is an env step
        assert final["episodes"]["count"] > loop["episodes"]["count"]
    else:
        assert final["iterations"] == total // 10


def test_resume_restores_model_buffer_and_rngs_exactly(tmp_path):
    """Resuming with nothing left to train hands back exactly the state that was saved."""
    from rlbase.a2c.a2c import learn as a2c_learn
    from rlbase.dqn.dqn import learn as dqn_learn

    for name, learn, kwargs in (
            ("a2c", a2c_learn, dict(network="mlp", nsteps=5)),
            ("dqn", dqn_learn, dict(network="mlp", learning_starts=100, buffer_size=200,
                                    log_interval=10**9, prioritized_replay=True, train_freq=4,
                                    gradient_steps=2))):
        folder = str(tmp_path / name)
        env = VecMonitor(DummyVecEnv([lambda: FaultyEnv()]))
        model = learn(env=env, seed=3, total_timesteps=300, checkpoint_interval=100,
                      checkpoint_path=folder, **kwargs)
        np_state = np.random.get_state()[1].copy()
        weights = [v.numpy() for v in model.optimizer.variables]
        env = VecMonitor(DummyVecEnv([lambda: FaultyEnv()]))
        again = learn(env=env, seed=99, total_timesteps=300, checkpoint_path=folder,
                      resume=True, **kwargs)
        assert again.num_timesteps == model.num_timesteps == 300
        np.testing.assert_array_equal(np.random.get_state()[1], np_state)
        for a, b in zip(weights, [v.numpy() for v in again.optimizer.variables]):
            np.testing.assert_array_equal(a, b)
        if name == "dqn":
            old, new = model.replay_buffer, again.replay_buffer
            np.testing.assert_array_equal(old.storage.obs, new.storage.obs)
            np.testing.assert_array_equal(old.sum_tree.tree, new.sum_tree.tree)
            assert (old.storage.pos, old.max_priority) == (new.storage.pos, new.max_priority)
            assert model.rng.bit_generator.state == again.rng.bit_generator.state
            assert (model.epsilon, model.updates) == (again.epsilon, again.updates)
        else:
            assert again.calls.actor.rng.bit_generator.state == \
                model.calls.actor.rng.bit_generator.state
            # The TF act path's sampling counter (cnn/lstm policies) comes back too.
            np.testing.assert_array_equal(again.policy.sample_seed.numpy(),
                                          model.policy.sample_seed.numpy())


def test_checkpointer_bad_input_and_empty_folder(tmp_path):
    with pytest.raises(RLBaseError, match="checkpoint_interval .* got -5"):
        Checkpointer("a2c", str(tmp_path), -5)
    assert Checkpointer("a2c", str(tmp_path / "none"), 10).restore(object()) is None


# ---- Ctrl-C -----------------------------------------------------------------------------


def test_sigint_saves_the_model_and_exits_130(tmp_path):
    out, save = tmp_path / "out.txt", tmp_path / "model.zip"
    proc = popen(cli("--alg=a2c", "--num_timesteps=1e7", "--num_env=2",
                     f"--save_path={save}", f"--log_path={tmp_path / 'log'}"), out)
    try:
        wait_for(lambda: "time/total_timesteps" in out.read_text(), 120, "training to start")
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    finally:
        proc.kill()
    text = out.read_text()
    assert proc.returncode == 130, text[-2000:]
    assert f"saved model to {save}" in text and "Traceback" not in text
    assert load_file(save)[0]["num_timesteps"] > 0


# ---- atomic writes ----------------------------------------------------------------------

_SAVER = """
import sys, numpy as np
from rlbase.common.io.serialization import save_file
k = 0
while True:
    k += 1
    save_file(sys.argv[1], {"version": k}, {"w": np.full(1_000_000, k, np.float64)})
    print(k, flush=True)
"""


def test_kill_during_save_leaves_the_previous_file_loadable(tmp_path):
    path = tmp_path / "model.zip"
    rng = np.random.default_rng(0)
    versions = []
    for trial in range(4):
        out = tmp_path / f"out{trial}.txt"
        proc = popen([sys.executable, "-c", _SAVER, str(path)], out)
        try:
            wait_for(lambda out=out: len(out.read_text().split()) >= 2, 60, "two saves")
            time.sleep(rng.uniform(0.0, 0.2))  # a moment somewhere inside a later save
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        meta, arrays, _ = load_file(path)
        assert np.all(arrays["w"] == meta["version"])  # a whole file, never a mix
        versions.append(meta["version"])
    assert max(versions) >= 2


def test_failed_writes_keep_the_old_file(tmp_path, monkeypatch):
    from rlbase.common.vec_env import VecNormalize

    vn_path, file_path = tmp_path / "vn.zip", tmp_path / "f.zip"
    venv = VecNormalize(DummyVecEnv([lambda: FaultyEnv()]))
    venv.reset()
    venv.save(vn_path)
    save_file(file_path, {"v": 1}, {"w": np.ones(10)})

    original = zipfile.ZipFile.writestr

    def broken(self, name, data, *args, **kwargs):
        if name == "arrays.npz":  # the metadata is already in the temporary file
            raise OSError("disk full")
        return original(self, name, data, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "writestr", broken)
    for write in (lambda: venv.save(vn_path), lambda: save_file(file_path, {"v": 2}, {})):
        with pytest.raises(OSError, match="disk full"):
            write()
    monkeypatch.undo()
    VecNormalize.load(vn_path, DummyVecEnv([lambda: FaultyEnv()]))
    assert load_file(file_path)[0]["v"] == 1
    assert sorted(os.listdir(tmp_path)) == ["f.zip", "vn.zip"]  # no temporary left behind


# ---- env worker faults -------------------------------------------------------------------


@pytest.mark.parametrize("mode,fragments", [
    ("raise", ["env 1 raised ValueError", "env exploded at step 3"]),
    ("exit", ["env 1 died", "exit code 7"]),
])
def test_crashing_env_worker_gives_a_clear_error_quickly(mode, fragments):
    venv = SubprocVecEnv([lambda i=i: FaultyEnv(i, mode) for i in range(3)])
    venv.reset()
    start = time.monotonic()
    with pytest.raises(EnvWorkerError) as info:
        for _ in range(10):
            venv.step(np.zeros(3, np.int64))
    assert time.monotonic() - start < 5
    for fragment in fragments:
        assert fragment in str(info.value)
    assert multiprocessing.active_children() == []  # every worker stopped
    venv.close()  # closing a failed env is harmless


def test_hung_env_worker_times_out():
    venv = SubprocVecEnv([lambda i=i: FaultyEnv(i, "hang") for i in range(2)], timeout=1.0)
    venv.reset()
    with pytest.raises(EnvWorkerError, match="did not answer step within 1.0 s"):
        for _ in range(5):
            venv.step(np.zeros(2, np.int64))
    assert multiprocessing.active_children() == []


_ORPHAN = """
import os, sys, time
from rlbase.common.vec_env import SubprocVecEnv
from fault_envs import FaultyEnv
venv = SubprocVecEnv([FaultyEnv, FaultyEnv])
venv.reset()
print(*[p.pid for p in venv.vector_env.processes], flush=True)
time.sleep(600)
"""


def test_workers_do_not_outlive_a_killed_main_process(tmp_path):
    out = tmp_path / "pids.txt"
    proc = popen([sys.executable, "-c", _ORPHAN], out)
    try:
        wait_for(lambda: len(out.read_text().split("\n", 1)[0].split()) == 2, 60,
                 "workers to start")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    # the first line: the workers may write below it (stderr shares the file) once orphaned
    pids = [int(p) for p in out.read_text().splitlines()[0].split()]

    def gone() -> bool:
        return not any(os.path.exists(f"/proc/{pid}") and
                       open(f"/proc/{pid}/stat").read().split()[2] != "Z" for pid in pids)

    wait_for(gone, 10, "orphaned workers to exit")


# ---- NaN / inf ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode,what", [("nan_reward", "reward"), ("nan_obs", "observation")])
def test_non_finite_env_output_names_env_and_step(mode, what):
    venv = VecCheckFinite(DummyVecEnv([lambda i=i: FaultyEnv(i, mode, 1, 7) for i in range(3)]))
    venv.reset()
    with pytest.raises(NonFiniteError, match=f"env 1 returned a non-finite {what} at step 7"):
        for _ in range(10):
            venv.step(np.zeros(3, np.int64))


def test_cli_wraps_envs_in_the_finite_check_by_default():
    from rlbase.cli_args import common_arg_parser
    from rlbase.common.vec_env import find_wrapper
    from rlbase.run import build_env

    parser = common_arg_parser()
    for flags, expected in (([], True), (["--no-check_finite"], False)):
        args = parser.parse_known_args(["--num_env=1", *flags])[0]
        env = build_env(args, "classic_control", 1, 0)
        assert (find_wrapper(env, VecCheckFinite) is not None) == expected
        env.close()


@pytest.mark.slow
def test_cli_checks_env_output_by_default(tmp_path):
    code = ("import sys; import fault_envs; from rlbase.run import cli; "
            "sys.argv = ['rlbase.run'] + sys.argv[1:]; cli()")
    proc = subprocess.run([sys.executable, "-c", code, "--alg=a2c", "--env=FaultyNanReward-v0",
                           "--num_timesteps=1000", "--num_env=1", "--env_type=classic_control",
                           "--no_progress"],
                          capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "env 0 returned a non-finite reward at step 50" in proc.stderr


def test_non_finite_loss_stops_and_the_last_checkpoint_stays_usable(tmp_path):
    from rlbase.a2c.a2c import Model, learn

    folder = str(tmp_path)
    env = DummyVecEnv([lambda: FaultyEnv(0, "huge_reward", 0, 400)])
    # Reward 1e30 from step 400 (update 80 of 5 steps): finite, but its squared error is not.
    with pytest.raises(NonFiniteError, match=r"a2c: value_loss became (inf|nan) at iteration "
                                             r"80 \(400 timesteps\)$"):
        learn("mlp", env, seed=0, nsteps=5, total_timesteps=5000, checkpoint_interval=100,
              checkpoint_path=folder)
    steps, latest = list_checkpoints(folder)[-1]
    assert steps == 300  # update 80 wrote nothing: its weights are already poisoned
    meta, arrays, _ = load_file(latest)
    assert meta["resume"]["loop"]["iterations"] == 60
    assert all(np.isfinite(a).all() for k, a in arrays.items() if k.startswith("policy/"))
    model = learn("mlp", DummyVecEnv([lambda: FaultyEnv()]), seed=0, nsteps=5,
                  total_timesteps=5, load_path=latest)
    assert isinstance(model, Model) and model.num_timesteps == 305


# ---- MPI ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["kill", "raise",
                                  pytest.param("error_exit", marks=pytest.mark.slow)])
def test_a_dying_mpi_rank_ends_every_rank(mode):
    if importlib.util.find_spec("mpi4py") is None or shutil.which("mpiexec") is None:
        pytest.skip("mpi4py / mpiexec not installed (pip install -e .[mpi])")
    worker = os.path.join(os.path.dirname(__file__), "mpi_fault_worker.py")
    start = time.monotonic()
    proc = subprocess.run(["mpiexec", "-n", "2", sys.executable, worker, mode],
                          capture_output=True, text=True, timeout=120, env=ENV)
    assert proc.returncode != 0
    assert time.monotonic() - start < 60
    assert "rank 0 finished" not in proc.stdout  # rank 0 did not go on alone


# ---- memory --------------------------------------------------------------------------------


def test_vec_monitor_keeps_a_bounded_history():
    venv = VecMonitor(DummyVecEnv([lambda: FaultyEnv()]), max_episodes=3)
    venv.reset()
    for _ in range(20 * 11):
        venv.step(np.zeros(1, np.int64))
    assert 3 <= len(venv.episode_returns) < 6
    assert len(venv.episode_lengths) == len(venv.episode_returns) == len(venv.episode_times)
    assert venv.episode_lengths[-1] == 20


def test_a_stop_request_ends_with_its_training():
    import signal

    from rlbase.common.loops.signals import graceful_interrupt, stop_requested

    with graceful_interrupt():
        os.kill(os.getpid(), signal.SIGINT)
        assert stop_requested()
    # The next training (in this process, as in a notebook or a test run) is not cut short.
    assert not stop_requested()
