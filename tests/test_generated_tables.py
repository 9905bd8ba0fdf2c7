"""The docs' results tables are what `python -m rlbase.bench tables` writes from the committed
files (rlbase/bench/tables.py): a table edited by hand, or a run committed without rewriting
the tables, fails here."""

from __future__ import annotations

import os
import shutil

import pytest

from rlbase.bench import intervals, tables
from rlbase.common.errors import RLBaseError


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("page", tables.DOCS, ids=os.path.basename)
def test_docs_tables_are_what_the_command_writes(page: str) -> None:
    text = _read(page)
    assert "<!-- table:" in text  # every page listed has generated tables
    new, changed = tables.rewrite(text, page)
    assert changed == [], f"{page}: run `python -m rlbase.bench tables` ({changed} differ)"
    assert new == text


def test_every_block_is_used_once_somewhere() -> None:
    used = [m["name"] for page in tables.DOCS for m in tables.BLOCK.finditer(_read(page))]
    assert sorted(used) == sorted(tables.GENERATORS)


def test_values_rounded_once_from_the_files() -> None:
    # The off-by-one figures: each was printed from a value already rounded once.
    text = _read(tables.DOCS[0])
    assert "| ppo | Hopper-v5 | 0,1,2,3,4 | 2,901; 3,614; 2,424; 3,703; 3,503 | 3,339 [" in text
    row = next(line for line in text.splitlines() if line.startswith("| trpo | Walker2d-v5 |"))
    assert "| 2,621 [" in row  # the last-100 IQM, 2,621.47
    assert tables.num(3339.46) == "3,339" and tables.num(2621.47) == "2,621"
    assert tables.num(-7.5) == "-8" and tables.num(float("nan")) == "-"


def test_corrected_statements() -> None:
    benchmarks, her = _read(tables.DOCS[0]), _read(tables.DOCS[1])
    assert "(Humanoid-v5) are left out" not in benchmarks
    assert "Humanoid-v5 115.5 / 6,232.3" in benchmarks
    assert "rl-zoo3 SAC's 6,232 (± 280 over 150 episodes) on Humanoid-v3 at 2e6 steps" in \
        benchmarks
    assert "0.97-1.00 from" not in her
    assert "21 of them below 0.97, between 414,000 and 710,000 steps; the lowest 0.93" in her
    assert "| a2c | Walker2d-v5 | rl-zoo3 (SB3 defaults, normalized) | v3 | 1e6 | 1 | 582 ± 128" \
        in benchmarks
    assert "whole interval above" not in benchmarks


def test_normalization_is_the_committed_files() -> None:
    tables.check_normalization()
    low, high, _ = intervals.NORMALIZATION["Humanoid-v5"]
    assert (low, high) == (115.5, 6232.3)


def test_verdict_counts_the_published_spread() -> None:
    seeds = {"mean": 2288.0, "spread": 572.0, "spread_over": "seeds", "runs": 3}
    assert tables._verdict(seeds, 3517.0, (2569.0, 3770.0)).startswith(
        "its mean is below the interval, but its seeds' mean ± std (1,716 to 2,860) overlaps")
    assert tables._verdict(seeds, 3517.0, (2900.0, 3770.0)) == \
        "below the interval, its seeds' mean ± std included"
    assert tables._verdict(seeds, 2300.0, (2000.0, 2600.0)).startswith("inside the interval")
    one = {"mean": 5819.0, "spread": 664.0, "spread_over": "150 episodes", "runs": 1}
    assert tables._verdict(one, 4203.0, (2345.0, 5152.0)) == \
        "above the interval (one run: its ± is over evaluation episodes, not seeds)"
    assert (tables.budget(1_000_000), tables.budget(2_000_000), tables.budget(1_234_567)) == \
        ("1e6", "2e6", "1,234,567")


def test_check_exits_1_on_a_stale_table_and_rewrites_only_the_block(tmp_path, capsys) -> None:
    page = tmp_path / "her.md"
    shutil.copy(tables.DOCS[1], page)
    good = page.read_text(encoding="utf-8")
    page.write_text(good.replace("| 200,000 | 0.70 |", "| 200,000 | 0.71 |"), encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        tables.main(["--check", str(page)])
    assert stop.value.code == 1 and "her-fetchpush" in capsys.readouterr().err
    tables.main([str(page)])
    assert page.read_text(encoding="utf-8") == good


def test_unknown_block_is_one_line_error() -> None:
    with pytest.raises(RLBaseError, match="unknown table block 'nope'"):
        tables.rewrite("<!-- table:nope -->\nx\n<!-- /table -->\n", "page.md")
