"""The docs say what the code does: generated tables match, hand-written claims are checked."""

import os
import re

import pytest

from rlbase import registry
from rlbase.common.config import describe
from rlbase.doc_pages import (
    cli_block,
    current_block,
    current_cli_block,
    current_sb3_block,
    generated_block,
    sb3_block,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALGORITHMS = registry.available_algorithms()


def read(*parts: str) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_parameter_table_is_the_config(alg):
    assert current_block(alg) == generated_block(alg), (
        f"rlbase/docs/algorithms/{alg}.md differs from its config: run "
        "python -m rlbase.doc_pages")


def test_sb3_names_table_is_the_code():
    assert current_sb3_block() == sb3_block(), "run python -m rlbase.doc_pages"


def test_cli_flag_table_is_the_parser():
    assert current_cli_block() == cli_block(), "run python -m rlbase.doc_pages"


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_every_parameter_has_a_meaning(alg):
    import inspect

    from rlbase.common.loops.learning import RUN_ARGUMENTS

    entry = registry.get_algorithm(alg)
    fields = set(entry.config.field_names())
    for name, param in inspect.signature(entry.learn).parameters.items():
        label = f"**{name}" if param.kind is param.VAR_KEYWORD else name
        assert name in fields or label in RUN_ARGUMENTS, f"{alg}: {name} has no meaning"
    assert all(row["doc"] for row in describe(entry.config))


def test_a2c_rmsprop_epsilon_placement_agrees_everywhere():
    from rlbase.a2c.model import Model

    # The code: epsilon outside the square root unless tf1_rmsprop (checked numerically in
    # tests/test_tf_util.py); the docs must say the same wherever they describe A2C's.
    assert "epsilon is added outside the square root" in " ".join((Model.__doc__ or "").split())
    for path in (("README.md",), ("rlbase", "docs", "algorithms", "a2c.md"),
                 ("rlbase", "docs", "migration.md")):
        text = " ".join(read(*path).split())
        for sentence in re.split(r"(?<=[.;])\s", text):
            if "epsilon" in sentence and "square root" in sentence and "A2C" in sentence \
                    and "tf1_rmsprop" not in sentence:
                assert "outside" in sentence, (path, sentence)


def test_resume_is_documented_for_every_algorithm():
    names = {a.upper() if a not in ("qlearning",) else "Q-learning" for a in ALGORITHMS}
    for path in (("README.md",), ("rlbase", "docs", "cli.md")):
        text = read(*path)
        for sentence in re.split(r"(?<=[.;])\s", text):
            if re.search(r"--resume\b|\bresumes?\b", sentence):
                listed = {n for n in names if re.search(rf"\b{re.escape(n)}\b", sentence)}
                # A sentence about resuming either names no algorithm (it is about all of
                # them) or names every one.
                assert not listed or listed == names, (path, sentence)
