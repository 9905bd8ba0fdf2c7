"""A stop request during the final save exits 130 after the save; concurrent zoo runs
(``-f DIR``) each claim their own run folder."""

from __future__ import annotations

import os
import signal

import pytest

from rlbase import run
from rlbase.common import hyperparams
from rlbase.common.logs import logger


def test_sigterm_during_the_final_save_exits_130_after_the_save(tmp_path, monkeypatch, capsys):
    real = run.save_model

    def signalled(model, path, args, ckpt):
        os.kill(os.getpid(), signal.SIGTERM)  # arrives while the model is being written
        return real(model, path, args, ckpt)

    monkeypatch.setattr(run, "save_model", signalled)
    target = tmp_path / "m.zip"
    try:
        with pytest.raises(SystemExit) as exit_info:
            run.main(["--alg=a2c", "--env=CartPole-v1", "--num_env=1", "--seed=0",
                      "--no_progress", "--num_timesteps=10", f"--save_path={target}"])
    finally:
        logger.reset()
    assert exit_info.value.code == 130
    assert target.exists()
    assert f"saved model to {target}" in capsys.readouterr().out


def test_a_run_folder_taken_after_the_choice_is_skipped(tmp_path, monkeypatch):
    base = tmp_path / "a2c"
    (base / "CartPole-v1_1").mkdir(parents=True)
    # Another run claimed _1 after this one listed the folder.
    monkeypatch.setattr(hyperparams.os, "listdir", lambda path: [])
    folder = hyperparams.next_run_folder(str(tmp_path), "a2c", "CartPole-v1")
    assert folder == str(base / "CartPole-v1_2")
    assert os.path.isdir(folder)


def test_concurrent_runs_get_distinct_folders(tmp_path):
    import threading

    out: list[str] = []
    threads = [threading.Thread(target=lambda: out.append(
        hyperparams.next_run_folder(str(tmp_path), "a2c", "CartPole-v1"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(out) == sorted({*out}) and len(out) == 8
