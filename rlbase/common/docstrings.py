"""learn() docstrings as data: each learn() documents its parameters one per line,
``name: text`` (continuation lines indented); the docs' parameter tables are generated from
them (rlbase/doc_pages.py)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Parameter:
    name: str
    default: str
    meaning: str


def _default(param: inspect.Parameter) -> str:
    if param.kind is param.VAR_KEYWORD:
        return ""
    if param.default is param.empty:
        return "required"
    return f"`{param.default!r}`"


def documented_parameters(learn: Callable[..., Any]) -> list[Parameter]:
    """learn()'s parameters in signature order, with the text its docstring gives each."""
    doc = inspect.getdoc(learn) or ""
    texts: dict[str, str] = {}
    current: str | None = None
    for line in doc.splitlines():
        match = re.match(r"^(\*\*)?(\w+): (.*)$", line)
        if match:
            current = match.group(2)
            texts[current] = match.group(3).strip()
        elif current is not None and line.startswith(" ") and line.strip():
            texts[current] += " " + line.strip()
        else:
            current = None
    out = []
    for name, param in inspect.signature(learn).parameters.items():
        label = f"**{name}" if param.kind is param.VAR_KEYWORD else name
        out.append(Parameter(label, _default(param), texts.get(name, "")))
    return out


def parameter_table(learn: Callable[..., Any], skip: tuple[str, ...] = ()) -> str:
    """The table of learn()'s documented parameters, less those in ``skip``."""
    rows = ["| parameter | default | meaning |", "|---|---|---|"]
    for p in documented_parameters(learn):
        if p.name in skip:
            continue
        meaning = p.meaning.replace("|", "\\|")
        rows.append(f"| `{p.name}` | {p.default} | {meaning} |")
    return "\n".join(rows)
