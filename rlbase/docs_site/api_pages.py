"""The API reference pages, generated from the registry and the package's layout, so that a new
algorithm, class or module of rlbase.common is in the reference without anyone listing it.

Each page is Markdown with mkdocstrings' ``::: dotted.path`` blocks; ``hooks.py`` adds them to
the site as pages under ``api/``.
"""

from __future__ import annotations

import os
import pkgutil

import rlbase
from rlbase.registry import available_algorithms, config_class

PACKAGE_DIR = os.path.dirname(os.path.abspath(rlbase.__file__))


def _block(path: str, options: str = "") -> str:
    return f"::: {path}\n{options}"


def sb3_classes() -> list[str]:
    """The classes ``rlbase.compat.sb3`` exports, as their defining modules' paths."""
    import rlbase.compat.sb3 as sb3  # lazy: imports TensorFlow, which building the nav must not

    paths = []
    for name in sb3.__all__:
        obj = getattr(sb3, name)
        paths.append(f"{obj.__module__}.{obj.__qualname__}")
    return paths


def common_modules() -> list[str]:
    """The public modules and subpackages directly under ``rlbase.common``."""
    folder = os.path.join(PACKAGE_DIR, "common")
    return sorted(f"rlbase.common.{m.name}" for m in pkgutil.iter_modules([folder])
                  if not m.name.startswith("_"))


def learn_page() -> str:
    blocks = [_block(f"rlbase.{alg}.{alg}.learn",
                     f"    options:\n      toc_label: rlbase.{alg}.{alg}.learn\n")
              for alg in available_algorithms()]
    return ("# learn()\n\nEvery algorithm's `learn(network, env, total_timesteps, seed, *, ...)`, "
            "its parameters read from its config ([the one contract](../architecture.md)).\n\n"
            + "\n".join(blocks))


def configs_page() -> str:
    blocks = []
    for alg in available_algorithms():
        cls = config_class(alg)
        blocks.append(_block(f"{cls.__module__}.{cls.__qualname__}"))
    return ("# Configs\n\nEach algorithm's parameters, one frozen dataclass per algorithm "
            "(`rlbase/<alg>/config.py`): every field with its default, unit, allowed range "
            "and Stable-Baselines3 name.\n\n" + "\n".join(blocks))


def classes_page() -> str:
    blocks = [_block(path) for path in sb3_classes()]
    return ("# Model classes\n\nThe Stable-Baselines3-style classes of `rlbase.compat.sb3` "
            "(also importable from `rlbase`); which names they take and what differs from SB3: "
            "[Stable-Baselines3 names](../sb3_names.md).\n\n" + "\n".join(blocks))


def common_page(module: str) -> str:
    return f"# {module}\n\n{_block(module)}"


def index_page() -> str:
    common = "\n".join(f"- [`{m}`](common/{m.rpartition('.')[2]}.md)" for m in common_modules())
    return ("# API reference\n\nGenerated from the docstrings with mkdocstrings.\n\n"
            "- [learn()](learn.md): every algorithm's training function.\n"
            "- [Configs](configs.md): every algorithm's parameters.\n"
            "- [Model classes](classes.md): `PPO`, `DQN`, `SAC`, ... the Stable-Baselines3 way.\n"
            "\n## rlbase.common\n\nThe shared toolkit, by concern:\n\n" + common + "\n")


def pages() -> dict[str, str]:
    """``{path under the docs: Markdown}`` of every API page."""
    found = {"api/index.md": index_page(), "api/learn.md": learn_page(),
             "api/configs.md": configs_page(), "api/classes.md": classes_page()}
    for module in common_modules():
        found[f"api/common/{module.rpartition('.')[2]}.md"] = common_page(module)
    return found


def nav() -> list[object]:
    """The API section of the site's navigation."""
    common = [{m: f"api/common/{m.rpartition('.')[2]}.md"} for m in common_modules()]
    return [{"Overview": "api/index.md"}, {"learn()": "api/learn.md"},
            {"Configs": "api/configs.md"}, {"Model classes": "api/classes.md"},
            {"rlbase.common": common}]
