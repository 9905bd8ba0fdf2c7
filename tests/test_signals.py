"""SIGTERM, a second Ctrl-C and Ctrl-C under mpiexec: real processes, real signals. Each run
stops cleanly with status 130, one line per signal, a stop checkpoint and a loadable model."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from process_util import ENV, ROOT

from rlbase.common.io.checkpoint import list_checkpoints
from rlbase.common.io.serialization import load_file

# Short PPO iterations (64 steps), a log row and a checkpoint after each: the first row in the
# output is the 'started' marker, and a stop writes its checkpoint within a fraction of a second.
PPO = ["--alg=ppo", "--env=CartPole-v1", "--num_timesteps=1e7", "--num_env=1", "--nsteps=64",
       "--nminibatches=1", "--noptepochs=1", "--log_interval=1", "--no_progress"]
STARTED = "time/total_timesteps"


def start(args: list[str], out_path) -> subprocess.Popen:
    """Started in its own process group, as a job under a shell or a scheduler is."""
    with open(out_path, "w") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=ENV, cwd=ROOT,
                                start_new_session=True)


def wait_for_text(proc: subprocess.Popen, out_path, text: str, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while text not in out_path.read_text():
        assert proc.poll() is None, out_path.read_text()[-3000:]
        assert time.monotonic() < end, f"no {text!r} in time: {out_path.read_text()[-3000:]}"
        time.sleep(0.05)


def finish(proc: subprocess.Popen, out_path, timeout: float = 60) -> str:
    try:
        proc.wait(timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return out_path.read_text()


def assert_stopped_and_saved(rc: int, text: str, save, ckpt_dir) -> None:
    assert rc == 130, text[-3000:]
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text[-3000:]
    assert f"saved model to {save}" in text, text[-3000:]
    steps = load_file(str(save))[0]["num_timesteps"]
    assert steps > 0
    # The stop checkpoint is the model's own step count: nothing after it was lost.
    newest_steps, newest = list_checkpoints(str(ckpt_dir))[-1]
    assert newest_steps == steps
    assert load_file(newest)[0]["num_timesteps"] == steps


# SIGINT's save alone: test_reliability.py's Ctrl-C test; both under mpiexec below.
@pytest.mark.parametrize("sig", [signal.SIGTERM,
                                 pytest.param(signal.SIGINT, marks=pytest.mark.slow)])
def test_a_signal_saves_the_model_and_a_stop_checkpoint(tmp_path, sig):
    out, save, ckpt = tmp_path / "out.txt", tmp_path / "m.zip", tmp_path / "ckpt"
    proc = start([sys.executable, "-m", "rlbase.run", *PPO, f"--save_path={save}",
                  f"--checkpoint_path={ckpt}", "--checkpoint_interval=100000"], out)
    wait_for_text(proc, out, STARTED)
    proc.send_signal(sig)
    text = finish(proc, out)
    assert_stopped_and_saved(proc.returncode, text, save, ckpt)
    assert f"rlbase: {sig.name} received: stopping at the next safe point" in text


def test_sigterm_to_the_process_group_spares_the_env_workers(tmp_path):
    """Slurm, ``timeout`` and a terminal signal every process of the job, env workers too: they
    leave the stop to the main process instead of dying under its last step."""
    out, save, ckpt = tmp_path / "out.txt", tmp_path / "m.zip", tmp_path / "ckpt"
    proc = start([sys.executable, "-m", "rlbase.run", *PPO, "--num_env=2", "--vec_env=subproc",
                  f"--save_path={save}", f"--checkpoint_path={ckpt}",
                  "--checkpoint_interval=100000"], out)
    wait_for_text(proc, out, STARTED)
    os.killpg(proc.pid, signal.SIGTERM)
    text = finish(proc, out)
    assert_stopped_and_saved(proc.returncode, text, save, ckpt)


def test_sigterm_during_startup_exits_cleanly(tmp_path):
    out = tmp_path / "out.txt"
    proc = start([sys.executable, "-m", "rlbase.run", "--alg=ppo", "--env=SlowStart-v0",
                  "--gym_packages=envs.slow_start", "--num_timesteps=1e5", "--num_env=1",
                  "--no_progress", f"--save_path={tmp_path / 'm.zip'}"], out)
    wait_for_text(proc, out, "building env")
    proc.send_signal(signal.SIGTERM)
    text = finish(proc, out)
    assert proc.returncode == 130, text[-3000:]
    assert "Traceback" not in text and "Stopped before training: nothing to save" in text
    assert not (tmp_path / "m.zip").exists()


def test_a_second_sigint_lets_the_save_finish(tmp_path):
    out, save, ckpt = tmp_path / "out.txt", tmp_path / "m.zip", tmp_path / "ckpt"
    proc = start([sys.executable, "-m", "rlbase.run", *PPO, f"--save_path={save}",
                  f"--checkpoint_path={ckpt}", "--checkpoint_interval=100000"], out)
    wait_for_text(proc, out, STARTED)
    proc.send_signal(signal.SIGINT)
    wait_for_text(proc, out, "SIGINT received")  # the first is being handled
    proc.send_signal(signal.SIGINT)
    text = finish(proc, out)
    assert_stopped_and_saved(proc.returncode, text, save, ckpt)
    # One line when it came while the stop was under way, none when after the save.
    assert text.count("rlbase: SIGINT received again: already stopping") <= 1


def mpiexec() -> str:
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py not installed (pip install -e .[mpi])")
    found = shutil.which("mpiexec") or shutil.which("mpiexec", path=os.path.dirname(
        sys.executable))
    if found is None:
        pytest.skip("mpiexec not installed (pip install -e .[mpi])")
    return found


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_mpiexec_stops_every_rank_after_the_save(tmp_path, sig):
    """A terminal's Ctrl-C reaches mpiexec (each rank has its own process group), which
    forwards it to the ranks: they agree to stop, rank 0 writes the checkpoint and the model,
    and the job ends with 130, not with MPI_Abort killing rank 0 mid-write."""
    out, save, log = tmp_path / "out.txt", tmp_path / "m.zip", tmp_path / "log"
    proc = start([mpiexec(), "-n", "2", sys.executable, "-m", "rlbase.run", *PPO,
                  f"--save_path={save}", f"--log_path={log}", "--checkpoint_interval=100000"],
                 out)
    wait_for_text(proc, out, STARTED, timeout=180)
    proc.send_signal(sig)
    text = finish(proc, out, timeout=120)
    assert "MPI_Abort" not in text and "aborting" not in text, text[-3000:]
    assert_stopped_and_saved(proc.returncode, text, save, log / "checkpoints")
    assert text.count("Interrupted at") == 1  # rank 0 alone writes


def test_building_subproc_envs_leaves_the_main_process_signals_alone():
    """gymnasium builds env 0 in the main process too: the worker setup (ignore SIGINT and
    SIGTERM) must not happen there, or Ctrl-C and SIGTERM would be ignored by the run."""
    import gymnasium as gym

    from rlbase.common.vec_env import SubprocVecEnv

    before = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
    env = SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 2)
    try:
        assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] == before
    finally:
        env.close()


def test_a_finished_cli_run_ignores_a_late_signal():
    """Trained and saved: a SIGTERM while the interpreter shuts down (TF's teardown takes a
    while) must not turn exit status 0 into a death by signal."""
    from rlbase.run import run_cli

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        run_cli(lambda: None)
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGTERM)  # would end the test run on the old code
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def test_ppo_ranks_stop_after_the_same_update():
    """One rank's stop (its callback, or a signal that reached it first) stops every rank after
    the same update; PPO's loop had no communicator, so the other rank went on into the next
    update's gradient averaging and waited there forever."""
    worker = os.path.join(os.path.dirname(__file__), "mpi_stop_worker.py")
    proc = subprocess.run([mpiexec(), "-n", "2", sys.executable, worker], capture_output=True,
                          text=True, timeout=120, env=ENV)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "rank 0 stopped at 128" in proc.stdout and "rank 1 stopped at 128" in proc.stdout


@pytest.mark.parametrize("alg, steps", [("ppo", 64),     # one update, the second rollout cut
                                        ("ddpg", 99)])   # the 100th step cut
def test_ranks_stop_together_when_one_ranks_env_worker_hangs(alg, steps, tmp_path):
    """Rank 1's env worker hangs and a stop request reaches rank 1 alone: rank 1's step is cut
    short (its worker killed), and rank 0, with healthy envs, stops after the same rollout
    (PPO, without an update) or env step (DDPG, without training on it). Before, rank 1
    stopped alone and rank 0 waited forever in the next gradient average (the mpiexec run hit
    this test's timeout)."""
    worker = os.path.join(os.path.dirname(__file__), "mpi_hung_env_worker.py")
    env = {**ENV, "RLBASE_TEST_HANG_MARK": str(tmp_path / "hung")}
    proc = subprocess.run([mpiexec(), "-n", "2", sys.executable, worker, alg],
                          capture_output=True, text=True, timeout=120, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert f"rank 0 stopped at {steps}\n" in proc.stdout, out[-4000:]
    assert f"rank 1 stopped at {steps}\n" in proc.stdout, out[-4000:]
    assert "still busy with step when asked to stop" in out, out[-4000:]
