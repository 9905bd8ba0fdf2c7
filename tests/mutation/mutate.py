"""Mutation testing of rlbase's algorithm cores: change one operator, number or condition in a
module, run that module's fast tests, and count the changes ("mutants") no test notices.

    pip install -e ".[mutation]"
    python tests/mutation/mutate.py rlbase/common/schedules.py     # one module, minutes
    python tests/mutation/mutate.py --all                          # every module of targets.toml
    python tests/mutation/mutate.py --list                         # the modules and their tests
    python tests/mutation/mutate.py --again rlbase/common/schedules.py   # after adding tests

``--again`` reruns only the previous run's survivors (the mutants its tests killed are counted
killed again) when the module is unchanged since that run: tests were added, not removed, so a
killed mutant stays killed. A changed module, or no previous run, runs every mutant.

The mutants come from cosmic-ray (operators, comparisons, numbers, boolean and unary
operators, break/continue, loops run zero times) and run in a copy of the tree under
``--workdir``, so the checkout is never modified. Mutants inside type annotations are skipped
(the modules use ``from __future__ import annotations``: annotations are never evaluated).

A survivor is either killed by a new test or listed in ``tests/mutation/equivalent.toml`` with
the reason it cannot change a result. The command exits 1 while any survivor is unexplained and
prints each one as its line before and after.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field

import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGETS = os.path.join(HERE, "targets.toml")
EQUIVALENT = os.path.join(HERE, "equivalent.toml")
FORKSERVER = os.path.join(HERE, "forkserver.py")


@dataclass
class Survivor:
    line: str
    mutant: str
    lineno: int
    operator: str
    definition: str
    reason: str | None = None


@dataclass
class Score:
    module: str
    mutants: int = 0
    killed: int = 0
    skipped: int = 0
    survivors: list[Survivor] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def unexplained(self) -> list[Survivor]:
        return [s for s in self.survivors if s.reason is None]

    def row(self) -> str:
        tested = self.mutants - self.skipped
        equivalent = len(self.survivors) - len(self.unexplained)
        raw = self.killed / tested if tested else 1.0
        adjusted = self.killed / (tested - equivalent) if tested - equivalent else 1.0
        return (f"| {self.module} | {tested} | {self.killed} | {len(self.survivors)} | "
                f"{equivalent} | {len(self.unexplained)} | {raw:.1%} | {adjusted:.1%} | "
                f"{self.seconds / 60:.1f} |")


HEADER = ("| module | mutants run | killed | survived | equivalent (listed) | unexplained | "
          "score | score without equivalents | minutes |\n|---|---|---|---|---|---|---|---|---|")


def load_targets() -> dict[str, list[str]]:
    with open(TARGETS, "rb") as f:
        return {module: entry["tests"] for module, entry in tomllib.load(f)["modules"].items()}


def load_equivalents() -> list[dict[str, str]]:
    with open(EQUIVALENT, "rb") as f:
        return tomllib.load(f).get("equivalent", [])


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) positions of every annotation, as cosmic-ray's (line, column) pairs."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        notes: list[ast.expr | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            notes.append(node.returns)
        elif isinstance(node, ast.arg):
            notes.append(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            notes.append(node.annotation)
        for note in notes:
            if note is not None:
                spans.append(((note.lineno, note.col_offset),
                              (note.end_lineno or note.lineno, note.end_col_offset or 0)))
    return spans


def _inside(pos: tuple[int, int], spans: list[tuple[tuple[int, int], tuple[int, int]]]) -> bool:
    return any(start <= tuple(pos) < end for start, end in spans)


def _changed_lines(diff: str) -> tuple[str, str]:
    """The mutated line before and after, from cosmic-ray's unified diff."""
    before = [ln[1:] for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    after = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return (" ".join(s.strip() for s in before if s.strip()),
            " ".join(s.strip() for s in after if s.strip()))


def copy_tree(dest: str) -> None:
    """The package and the tests as they are now in the checkout (committed or not)."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "mutation-runs")
    for part in ("rlbase", "tests"):
        shutil.copytree(os.path.join(ROOT, part), os.path.join(dest, part), ignore=ignore)


def previous_session(base: str, module: str) -> str | None:
    """The last run's session database, moved aside, if it ran this very module source."""
    db, old_source = os.path.join(base, "session.sqlite"), os.path.join(base, "tree", module)
    if not (os.path.exists(db) and os.path.exists(old_source)):
        return None
    with open(old_source, "rb") as old, open(os.path.join(ROOT, module), "rb") as new:
        if old.read() != new.read():
            return None
    kept = os.path.join(base, "previous.sqlite")
    os.replace(db, kept)
    return kept


def carry_kills(db: str, previous: str) -> int:
    """Copy the previous session's killed results onto the same mutants of this session;
    returns how many were carried."""
    from cosmic_ray.work_db import WorkDB, use_db

    def key(item: object) -> tuple:
        m = item.mutations[0]  # type: ignore[attr-defined]
        return m.operator_name, m.occurrence, tuple(m.start_pos), tuple(m.end_pos)

    with use_db(previous, WorkDB.Mode.open) as old:
        killed = {key(item): result for item, result in old.completed_work_items
                  if result.worker_outcome != "skipped" and result.test_outcome != "survived"}
    carried = 0
    with use_db(db, WorkDB.Mode.open) as work_db:
        for item in list(work_db.pending_work_items):
            if key(item) in killed:
                work_db.set_result(item.job_id, killed[key(item)])
                carried += 1
    return carried


def run_module(module: str, tests: list[str], workdir: str, timeout: float | None,
               again: bool = False, fork: bool = True) -> Score:
    slug = re.sub(r"[^A-Za-z0-9]+", "_", module)
    base = os.path.join(workdir, slug)
    tree = os.path.join(base, "tree")
    previous = previous_session(base, module) if again else None
    copy_tree(tree)
    env = {**os.environ, "PYTHONPATH": tree, "RLBASE_TF_THREADS": "1"}
    args = ["-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-m", "not slow", *tests]
    pytest = [sys.executable, "-m", "pytest", *args]
    server = None
    if fork:
        server, socket_path = start_forkserver(tree, env)
        pytest = [sys.executable, FORKSERVER, "run", socket_path, "3600", "--", *args]
    try:
        return _run_module(module, tree, base, env, pytest, timeout, previous)
    finally:
        if server is not None:
            server.kill()
            server.wait()


def start_forkserver(tree: str, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """The server of tests/mutation/forkserver.py, ready for requests on its socket."""
    socket_path = os.path.join(tempfile.mkdtemp(prefix="mut"), "s")
    server = subprocess.Popen([sys.executable, FORKSERVER, "serve", socket_path], cwd=tree,
                              env=env, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    if server.stdout.readline().strip() != "ready":
        raise SystemExit("the fork server did not start (run with --no-fork to see why)")
    return server, socket_path


def _run_module(module: str, tree: str, base: str, env: dict[str, str], pytest: list[str],
                timeout: float | None, previous: str | None) -> Score:
    started = time.time()
    first = subprocess.run(pytest, cwd=tree, env=env, capture_output=True, text=True)
    if first.returncode != 0:
        raise SystemExit(f"{module}: its tests fail before any mutation:\n{first.stdout[-3000:]}")
    baseline = time.time() - started
    limit = timeout or round(3 * baseline + 30)
    if FORKSERVER in pytest:  # the server stops a looping mutant's tests before cosmic-ray
        pytest[pytest.index(FORKSERVER) + 3] = str(max(limit - 2, 1))
    config = os.path.join(base, "config.toml")
    db = os.path.join(base, "session.sqlite")
    with open(config, "w", encoding="utf-8") as f:
        f.write("[cosmic-ray]\n"
                f"module-path = {json.dumps(module)}\n"
                f"timeout = {limit}\n"
                "excluded-modules = []\n"
                f"test-command = {json.dumps(shlex.join(pytest))}\n"
                "[cosmic-ray.distributor]\nname = \"local\"\n")
    if os.path.exists(db):
        os.remove(db)
    cosmic = [sys.executable, "-m", "cosmic_ray.cli"]
    subprocess.run([*cosmic, "init", config, db], cwd=tree, env=env, check=True,
                   capture_output=True)
    skip_annotations(db, os.path.join(tree, module))
    if previous:
        print(f"{module}: {carry_kills(db, previous)} mutants killed in the previous run, "
              "the rest run again", flush=True)
    subprocess.run([*cosmic, "exec", config, db], cwd=tree, env=env, check=True,
                   capture_output=True)
    score = read_score(module, db)
    score.seconds = time.time() - started
    with open(os.path.join(base, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(asdict(score), f, indent=1)
    return score


def skip_annotations(db: str, path: str) -> None:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    with open(path, encoding="utf-8") as f:
        spans = annotation_spans(f.read())
    with use_db(db, WorkDB.Mode.open) as work_db:
        for item in list(work_db.pending_work_items):
            if all(_inside(m.start_pos, spans) for m in item.mutations):
                work_db.set_result(item.job_id, WorkResult(
                    output="inside a type annotation", worker_outcome=WorkerOutcome.SKIPPED))


def read_score(module: str, db: str) -> Score:
    from cosmic_ray.work_db import WorkDB, use_db

    known = [e for e in load_equivalents() if e["module"] == module]
    score = Score(module)
    with use_db(db, WorkDB.Mode.open) as work_db:
        for item, result in work_db.completed_work_items:
            score.mutants += 1
            if result.worker_outcome == "skipped":
                score.skipped += 1
            elif result.test_outcome == "survived":
                line, mutant = _changed_lines(result.diff or "")
                mutation = item.mutations[0]
                where = mutation.definition_name or ""
                reason = next((e["reason"] for e in known if (e["definition"], e["line"],
                               e["mutant"]) == (where, line, mutant)), None)
                score.survivors.append(Survivor(line, mutant, mutation.start_pos[0],
                                                mutation.operator_name, where, reason))
            elif "no tests ran" in (result.output or ""):
                raise SystemExit(f"{module}: the test command ran no test: {result.output}")
            else:  # killed, or the mutant could not even be imported or ran out of time
                score.killed += 1
    return score


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="modules of targets.toml (paths)")
    parser.add_argument("--all", action="store_true", help="every module of targets.toml")
    parser.add_argument("--list", action="store_true", help="print the modules and their tests")
    parser.add_argument("--tests", nargs="+", help="run these tests instead of targets.toml's")
    parser.add_argument("--timeout", type=float, help="seconds per mutant's test run (default: "
                        "three times the unmutated run plus 30)")
    parser.add_argument("--again", action="store_true", help="rerun only the previous run's "
                        "survivors if the module is unchanged since")
    parser.add_argument("--no-fork", action="store_true", help="start a fresh Python per "
                        "mutant instead of forking one that imported TensorFlow already")
    parser.add_argument("--workdir", default=os.path.join(ROOT, "mutation-runs"),
                        help="where the copies and the cosmic-ray sessions go")
    args = parser.parse_args(argv)
    targets = load_targets()
    if args.list:
        for module, tests in targets.items():
            print(module, " ".join(tests))
        return 0
    modules = list(targets) if args.all else args.modules
    unknown = [m for m in modules if m not in targets and not args.tests]
    if not modules or unknown:
        parser.error(f"name modules of {TARGETS} (unknown: {unknown}) or pass --all")
    scores = [run_module(m, args.tests or targets[m], args.workdir, args.timeout, args.again,
                         not args.no_fork) for m in modules]
    print(HEADER)
    for score in scores:
        print(score.row())
    open_ones = [(s.module, v) for s in scores for v in s.unexplained]
    for module, v in open_ones:
        print(f"\nsurvived: {module}:{v.lineno} in {v.definition} ({v.operator})\n"
              f"  line = {json.dumps(v.line)}\n  mutant = {json.dumps(v.mutant)}")
    return 1 if open_ones else 0


if __name__ == "__main__":
    sys.exit(main())
