"""Golden fixed-seed runs: every algorithm, trained briefly with seed 0 in a fresh process,
gives the very weights and logged values recorded in ``tests/golden.json``.

A restructuring (moving modules, one loop per family, the config declared once) must keep
these bits. A deliberate change of a rule re-records only the cases it changes, in a commit of
its own that says why: ``python tests/golden_worker.py --record CASE ...``.

The records are bit-exact on the CPU model they were recorded on (``cpu`` in the file). On
another CPU kind float kernels may round differently, so there the arrays' sums are compared
to 0.1% and the step counts exactly; re-record on that machine to get the exact check back.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from golden_worker import CASES, GOLDEN, cpu_model
from process_util import ENV, ROOT, TESTS


@pytest.fixture(scope="module")
def runs() -> dict:
    out = subprocess.run([sys.executable, f"{TESTS}/golden_worker.py"], env=ENV, cwd=ROOT,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])["cases"]


@pytest.fixture(scope="module")
def golden() -> dict:
    with open(GOLDEN) as f:
        return json.load(f)


def test_every_case_is_recorded(golden):
    assert sorted(golden["cases"]) == sorted(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_seed_same_bits_as_recorded(case, runs, golden):
    want, got = golden["cases"][case], runs[case]
    assert got["num_timesteps"] == want["num_timesteps"]
    assert sorted(got["sums"]) == sorted(want["sums"])
    if golden["cpu"] == cpu_model():
        assert got["logged"] == want["logged"], f"{case}: logged values changed"
        assert got["digest"] == want["digest"], f"{case}: weights changed"
    else:
        for name, value in want["sums"].items():
            np.testing.assert_allclose(got["sums"][name], value, rtol=1e-3, atol=1e-5,
                                       err_msg=f"{case}: {name} (recorded on {golden['cpu']})")
