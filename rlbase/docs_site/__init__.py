"""rlbase's documentation site: the pages of rlbase/docs and the docstrings, built with MkDocs
(Material theme; mkdocstrings for the API reference).

    rlbase docs build [--out=DIR]          (= python -m rlbase.docs_site build)
    rlbase docs serve [--addr=HOST:PORT]   live preview, rebuilt when a page or a docstring changes
    rlbase docs config                     print the mkdocs.yml both use

``build`` is strict: a warning (a dead link, an anchor that is not there, a ``:::`` reference
to nothing, a docstring mkdocstrings cannot read) fails it. The site goes to ``site/`` under
the current folder unless ``--out`` says otherwise; nothing is written inside the package.
Needs the docs extra: ``pip install -e ".[docs]"``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Any

import yaml

from rlbase.common.arg_types import OneLineParser
from rlbase.common.errors import RLBaseError

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS_DIR = os.path.join(os.path.dirname(HERE), "docs")
DEFAULT_OUT = "site"

# The hand-ordered sections of the navigation (the algorithms and the API pages are listed from
# the folder and the registry: site_nav()).
SECTIONS: list[Any] = [
    {"Using rlbase": [
        {"User guide": "guide.md"}, {"Command line": "cli.md"},
        {"Atari, MuJoCo, Box2D, goal envs": "environments.md"}, {"What is logged": "logging.md"},
        {"Action masking": "action_masking.md"}, {"Hindsight Experience Replay": "her.md"},
        {"Tuning": "tuning.md"}, {"Exporting a policy": "export.md"},
        {"Mixed precision": "precision.md"}, {"When a run is interrupted": "interruptions.md"},
        {"Reproducibility": "reproducibility.md"}, {"Save-file format": "save_format.md"}]},
    {"Coming from": [
        {"Stable-Baselines3": "sb3_names.md"}, {"OpenAI Baselines": "migration.md"},
        {"rlib": "rlib.md"}]},
    {"Results": [{"Benchmarks": "benchmarks.md"}, {"Results": "results.md"},
                 {"Speed": "speed.md"}]},
    {"Inside rlbase": [{"The one contract": "architecture.md"},
                       {"How rlbase is tested": "testing.md"}]},
]


def algorithm_pages() -> list[dict[str, str]]:
    """The overview, then every page of docs/algorithms/, so that a new algorithm's page is in
    the navigation without anyone listing it; each titled by its heading's name ("ACER" of
    "ACER (actor-critic with experience replay)")."""
    folder = os.path.join(DOCS_DIR, "algorithms")
    entries = [{"Overview": "algorithms/index.md"}]
    for name in sorted(n for n in os.listdir(folder) if n.endswith(".md") and n != "index.md"):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            heading = next((line[2:] for line in f if line.startswith("# ")), name[:-3])
        entries.append({heading.split(" (")[0].strip(): f"algorithms/{name}"})
    return entries


def site_nav() -> list[Any]:
    # Lazy: api_pages imports the classes (TensorFlow); `rlbase docs --help` must not pay for it.
    from rlbase.docs_site.api_pages import nav

    return [{"Home": "index.md"}, {"Algorithms": algorithm_pages()}, *SECTIONS,
            {"API reference": nav()}]


def config(site_dir: str) -> dict[str, Any]:
    """The MkDocs configuration: rlbase/docs as the pages, the site written to ``site_dir``."""
    return {
        "site_name": "rlbase",
        "site_description": "Reinforcement-learning algorithms on TensorFlow 2 and gymnasium, "
                            "in the Baselines style",
        "docs_dir": DOCS_DIR,
        "site_dir": os.path.abspath(site_dir),
        "strict": True,
        "theme": {"name": "material",
                  "features": ["navigation.sections", "navigation.top", "search.suggest",
                               "search.highlight", "content.code.copy"],
                  "palette": {"primary": "indigo"}},
        "nav": site_nav(),
        # Every check MkDocs has, as a warning (so an error, strict): dead links and anchors.
        "validation": {"omitted_files": "warn", "absolute_links": "warn",
                       "unrecognized_links": "warn", "anchors": "warn"},
        "markdown_extensions": ["admonition", "attr_list", "tables", "pymdownx.superfences",
                                "pymdownx.highlight", {"toc": {"permalink": True}}],
        "hooks": [os.path.join(HERE, "hooks.py")],
        "watch": [os.path.dirname(HERE)],
        "plugins": [
            "search",
            {"mkdocstrings": {"default_handler": "python", "handlers": {"python": {
                "paths": [os.path.dirname(os.path.dirname(HERE))],
                "options": {
                    "docstring_style": "google",
                    "extensions": [os.path.join(HERE, "griffe_rlbase.py") + ":RLBaseDocstrings"],
                    "show_root_heading": True, "show_root_full_path": True,
                    "heading_level": 2, "members_order": "source",
                    "filters": ["!^_"], "show_source": False,
                    "separate_signature": True, "show_signature_annotations": True,
                    "show_submodules": True, "merge_init_into_class": True}}}}},
        ],
    }


def write_config(site_dir: str, folder: str) -> str:
    """Write mkdocs.yml for ``site_dir`` into ``folder``; its path."""
    path = os.path.join(folder, "mkdocs.yml")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(config(site_dir), f, sort_keys=False)
    return path


def _mkdocs(args: list[str]) -> int:
    try:
        import material  # noqa: F401
        import mkdocs  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError as e:
        raise RLBaseError(f"the docs site needs MkDocs ({e.name} is missing): "
                          "pip install -e '.[docs]'") from None
    # Material's banner about MkDocs 2 is not about this site: off.
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    child = subprocess.Popen([sys.executable, "-m", "mkdocs", *args], env=env)
    # A SIGTERM or Ctrl-C to this process ends MkDocs too (serve would run on otherwise).
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, lambda *_: child.terminate()) if main_thread \
        else None
    try:
        return child.wait()
    except KeyboardInterrupt:
        child.terminate()
        return child.wait()
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
        if child.poll() is None:
            child.kill()


def build(out: str = DEFAULT_OUT) -> int:
    """Build the site strictly into ``out``; MkDocs' exit status."""
    with tempfile.TemporaryDirectory(prefix="rlbase-docs-") as folder:
        return _mkdocs(["build", "--strict", "--clean", "-f", write_config(out, folder)])


def serve(addr: str = "127.0.0.1:8000") -> int:
    with tempfile.TemporaryDirectory(prefix="rlbase-docs-") as folder:
        site = os.path.join(folder, "site")
        return _mkdocs(["serve", "--strict", "-a", addr, "-f", write_config(site, folder)])


def main(argv: list[str] | None = None) -> None:
    """``rlbase docs build|serve|config`` (a mistake is one line: run through rlbase.cli)."""
    parser = OneLineParser(prog="rlbase docs", description=(__doc__ or "").split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build the site (strict: a warning fails it)")
    b.add_argument("--out", default=DEFAULT_OUT, help="where the site goes (default site/)")
    s = sub.add_parser("serve", help="serve the site locally, rebuilt on every change")
    s.add_argument("--addr", default="127.0.0.1:8000", help="HOST:PORT (default 127.0.0.1:8000)")
    sub.add_parser("config", help="print the generated mkdocs.yml")
    args = parser.parse_args(argv)
    if args.command == "config":
        yaml.safe_dump(config(DEFAULT_OUT), sys.stdout, sort_keys=False)
        return
    code = build(args.out) if args.command == "build" else serve(args.addr)
    if code:
        raise SystemExit(code)
    if args.command == "build":
        print(f"site written to {os.path.abspath(args.out)}")
