"""Waiting for a screen to stop changing after an action: wait_until_stable().

Works on any Desktop by comparing small grey copies of successive screenshots; knows
nothing about what changed or why. Used by the agent loop after every dispatched action.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from openprogram.errors import UsageError

if TYPE_CHECKING:
    from gui_harness.desktop.base import Desktop

__all__ = ["wait_until_stable"]

_DOWNSCALE = 4


def wait_until_stable(
    desktop: Desktop, *, timeout: float = 5.0, interval: float = 0.05, frames: int = 2
) -> bool:
    """Poll screenshots until `frames` successive ones look the same; return whether they did.

    Frames are compared as grey images shrunk `_DOWNSCALE` times, pixel for pixel; a
    blinking text cursor therefore counts as change, but its pauses are long enough to
    settle in. `timeout` and `interval` are seconds; returns False once `timeout` passes
    without `frames` identical frames in a row. Raises UsageError for frames < 2.
    """
    if frames < 2:
        raise UsageError(f"frames={frames!r} must be at least 2: it counts frames compared")
    deadline = time.monotonic() + timeout
    previous = _fingerprint(desktop)
    same = 1
    while time.monotonic() < deadline:
        time.sleep(interval)
        current = _fingerprint(desktop)
        same = same + 1 if current == previous else 1
        if same >= frames:
            return True
        previous = current
    return False


def _fingerprint(desktop: Desktop) -> bytes:
    return desktop.screenshot().convert("L").reduce(_DOWNSCALE).tobytes()
