"""TensorFlow's start-up notices kept off stderr, whoever imports TensorFlow first.

On a CPU machine TF 2.21 prints ~7 lines when it is imported and when it first looks for devices
(absl's "All log messages before absl::InitializeLog()", the oneDNN notice, cudart_stub's "Could
not find cuda drivers", cuInit's error). Most are written from C++ before absl's logging is set
up, so ``TF_CPP_MIN_LOG_LEVEL`` cannot hide them. :func:`install` hooks the first
``import tensorflow``: the file descriptor 2 is captured while TensorFlow loads and lists its
devices, then every captured line except those notices is written back to stderr, so real errors
and warnings still show. ``TF_CPP_MIN_LOG_LEVEL=0`` or ``RLBASE_TF_VERBOSE=1`` shows everything.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Sequence
from types import ModuleType

TYPE_CHECKING = False  # (not typing's: `import rlbase` stays ~2 ms without importing typing)
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from typing import Any

# Start-up notices of a TensorFlow build on a machine without (usable) CUDA; nothing else.
CHATTER = (
    r"All log messages before absl::InitializeLog\(\) is called"
    r"|oneDNN custom operations are on"
    r"|Could not find cuda drivers on your machine"
    r"|failed call to cuInit"
    r"|Unable to register cu(DNN|FFT|BLAS) factory"
    r"|computation placer already registered"
    r"|TF-TRT Warning: Could not find TensorRT"
    r"|This TensorFlow binary is optimized to use available CPU instructions"
    r"|To enable the following instructions: .* in other operations, rebuild TensorFlow"
)


def wanted() -> bool:
    """Whether the user asked to see TensorFlow's notices."""
    return os.environ.get("TF_CPP_MIN_LOG_LEVEL") == "0" or bool(os.environ.get(
        "RLBASE_TF_VERBOSE"))


def filter_chatter(text: str) -> str:
    """``text`` without the lines of TensorFlow's start-up notices."""
    chatter = re.compile(CHATTER)
    return "".join(line for line in text.splitlines(keepends=True) if not chatter.search(line))


@contextlib.contextmanager
def stderr_without_chatter() -> Iterator[None]:
    """Capture file descriptor 2 (C++ and Python writes alike) inside the block, then write
    back what is not start-up chatter."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no usable stderr: nothing to keep clean
        yield
        return
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = filter_chatter(captured.read().decode("utf-8", "replace"))
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()


class _QuietLoader:
    """TensorFlow's own loader, run with stderr filtered; device discovery (where cuInit
    complains) is done inside too."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # The module keeps TensorFlow's loader, not this wrapper.
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        with stderr_without_chatter():
            self.loader.exec_module(module)
            module.config.list_physical_devices()


class _TensorFlowFinder:
    """Finds nothing itself: wraps the loader of the first ``import tensorflow``."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname != "tensorflow":
            return None

        uninstall()
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            # (duck-typed, so importlib.abc is not imported at `import rlbase`)
            spec.loader = _QuietLoader(spec.loader)  # type: ignore[assignment]
        return spec


_FINDER = _TensorFlowFinder()


def install() -> None:
    """Hook the first ``import tensorflow`` of this process (nothing if TensorFlow is already
    imported or the user asked for its notices)."""
    if "tensorflow" in sys.modules or wanted() or _FINDER in sys.meta_path:
        return
    sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    with contextlib.suppress(ValueError):
        sys.meta_path.remove(_FINDER)
