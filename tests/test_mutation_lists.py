"""The mutation-testing lists stay true to the code: every listed module and test exists, and
every mutant called equivalent still names a line the module holds (tests/mutation/)."""

from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "mutation"))

import mutate  # noqa: E402


def source_lines(module: str) -> set[str]:
    with open(os.path.join(ROOT, module), encoding="utf-8") as f:
        return {line.strip() for line in f}


@pytest.mark.parametrize("module, tests", sorted(mutate.load_targets().items()))
def test_every_target_and_its_tests_exist(module, tests):
    assert os.path.isfile(os.path.join(ROOT, module))
    # a test is a file or one test of it ("tests/x.py::test_y")
    files = [t.split("::")[0] for t in tests]
    assert tests and all(os.path.exists(os.path.join(ROOT, f)) for f in files)
    for test in tests:
        if "::" in test:
            with open(os.path.join(ROOT, test.split("::")[0]), encoding="utf-8") as f:
                assert f"def {test.split('::')[1]}(" in f.read(), test


def test_every_equivalent_mutant_names_a_line_of_a_listed_module():
    targets = mutate.load_targets()
    for entry in mutate.load_equivalents():
        assert set(entry) == {"module", "definition", "line", "mutant", "reason"}, entry
        assert entry["module"] in targets, entry
        assert entry["line"] in source_lines(entry["module"]), entry
        assert entry["mutant"] != entry["line"] and len(entry["reason"]) > 20, entry


def test_annotations_are_found_and_diff_lines_read():
    source = "def f(a: int | None, b=1) -> list[int]:\n    x: dict[str, int] = {}\n    return a\n"
    spans = mutate.annotation_spans(source)
    assert mutate._inside((1, 11), spans)      # the `|` of `int | None`
    assert not mutate._inside((1, 23), spans)  # the default `1`
    assert mutate._inside((2, 10), spans) and not mutate._inside((3, 11), spans)
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-    y = a + b\n+    y = a - b\n"
    assert mutate._changed_lines(diff) == ("y = a + b", "y = a - b")
