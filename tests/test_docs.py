"""The docs say what the code does: generated tables match, hand-written claims are checked."""

import importlib.util
import os
import re
import shlex

import pytest

from rlbase import registry
from rlbase.common.config import describe
from rlbase.doc_pages import (
    current_block,
    current_page_table_block,
    generated_block,
    page_table_block,
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


@pytest.mark.parametrize("name", ["sb3_names", "cli"])
def test_sb3_names_and_cli_flag_tables_are_the_code(name):
    assert current_page_table_block(name) == page_table_block(name), \
        "run python -m rlbase.doc_pages"


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
    for path in (("README.md",), ("rlbase", "docs", "guide.md"),
                 ("rlbase", "docs", "algorithms", "a2c.md"), ("rlbase", "docs", "migration.md")):
        text = " ".join(read(*path).split())
        for sentence in re.split(r"(?<=[.;])\s", text):
            if "epsilon" in sentence and "square root" in sentence and "A2C" in sentence \
                    and "tf1_rmsprop" not in sentence:
                assert "outside" in sentence, (path, sentence)


def test_resume_is_documented_for_every_algorithm():
    names = {a.upper() if a not in ("qlearning",) else "Q-learning" for a in ALGORITHMS}
    for path in (("README.md",), ("rlbase", "docs", "guide.md"), ("rlbase", "docs", "cli.md")):
        text = read(*path)
        for sentence in re.split(r"(?<=[.;])\s", text):
            if re.search(r"--resume\b|\bresumes?\b", sentence):
                listed = {n for n in names if re.search(rf"\b{re.escape(n)}\b", sentence)}
                # A sentence about resuming either names no algorithm (it is about all of
                # them) or names every one.
                assert not listed or listed == names, (path, sentence)


# The README: short, and every command, example, link and name in it is real.
README = read("README.md")
NUMBERS = {"twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
           "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20}


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


def _section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _github_slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_readme_is_short_and_its_test_command_is_the_one_ci_runs():
    assert len(README.splitlines()) <= 250
    commands = [line for block in _blocks("bash") for line in block.splitlines()
                if "pytest" in line]
    assert commands == ['pip install -e ".[test]" && python -m pytest -n 2 tests']
    assert commands[0] in read(".ci", "run").splitlines()


def test_readme_links_resolve():
    links = re.findall(r"\]\(([^)\s]+)\)", README)
    assert len(links) > 30
    for link in links:
        if link.startswith(("http://", "https://")):
            continue
        path, _, anchor = link.partition("#")
        full = os.path.join(ROOT, path)
        assert os.path.exists(full), link
        if anchor:
            headings = re.findall(r"^#+ (.+)$", read(path), re.M)
            assert anchor in {_github_slug(h) for h in headings}, link


def test_readme_lists_every_algorithm_and_class():
    algorithms = registry.available_algorithms()
    number = re.search(r"(\w+) algorithms, one contract", README).group(1)
    assert NUMBERS[number.lower()] == len(algorithms)
    rows = [line.split("|") for line in _section("Algorithms").splitlines()
            if line.startswith("| ") and "---" not in line][1:]
    spelled = {name for row in rows for name in re.findall(r"`(\w+)`", row[2])}
    assert set(algorithms) | set(registry.ALIASES) <= spelled
    for row in rows:  # each row's page exists (checked above) and its learn() module imports
        for module in re.findall(r"`(rlbase\.\w+\.\w+)`", row[3]):
            assert importlib.util.find_spec(module) is not None, module
    import rlbase
    import rlbase.compat.sb3 as sb3

    named = set(re.findall(r"`(\w+)`", _section("The model classes (the Stable-Baselines3 way)")
                           .split("take rlbase's names")[0]))
    models = {n for n in sb3.__all__ if n not in ("BaseRLModel", "ExpertDataset",
                                                  "generate_expert_traj")}
    assert named == models and all(hasattr(rlbase, n) for n in named)


def test_readme_commands_run_as_written(tmp_path, monkeypatch):
    # Each `python -m rlbase.run` line of the README as a user copies it, its budget cut to
    # 2,000 steps and one episode played: it trains, saves, logs and plots where it says.
    from rlbase.run import main

    monkeypatch.chdir(tmp_path)
    text = "\n".join(_blocks("bash")).replace("\\\n", " ")
    commands = re.findall(r"python -m rlbase\.run (.*)", text)
    assert len(commands) == 2
    for command in commands:
        args = [("--num_timesteps=2000" if a.startswith("--num_timesteps=") else a)
                for a in shlex.split(command)] + ["--no_progress", "--play_episodes=1"]
        main(args)
    assert (tmp_path / "models" / "cartpole.zip").is_file()
    assert any(p.suffix == ".png" for p in (tmp_path / "logs" / "cartpole").iterdir())


def test_readme_python_examples_run_as_written(tmp_path, monkeypatch):
    # The learn() and model-class examples, their budgets cut from 100,000 to 2,048 steps.
    monkeypatch.chdir(tmp_path)
    blocks = _blocks("python")
    assert len(blocks) == 2
    for block in blocks:
        assert "total_timesteps=100_000" in block
        exec(compile(block.replace("total_timesteps=100_000", "total_timesteps=2_048"),
                     "README.md", "exec"), {})
    assert (tmp_path / "ppo_cartpole.zip").is_file()
