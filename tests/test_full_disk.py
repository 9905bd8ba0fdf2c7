"""A disk that is full at start or fills up mid-run: the run lock warns in one line and the run
goes on; a log row that cannot be written whole leaves no torn line in any log file."""

from __future__ import annotations

import builtins
import contextlib
import errno
import fcntl
import os
import subprocess

import pytest

from rlbase.common.io import run_lock
from rlbase.common.logs import logger

ENOSPC = errno.ENOSPC


def enospc() -> OSError:
    return OSError(ENOSPC, os.strerror(ENOSPC))


class _FullDiskFile:
    """A real open file whose buffered writes never reach the disk: ``flush`` raises
    ``[Errno 28]`` (what a full disk does to ``handle.flush()``)."""

    def __init__(self, real):
        self._real = real

    def flush(self):
        raise enospc()

    def __getattr__(self, name):
        return getattr(self._real, name)


def test_a_lock_file_that_cannot_be_written_is_one_warning_and_the_folder_stays_locked(
        tmp_path, monkeypatch, capsys):
    lock_fds: set[int] = set()

    def full_open(path, mode="r", *args, **kwargs):
        real = builtins.open(path, mode, *args, **kwargs)
        lock_fds.add(real.fileno())
        return _FullDiskFile(real)

    real_write = os.write

    def full_write(fd, data):
        if fd in lock_fds:
            raise enospc()
        return real_write(fd, data)

    monkeypatch.setattr(run_lock, "open", full_open, raising=False)
    monkeypatch.setattr(os, "write", full_write)
    capsys.readouterr()
    try:
        run_lock.lock_folder(str(tmp_path), "--log_path")  # no traceback: the run goes on
        monkeypatch.undo()
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("rlbase: warning: could not write this run's PID into "), err
        assert "[Errno 28]" in lines[0] and "training goes on" in lines[0]
        path = tmp_path / run_lock.LOCK_NAME
        assert path.read_text() == ""  # no half-written PID
        with open(path) as other, pytest.raises(BlockingIOError):  # still locked
            fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        run_lock.release_all()


def _log_files(folder) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes()
            for name in ("log.txt", "progress.csv", "progress.json")}


def test_a_log_row_cut_short_by_a_full_disk_leaves_no_torn_line(tmp_path, monkeypatch, capsys):
    logger.configure(str(tmp_path), ["log", "csv", "json"])
    try:
        log = logger.get_current()
        fds = {fmt._file.fileno(): fmt.path for fmt in log.output_formats}
        for step in (1, 2):
            logger.logkv("time/total_timesteps", step)
            logger.logkv("rollout/ep_rew_mean", 0.5 * step)
            logger.dumpkvs()
        before = _log_files(tmp_path)
        real_write = os.write
        calls: dict[int, int] = {}

        def half_then_full(fd, data):
            """Half of the first write reaches the disk; then the disk is full."""
            if fd not in fds:
                return real_write(fd, data)
            calls[fd] = calls.get(fd, 0) + 1
            if calls[fd] > 1:
                raise enospc()
            return real_write(fd, bytes(data)[: max(1, len(data) // 2)])

        monkeypatch.setattr(os, "write", half_then_full)
        capsys.readouterr()
        logger.logkv("time/total_timesteps", 3)
        logger.logkv("rollout/ep_rew_mean", 1.5)
        logger.dumpkvs()  # no exception: the outputs are dropped, training goes on
        monkeypatch.undo()
        err = capsys.readouterr().err
        assert set(calls) == set(fds)  # every file's row was cut part-way
        assert _log_files(tmp_path) == before  # the torn rows were taken back
        for content in before.values():
            assert content.endswith(b"\n")
        warnings = [line for line in err.splitlines() if line.startswith("rlbase: warning:")]
        assert len(warnings) == 3, err
        for path in fds.values():
            assert sum(path in line and "[Errno 28]" in line for line in warnings) == 1, err
        logger.logkv("time/total_timesteps", 4)
        logger.dumpkvs()  # the dropped outputs stay dropped: nothing more is written
        assert _log_files(tmp_path) == before
    finally:
        logger.reset()


@contextlib.contextmanager
def _full_tmpfs(folder):
    """A 64 KB tmpfs at ``folder`` filled to the last byte (needs root and mount)."""
    folder.mkdir()
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                       check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _fill(folder) -> None:
    with open(folder / "filler", "wb", buffering=0) as f:
        with contextlib.suppress(OSError):
            while True:
                f.write(b"x" * 512)
        with contextlib.suppress(OSError):
            while True:
                f.write(b"x")


@pytest.mark.slow
def test_real_full_tmpfs_lock_warns_and_log_row_is_not_torn(tmp_path, capsys):
    with _full_tmpfs(tmp_path / "disk") as disk:
        logger.configure(str(disk), ["log", "csv"])
        try:
            logger.logkv("time/total_timesteps", 1)
            logger.dumpkvs()
            _fill(disk)
            capsys.readouterr()
            run_lock.lock_folder(str(disk), "--log_path")
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and err.startswith("rlbase: warning:"), err
            before = _log_files_of(disk)
            for i in range(300):  # a table far longer than the free tail of the last page
                logger.logkv(f"train/stat_{i:03d}", i)
            logger.logkv("time/total_timesteps", 2)
            logger.dumpkvs()
            after = _log_files_of(disk)
            assert after == before, (len(after["log.txt"]), len(before["log.txt"]))
            assert "could not write the log output" in capsys.readouterr().err
        finally:
            logger.reset()
            run_lock.release_all()


def _log_files_of(folder) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in ("log.txt", "progress.csv")}
