"""Env workers that never answer: the step timeout names the env, a stop request (SIGTERM,
Ctrl-C) ends the run within seconds whatever the workers do, closing never waits on a hung
worker, and a worker count no machine can run is refused up front."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time

import fault_envs  # noqa: F401 - registers FaultyHang-v0
import gymnasium as gym
import numpy as np
import pytest
from fault_envs import FaultyEnv
from process_util import ENV, start_cli

from rlbase.common.errors import RLBaseError
from rlbase.common.loops.signals import (
    INTERRUPTED_EXIT_CODE,
    STOP_GRACE_S,
    EnvWaitInterrupted,
    StopExit,
    clear_stop,
    request_stop,
)
from rlbase.common.vec_env import EnvWorkerError, SubprocVecEnv
from rlbase.common.vec_env.worker_limits import (
    DEFAULT_ENV_TIMEOUT_S,
    ENV_TIMEOUT_VARIABLE,
    MAX_WORKERS_PER_CPU,
    env_timeout,
)


def hanging(at: int = 2) -> SubprocVecEnv:
    return SubprocVecEnv([lambda: gym.make("FaultyHang-v0", at=at) for _ in range(2)],
                         timeout=600)


@pytest.fixture(autouse=True)
def _no_stop_left():
    clear_stop()
    yield
    clear_stop()


def test_hung_worker_times_out_with_one_line_naming_the_env_and_the_call():
    venv = SubprocVecEnv([lambda: gym.make("FaultyHang-v0", at=3) for _ in range(2)],
                         timeout=1.5)
    venv.reset()
    start = time.monotonic()
    with pytest.raises(EnvWorkerError) as info:
        for _ in range(5):
            venv.step(np.zeros(2, np.int64))
    message = str(info.value)
    assert "\n" not in message
    assert "envs 0, 1 (FaultyHang-v0) did not answer step within 1.5 s" in message, message
    assert ENV_TIMEOUT_VARIABLE in message  # says how to give a slow env more time
    assert time.monotonic() - start < 5
    assert multiprocessing.active_children() == []
    venv.close()


def test_one_hung_worker_is_named_with_its_pid():
    venv = SubprocVecEnv([lambda i=i: FaultyEnv(i, "hang", bad_index=1, at=2)
                          for i in range(3)], timeout=1.0)
    venv.reset()
    pid = venv.vector_env.processes[1].pid
    with pytest.raises(EnvWorkerError, match=rf"^env 1 \(FaultyEnv, worker PID {pid}\) did "
                                             r"not answer step within 1.0 s"):
        for _ in range(5):
            venv.step(np.zeros(3, np.int64))
    assert multiprocessing.active_children() == []


def test_timeout_default_and_environment_variable(monkeypatch):
    monkeypatch.delenv(ENV_TIMEOUT_VARIABLE, raising=False)
    assert env_timeout() == DEFAULT_ENV_TIMEOUT_S == 600
    assert env_timeout(2) == 2.0
    assert env_timeout(float("inf")) is None
    monkeypatch.setenv(ENV_TIMEOUT_VARIABLE, "30")
    assert env_timeout() == 30.0
    assert env_timeout(5) == 5.0  # the argument wins
    monkeypatch.setenv(ENV_TIMEOUT_VARIABLE, "inf")
    assert env_timeout() is None
    for bad in ("soon", "0", "-3", "nan"):
        monkeypatch.setenv(ENV_TIMEOUT_VARIABLE, bad)
        with pytest.raises(RLBaseError, match=ENV_TIMEOUT_VARIABLE):
            env_timeout()
    monkeypatch.setenv(ENV_TIMEOUT_VARIABLE, "1.5")
    venv = SubprocVecEnv([FaultyEnv, FaultyEnv])
    try:
        assert venv.timeout == 1.5  # read where rlbase makes its SubprocVecEnvs
    finally:
        venv.close()


def test_stop_request_while_workers_hang_raises_within_seconds_and_kills_them():
    venv = hanging()
    venv.reset()
    venv.step(np.zeros(2, np.int64))
    timer = threading.Timer(0.5, request_stop)  # what SIGTERM's handler does
    timer.start()
    start = time.monotonic()
    try:
        with pytest.raises(EnvWaitInterrupted, match="envs 0, 1 .* still busy with step") as info:
            venv.step(np.zeros(2, np.int64))
    finally:
        timer.cancel()
    assert time.monotonic() - start < 0.5 + STOP_GRACE_S + 2
    assert isinstance(info.value, StopExit) and info.value.code == INTERRUPTED_EXIT_CODE
    assert multiprocessing.active_children() == []
    assert venv.reset_notes() == [None, None]  # a checkpoint at the stop needs no worker
    venv.close()


def test_stop_request_does_not_cut_a_healthy_step_short():
    venv = SubprocVecEnv([FaultyEnv, FaultyEnv], timeout=600)
    try:
        venv.reset()
        request_stop()
        for _ in range(3):  # answered at once: the loop stops at its safe point as before
            obs, *_ = venv.step(np.zeros(2, np.int64))
        assert obs.shape == (2, 2)
    finally:
        venv.close()


def test_set_attr_on_a_hung_worker_times_out_naming_the_call():
    from fault_envs import StuckSetter

    venv = SubprocVecEnv([lambda: StuckSetter() for _ in range(2)], timeout=2)
    try:
        venv.set_attr("render_fps", 7)  # a healthy set still works
        assert venv.get_attr("render_fps") == [7, 7]
        start = time.monotonic()
        with pytest.raises(EnvWorkerError, match=r"did not answer set_attr\('stuck'\) within 2"):
            venv.set_attr("stuck", 1, indices=[1])
        assert time.monotonic() - start < 10
    finally:
        venv.close()


def test_close_kills_workers_hung_in_a_pending_step():
    venv = hanging()
    venv.reset()
    venv.step(np.zeros(2, np.int64))
    venv.step_async(np.zeros(2, np.int64))  # never answered
    time.sleep(0.2)
    start = time.monotonic()
    venv.close()
    assert time.monotonic() - start < 8
    assert multiprocessing.active_children() == []


def test_a_worker_count_no_machine_runs_is_refused_before_any_process_starts():
    with pytest.raises(RLBaseError, match=rf"100,000 envs in subprocess workers .* "
                                          rf"\({MAX_WORKERS_PER_CPU} per CPU") as info:
        SubprocVecEnv([FaultyEnv] * 100_000)
    assert "\n" not in str(info.value)
    assert multiprocessing.active_children() == []


def sigterm_once_marked(proc, mark, out) -> tuple[float, str]:
    """SIGTERM the CLI process once ``mark`` exists (the env is stuck); returns (seconds it
    took to exit, its output). Killed if it has not exited 15 s after the signal."""
    try:
        end = time.monotonic() + 120
        while not mark.exists():
            assert proc.poll() is None and time.monotonic() < end, out.read_text()[-3000:]
            time.sleep(0.1)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        start = time.monotonic()
        proc.wait(15)
        return time.monotonic() - start, out.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("alg, extra", [("ppo", ["--nsteps=64"]),  # the on-policy loop
                                        ("dqn", ["--learning_starts=10"])])  # the off-policy
def test_sigterm_while_subprocess_workers_hang_exits_130_within_seconds(alg, extra, tmp_path,
                                                                         monkeypatch):
    mark, model = tmp_path / "hung", tmp_path / "model.zip"
    monkeypatch.setitem(ENV, "RLBASE_TEST_HANG_MARK", str(mark))
    out = tmp_path / "out.txt"
    proc = start_cli([f"--alg={alg}", "--env=FaultyHang-v0", "--gym_packages", "fault_envs",
                      "--vec_env=subproc", "--num_env=2", "--num_timesteps=1e5", *extra,
                      "--no_progress", f"--save_path={model}"], out)
    elapsed, text = sigterm_once_marked(proc, mark, out)  # both workers stuck in step()
    assert proc.returncode == INTERRUPTED_EXIT_CODE, text[-3000:]
    assert elapsed < 15
    assert "still busy with step when asked to stop" in text, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    assert model.exists() and "saved model to" in text, text[-3000:]


@pytest.mark.parametrize("vec_env, env_kwargs", [
    ("subproc", "{'workers_only': True}"),   # the workers' constructors hang
    # the main process's copy (read for the spaces): the same path as dummy's (~20 s each)
    pytest.param("subproc", "{}", marks=pytest.mark.slow),
    ("dummy", "{}"),
])
def test_sigterm_while_an_env_constructor_hangs_exits_130_within_seconds(vec_env, env_kwargs,
                                                                         tmp_path, monkeypatch):
    """Nothing is trained yet while the envs are made, so a stop ends the run at once instead
    of waiting for a safe point a constructor that never returns would never reach (it did:
    SIGTERM printed 'stopping at the next safe point' and the run lived on)."""
    mark = tmp_path / "hung"
    monkeypatch.setitem(ENV, "RLBASE_TEST_HANG_MARK", str(mark))
    out = tmp_path / "out.txt"
    proc = start_cli(["--alg=ppo", "--env=FaultyHangingConstructor-v0", "--gym_packages",
                      "fault_envs", f"--vec_env={vec_env}", "--num_env=2",
                      f"--env_kwargs={env_kwargs}", "--num_timesteps=1000", "--no_progress"],
                     out)
    elapsed, text = sigterm_once_marked(proc, mark, out)
    assert proc.returncode == INTERRUPTED_EXIT_CODE and elapsed < 15, text[-3000:]
    assert "received while making the envs: stopping now" in text, text[-3000:]
    assert "Stopped before training: nothing to save" in text, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    pids = [int(p) for p in mark.read_text().split()]
    time.sleep(0.5)
    for pid in pids:  # no worker left behind, hung in its constructor
        assert not os.path.exists(f"/proc/{pid}") or \
            open(f"/proc/{pid}/stat").read().split()[2] == "Z", pid


def test_the_env_timeout_flag_reaches_the_workers(monkeypatch):
    """--env_timeout sets the limit rlbase's subprocess workers are made with."""
    import os

    from rlbase import run
    from rlbase.common.vec_env.worker_limits import ENV_TIMEOUT_VARIABLE, env_timeout

    monkeypatch.delenv(ENV_TIMEOUT_VARIABLE, raising=False)
    seen = {}

    def fake_build_env(*args, **kwargs):
        seen["timeout"] = env_timeout()
        raise SystemExit(0)

    monkeypatch.setattr(run, "build_env", fake_build_env)
    with pytest.raises(SystemExit):
        run.main(["--alg=ppo", "--env=CartPole-v1", "--num_timesteps=64", "--env_timeout=7.5"])
    assert seen["timeout"] == 7.5
    os.environ.pop(ENV_TIMEOUT_VARIABLE, None)


@pytest.mark.parametrize("bad", ["0", "-1", "abc", "nan"])
def test_a_bad_env_timeout_is_one_line(bad, capsys):
    from process_util import cli_in_process

    code, _, err_text = cli_in_process(capsys, "--alg=ppo", "--env=CartPole-v1",
                                       f"--env_timeout={bad}")
    err = err_text.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("rlbase: error:") and "env_timeout" in err[0]
