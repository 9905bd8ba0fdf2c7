"""The house rules of rlbase/docs/architecture.md, read from the source: no import cycle
(imports inside functions count), nothing in rlbase/common imports anything of rlbase outside
it, and no folder of more than 25 modules."""

from __future__ import annotations

import ast
import os
from collections import defaultdict

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rlbase")
MAX_MODULES = 25


def modules() -> dict[str, str]:
    found = {}
    for folder, _, names in os.walk(PACKAGE):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, os.path.dirname(PACKAGE))[:-3].replace(os.sep, ".")
                found[dotted.removesuffix(".__init__")] = path
    return found


def imports(path: str) -> list[str]:
    """Every rlbase module a file imports (at any depth: functions count too)."""
    names = []
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return [n for n in names if n == "rlbase" or n.startswith("rlbase.")]


def graph() -> dict[str, set[str]]:
    mods = modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = defaultdict(set)
    for mod, path in mods.items():
        for name in imports(path):
            target = resolve(name)
            if target and target != mod and not mod.startswith(target + "."):
                edges[mod].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in list(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    assert cycles(graph()) == []


def test_nothing_in_common_imports_upwards():
    upward = [f"{mod} -> {target}" for mod, targets in graph().items()
              if mod.startswith("rlbase.common") for target in targets
              if not target.startswith("rlbase.common") and target != "rlbase"]
    assert upward == []


ALGORITHMS = ("a2c", "acer", "acktr", "ddpg", "dqn", "es", "gail", "ppo", "qlearning", "sac",
              "trpo")


def test_the_core_never_imports_the_compatibility_layer():
    """Foreign names (SB3's classes, rlib's, old module paths) are translated in rlbase.compat;
    rlbase.common and the algorithm packages know none of them."""
    core = ("rlbase.common",) + tuple(f"rlbase.{alg}" for alg in ALGORITHMS)
    inward = [f"{mod} -> {target}" for mod, targets in graph().items()
              if mod.startswith(core) for target in targets if target.startswith("rlbase.compat")]
    assert inward == []


def test_no_folder_over_25_modules():
    counts: dict[str, int] = defaultdict(int)
    for path in modules().values():
        counts[os.path.relpath(os.path.dirname(path), os.path.dirname(PACKAGE))] += 1
    crowded = {folder: n for folder, n in counts.items() if n > MAX_MODULES}
    assert crowded == {}


def test_the_checks_see_a_cycle_and_an_upward_import():
    """The rules above can fail: a made-up graph with both is caught."""
    edges = {"rlbase.common.a": {"rlbase.common.b"}, "rlbase.common.b": {"rlbase.common.a"},
             "rlbase.common.c": {"rlbase.registry"}}
    assert cycles(edges) == [["rlbase.common.a", "rlbase.common.b"]]
