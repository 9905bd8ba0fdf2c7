"""The algorithm pages' parameter tables, generated from the learn() docstrings.

``python -m rlbase.doc_pages`` rewrites the table between the markers of every page in
rlbase/docs/algorithms/; tests/test_docs.py fails when a page and its docstring differ.
"""

from __future__ import annotations

import os
import re
import sys

from rlbase.common.docstrings import parameter_table

START = "<!-- learn-parameters: generated from the learn() docstring, do not edit -->"
END = "<!-- end learn-parameters -->"


def page_path(algorithm: str) -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "docs", "algorithms", f"{algorithm}.md")


def generated_block(algorithm: str) -> str:
    from rlbase.registry import get_algorithm

    return f"{START}\n{parameter_table(get_algorithm(algorithm).learn)}\n{END}"


def current_block(algorithm: str) -> str | None:
    """The table block of an algorithm's page as it is now (None: no markers)."""
    with open(page_path(algorithm), encoding="utf-8") as f:
        text = f.read()
    match = re.search(re.escape(START) + r".*?" + re.escape(END), text, re.S)
    return match.group(0) if match else None


def rewrite_page(algorithm: str) -> bool:
    """Put the generated table between the page's markers; True when the page changed."""
    path = page_path(algorithm)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    block = generated_block(algorithm)
    if START not in text:
        raise SystemExit(f"{path} has no '{START}' marker")
    new = re.sub(re.escape(START) + r".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return new != text


def main() -> None:
    from rlbase.registry import available_algorithms

    changed = [alg for alg in available_algorithms() if rewrite_page(alg)]
    print(f"rewrote {', '.join(changed) if changed else 'nothing'}", file=sys.stderr)


if __name__ == "__main__":
    main()
