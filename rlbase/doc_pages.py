"""The algorithm pages' parameter tables, generated from the configs' fields.

``python -m rlbase.doc_pages`` rewrites the table between the markers of every page in
rlbase/docs/algorithms/; tests/test_docs.py fails when a page and its docstring differ.
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import sys
from typing import Any, Callable

from rlbase.cli_args import common_arg_parser
from rlbase.common.config import describe, parameter_table
from rlbase.registry import available_algorithms, config_class, get_algorithm

START = "<!-- learn-parameters: generated from the config, do not edit -->"
END = "<!-- end learn-parameters -->"
CLI_START = "<!-- cli-flags: generated from the CLI's parser, do not edit -->"
CLI_END = "<!-- end cli-flags -->"
SB3_START = "<!-- sb3-names: generated from the configs' fields, do not edit -->"
SB3_END = "<!-- end sb3-names -->"


def _page(algorithm: str) -> str:
    return os.path.join("algorithms", f"{algorithm}.md")


def _docs_text(page: str) -> tuple[str, str]:
    """The path of a page of rlbase/docs and its text."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "docs", page)
    with open(path, encoding="utf-8") as f:
        return path, f.read()


def _block_in(page: str, start: str, end: str) -> str | None:
    """The generated block of a docs page as it is now, markers included (None: no markers)."""
    match = re.search(re.escape(start) + r".*?" + re.escape(end), _docs_text(page)[1], re.S)
    return match.group(0) if match else None


def _rewrite(page: str, start: str, end: str, block: str) -> bool:
    """Put ``block`` between the page's markers; True when the page changed."""
    path, text = _docs_text(page)
    if start not in text:
        raise SystemExit(f"{path} has no '{start}' marker")
    new = re.sub(re.escape(start) + r".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return new != text


def run_arguments_table(learn: Any) -> str:
    """learn()'s arguments that are not config fields, with their defaults."""
    from rlbase.common.loops.learning import RUN_ARGUMENTS  # lazy: imports TensorFlow

    rows = ["| argument | default | meaning |", "|---|---|---|"]
    for name, param in inspect.signature(learn).parameters.items():
        label = f"**{name}" if param.kind is param.VAR_KEYWORD else name
        if label not in RUN_ARGUMENTS:
            continue
        default = "" if param.kind is param.VAR_KEYWORD else \
            "required" if param.default is param.empty else f"`{param.default!r}`"
        rows.append(f"| `{label}` | {default} | {RUN_ARGUMENTS[label]} |")
    return "\n".join(rows)


def generated_block(algorithm: str) -> str:
    entry = get_algorithm(algorithm)
    name = entry.config.__name__
    return (f"{START}\nlearn()'s arguments:\n\n{run_arguments_table(entry.learn)}\n\n"
            f"The algorithm's parameters (`{name}`; keyword arguments of learn(), of the class "
            f"and of the CLI as `--name=value`):\n\n{parameter_table(entry.config)}\n{END}")


def current_block(algorithm: str) -> str | None:
    return _block_in(_page(algorithm), START, END)


def cli_flags_table() -> str:
    """Every flag of ``python -m rlbase.run`` with its help and default, as --help has them."""
    rows = ["| flag | meaning | default |", "|---|---|---|"]
    for action in common_arg_parser()._actions:
        flags = ", ".join(f"`{f}`" for f in action.option_strings)
        default = action.default
        shown = "" if default in (None, argparse.SUPPRESS, False) else f"`{default!r}`"
        text = " ".join((action.help or "").split()).replace("|", "\\|")
        rows.append(f"| {flags} | {text} | {shown} |")
    return "\n".join(rows)


def sb3_names_table() -> str:
    """Each algorithm's Stable-Baselines3 names and the fields they set."""
    rows = ["| algorithm | SB3 name | rlbase |", "|---|---|---|"]
    for alg in available_algorithms():
        config = config_class(alg)
        by_name: dict[str, list[str]] = {}
        for row in describe(config):
            if row["sb3"]:
                by_name.setdefault(row["sb3"], []).append(f"`{row['name']}`")
        for name, fields in by_name.items():
            if fields == [f"`{name}`"]:  # the same name in both: listed in the text above
                continue
            rows.append(f"| {alg} | `{name}` | {' and '.join(fields)} |")
        for name, allowed in config.sb3_fixed.items():
            values = allowed if isinstance(allowed, tuple) else (allowed,)
            shown = " or ".join(f"`{v!r}`" for v in values)
            rows.append(f"| {alg} | `{name}` | accepted when {shown}: what rlbase does |")
    return "\n".join(rows)


# The tables of other pages: name -> (page, start marker, end marker, the table from the code).
PAGE_TABLES: dict[str, tuple[str, str, str, Callable[[], str]]] = {
    "cli": ("cli.md", CLI_START, CLI_END, cli_flags_table),
    "sb3_names": ("sb3_names.md", SB3_START, SB3_END, sb3_names_table),
}


def page_table_block(name: str) -> str:
    """The generated block of the page table ``name`` (a key of :data:`PAGE_TABLES`)."""
    _, start, end, table = PAGE_TABLES[name]
    return f"{start}\n{table()}\n{end}"


def current_page_table_block(name: str) -> str | None:
    page, start, end, _ = PAGE_TABLES[name]
    return _block_in(page, start, end)


def main() -> None:
    changed = [alg for alg in available_algorithms()
               if _rewrite(_page(alg), START, END, generated_block(alg))]
    for name, (page, start, end, _) in PAGE_TABLES.items():
        if _rewrite(page, start, end, page_table_block(name)):
            changed.append(name)
    print(f"rewrote {', '.join(changed) if changed else 'nothing'}", file=sys.stderr)


if __name__ == "__main__":
    main()
