"""tests/heavy.txt stays true to the tests: it moves tests out of the default run (CI runs
them after it), so an entry that names nothing would let a renamed heavy test slip back in
unnoticed, and a matching rule that caught too much would hide tests from the default run."""

import os

from conftest import heavy_entries, is_heavy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_heavy_entry_names_a_test_that_exists():
    entries = heavy_entries()
    assert entries and len(entries) == len(set(entries))
    for entry in entries:
        path, _, rest = entry.partition("::")
        assert os.path.isfile(os.path.join(ROOT, path)), entry
        if rest:
            with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                assert f"def {rest.split('[')[0]}(" in f.read(), entry


def test_an_entry_matches_its_test_its_parameters_or_its_file_only():
    assert is_heavy("tests/a.py::t", ["tests/a.py::t"])
    assert is_heavy("tests/a.py::t[x-y]", ["tests/a.py::t"])
    assert is_heavy("tests/a.py::t[x-y]", ["tests/a.py"])
    assert not is_heavy("tests/a.py::t_b", ["tests/a.py::t"])
    assert not is_heavy("tests/a.py::t[x-z]", ["tests/a.py::t[x-y]"])
    assert not is_heavy("tests/ab.py::t", ["tests/a"])
