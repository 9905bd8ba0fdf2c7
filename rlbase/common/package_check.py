"""A folder named ``rlbase`` in the current directory (a clone of the repository, whose top
folder is not the package) hides the installed package from ``python -m rlbase.run`` and
``import rlbase``: Python makes an empty namespace package of it, and the first thing to read
``rlbase.__version__`` fails with an AttributeError that names nothing useful."""

from __future__ import annotations

import sys


def shadowing_folder() -> str | None:
    """The folder that ``rlbase`` was imported from when it is not the package (a namespace
    package: no ``__init__.py`` ran), else None."""
    package = sys.modules.get("rlbase")
    if package is None or getattr(package, "__file__", None) is not None:
        return None
    return next(iter(getattr(package, "__path__", None) or []), "a folder named rlbase")


def check_not_shadowed() -> None:
    """One line instead of the AttributeError: under ``python -m rlbase...`` the CLI's
    ``rlbase: error:`` and exit status 2, else an ImportError whose message says it."""
    folder = shadowing_folder()
    if folder is None:
        return
    message = (f"the folder {folder} hides the rlbase package (Python imports it as an empty "
               "namespace package because it is named rlbase and sits in the current "
               "directory): run from another directory, e.g. cd into it, or rename it")
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    if main is not None and str(main.name).startswith("rlbase"):
        print(f"rlbase: error: {message}", file=sys.stderr, flush=True)
        raise SystemExit(2)
    raise ImportError(message, name="rlbase")
