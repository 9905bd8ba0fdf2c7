"""A griffe extension that lets mkdocstrings render rlbase's docstrings as they are meant.

- learn() gets the signature and the parameter docs that ``config_signature`` gives it when its
  module is imported (the source has only ``**kwargs``), read from the live function without
  importing the rest of the package; the "name: meaning" lines become a Google "Args:"
  section, so each parameter gets its row, with the type read from the signature;
- a config's fields (``param(default, doc, unit=...)``) get their doc, unit, range and SB3 name
  as docstrings: the dataclass fields have none of their own;
- Sphinx roles (``:class:`~a.b.C```), which Markdown would print as they are, become code.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|data|attr|mod|obj|exc|py:\w+):`~?([^`]+)`")
# The intro config_signature writes above its "name: meaning" lines.
PARAMETER_INTRO = re.compile(r"^Parameters \(the config's fields are those of .*?:\n\n",
                             re.M | re.S)


def _code_roles(text: str) -> str:
    return ROLE.sub(lambda m: f"`{m.group(1)}`", text)


def _args_section(text: str) -> str:
    """The intro kept, its "name: meaning" lines indented under "Args:"."""
    match = PARAMETER_INTRO.search(text)
    if match is None:
        return text
    head, entries = text[:match.end()], text[match.end():]
    # "[unit; range]" after "[choices]" would read as a Markdown reference link.
    entries = entries.replace("[", "\\[").replace("]", "\\]")
    body = "\n".join(("    " + line) if line else line for line in entries.splitlines())
    return f"{head}Args:\n{body}\n"


def _runtime(path: str) -> Any:
    """The object a griffe path names, imported (None when it cannot be)."""
    module_name, _, attr = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError):
        return None


def _live_signature(func: griffe.Function) -> None:
    """The signature and docstring the function has once its module is imported."""
    live = _runtime(func.path)
    if live is None:
        return
    kinds = {inspect.Parameter.POSITIONAL_ONLY: griffe.ParameterKind.positional_only,
             inspect.Parameter.POSITIONAL_OR_KEYWORD: griffe.ParameterKind.positional_or_keyword,
             inspect.Parameter.VAR_POSITIONAL: griffe.ParameterKind.var_positional,
             inspect.Parameter.KEYWORD_ONLY: griffe.ParameterKind.keyword_only,
             inspect.Parameter.VAR_KEYWORD: griffe.ParameterKind.var_keyword}

    def text(value: Any) -> str | None:
        if value is inspect.Parameter.empty:
            return None
        return value if isinstance(value, str) else inspect.formatannotation(value)

    func.parameters = griffe.Parameters(*(
        griffe.Parameter(p.name, annotation=text(p.annotation), kind=kinds[p.kind],
                         default=None if p.default is p.empty else repr(p.default))
        for p in inspect.signature(live).parameters.values()))
    _set_docstring(func, inspect.cleandoc(live.__doc__ or ""))


def _set_docstring(obj: griffe.Object, text: str, like: griffe.Object | None = None) -> None:
    """Give ``obj`` a docstring read with the parser mkdocstrings gave ``like``'s (or its own)."""
    model = (like or obj).docstring
    obj.docstring = griffe.Docstring(
        text, parent=obj, parser=model.parser if model else griffe.Parser.google,
        parser_options=model.parser_options if model else None)


class RLBaseDocstrings(griffe.Extension):
    """See the module's docstring."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _code_roles(obj.docstring.value)

    def on_function_instance(self, *, func: griffe.Function, **kwargs: Any) -> None:
        if any("config_signature" in str(d.value) for d in func.decorators):
            _live_signature(func)
        if func.docstring is not None:
            func.docstring.value = _args_section(_code_roles(func.docstring.value))

    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        # Lazy: griffe loads this extension before it reads the package it documents.
        from rlbase.common.config import AlgorithmConfig, describe

        runtime = _runtime(cls.path)
        if not (isinstance(runtime, type) and issubclass(runtime, AlgorithmConfig)
                and dataclasses.is_dataclass(runtime)):
            return
        for row in describe(runtime):
            member = cls.members.get(row["name"])
            if not isinstance(member, griffe.Attribute):  # inherited (an alias) or absent
                continue
            facts = [f"{label}: {row[key]}" for key, label in
                     (("unit", "unit"), ("range", "allowed"), ("sb3", "SB3 name"),
                      ("deprecated", "deprecated spellings")) if row[key]]
            text = row["doc"] + (f"\n\n{'; '.join(facts)}." if facts else "")
            _set_docstring(member, text, like=cls)
            member.value = row["default"]
