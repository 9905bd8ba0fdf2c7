"""Whether this process can open a window, and quiet off-screen rendering where it cannot.

On Linux and the BSDs a window needs an X11 or Wayland display (``DISPLAY`` or
``WAYLAND_DISPLAY``); without one, ``render_mode="human"`` fails deep in SDL or GLFW (a
segmentation fault once TensorFlow is loaded, measured with rlib's ``test(display=True)``), and
even ``rgb_array`` rendering through pygame prints SDL's ``XDG_RUNTIME_DIR`` error.
"""

from __future__ import annotations

import os
import sys


def has_display() -> bool:
    """True where windows can be opened: macOS and Windows always, elsewhere with an X11 or
    Wayland display named in the environment."""
    if sys.platform in ("darwin", "win32", "cygwin"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def quiet_offscreen_rendering() -> None:
    """Without a display, pygame's frames (``rgb_array``) need no video device: SDL's dummy
    driver draws them the same and prints no ``XDG_RUNTIME_DIR`` error. A driver the user
    chose is kept."""
    if not has_display():
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
