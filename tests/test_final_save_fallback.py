"""The final (or interrupted) model when --save_path cannot be written: a chain of fallback
folders (checkpoint folder, log folder, current folder, temporary folder), the first that
works is used, and one line says where the model went; only when all fail is it lost."""

from __future__ import annotations

import argparse
import errno
import os
import tempfile

import pytest

from rlbase import run


class FakeModel:
    """A model whose save fails with ENOSPC under the ``full`` folders."""

    def __init__(self, full: list[str]):
        self.full = [os.path.abspath(f) for f in full]
        self.tried: list[str] = []
        self.num_timesteps = 10

    def save(self, path: str) -> None:
        path = os.path.abspath(path)
        self.tried.append(path)
        if any(path.startswith(f + os.sep) for f in self.full):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        with open(path, "w") as f:
            f.write("model")


def folders(tmp_path, monkeypatch):
    full, ckpt, log, cwd, tmp = (tmp_path / n for n in ("full", "ck", "log", "cwd", "tmp"))
    for f in (full, ckpt, log, cwd, tmp):
        f.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    args = argparse.Namespace(alg="ppo", save_path=str(full / "m.zip"), log_path=str(log))
    return args, {"checkpoint_path": str(ckpt)}, [str(p) for p in (full, ckpt, log, cwd, tmp)]


@pytest.mark.parametrize("working", [1, 2, 3, 4])
def test_the_first_folder_of_the_chain_that_works_keeps_the_model(tmp_path, monkeypatch,
                                                                  capsys, working):
    args, ckpt, chain = folders(tmp_path, monkeypatch)
    model = FakeModel(chain[:working])
    with pytest.raises(SystemExit) as exit_info:
        run.save_model(model, args.save_path, args, ckpt)
    assert exit_info.value.code == 1
    expected = [os.path.join(chain[0], "m.zip")] + \
        [os.path.join(f, "ppo_unsaved.zip") for f in chain[1:working + 1]]
    assert model.tried == expected
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"rlbase: error: could not write {expected[0]} (")
    assert err[0].endswith(f"the model is in {expected[-1]}")
    assert os.path.exists(expected[-1])


def test_only_when_every_folder_fails_is_the_model_lost_naming_each(tmp_path, monkeypatch,
                                                                      capsys):
    args, ckpt, chain = folders(tmp_path, monkeypatch)
    model = FakeModel(chain)
    with pytest.raises(SystemExit) as exit_info:
        run.save_model(model, args.save_path, args, ckpt)
    assert exit_info.value.code == 1
    assert model.tried == [os.path.join(chain[0], "m.zip")] + \
        [os.path.join(f, "ppo_unsaved.zip") for f in chain[1:]]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].endswith("the model is lost")
    for path in model.tried:
        assert path in err[0]


def test_duplicate_folders_are_tried_once(tmp_path, monkeypatch, capsys):
    """No checkpoint folder, the log folder is the current one, --save_path's own folder is
    not tried again: the chain is the log folder, then the temporary folder."""
    args, _, chain = folders(tmp_path, monkeypatch)
    full, _, log, _, tmp = chain
    monkeypatch.chdir(log)
    args.log_path = "."
    model = FakeModel([full, log])
    with pytest.raises(SystemExit):
        run.save_model(model, args.save_path, args, {})
    assert model.tried == [os.path.join(full, "m.zip"), os.path.join(log, "ppo_unsaved.zip"),
                           os.path.join(tmp, "ppo_unsaved.zip")]
    assert capsys.readouterr().err.strip().endswith(
        f"the model is in {os.path.join(tmp, 'ppo_unsaved.zip')}")


def test_an_interrupted_model_without_save_path_uses_the_same_chain(tmp_path, monkeypatch,
                                                                     capsys):
    args, ckpt, chain = folders(tmp_path, monkeypatch)
    args.save_path = None
    _, ck, log, cwd, _ = chain
    model = FakeModel([ck, log])
    with pytest.raises(SystemExit) as exit_info:
        run.save_interrupted(model, args, ckpt, rank=0)
    assert exit_info.value.code == 1
    assert model.tried == [os.path.join(ck, "ppo_interrupted.zip"),
                           os.path.join(log, "ppo_unsaved.zip"),
                           os.path.join(cwd, "ppo_unsaved.zip")]
    assert capsys.readouterr().err.strip().endswith(
        f"the model is in {os.path.join(cwd, 'ppo_unsaved.zip')}")
