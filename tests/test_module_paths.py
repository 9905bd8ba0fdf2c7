"""The old import paths (Baselines' layout, rlbase's before rlbase.common was split by concern)
name the very modules of the new paths: one module object, whichever path imported it."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from process_util import ENV, ROOT

from rlbase.compat.module_paths import OLD_PATHS


@pytest.mark.parametrize("old", sorted(OLD_PATHS))
def test_an_old_path_is_the_new_module(old):
    new = importlib.import_module(OLD_PATHS[old])
    assert importlib.import_module(old) is new
    assert new.__spec__.name == OLD_PATHS[old]  # the module still knows its own name
    assert sys.modules[old] is new


def test_baselines_style_imports_work_in_a_fresh_process():
    code = ("from rlbase import logger\n"
            "from rlbase.common import plot_util as pu\n"
            "from rlbase.common.cmd_util import make_vec_env\n"
            "from rlbase.common.vec_env import SubprocVecEnv\n"
            "from rlbase.common.atari_wrappers import wrap_deepmind\n"
            "import rlbase.common.envs.make as make, rlbase.common.logs.logger as lg\n"
            "assert make_vec_env is make.make_vec_env and logger is lg\n"
            "assert pu.__name__ == 'rlbase.common.logs.plot_util'\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], env=ENV, cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_an_unknown_old_path_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("rlbase.common.no_such_module")
