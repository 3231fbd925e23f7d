"""Waiting for a screen to stop changing after an action: wait_until_stable().

Asks a desktop that reports its own changes (`wait_settled`, as X11Desktop does from X
DAMAGE events); compares small grey copies of successive screenshots on any other
(compare_frames). Knows nothing about what changed or why. Used by the agent loop after
every dispatched action.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from openprogram.errors import UsageError

if TYPE_CHECKING:
    from gui_harness.desktop.base import Desktop

__all__ = ["compare_frames", "wait_until_stable"]

_DOWNSCALE = 4


def wait_until_stable(
    desktop: Desktop, *, timeout: float = 5.0, interval: float = 0.05, frames: int = 2
) -> bool:
    """Wait until the screen holds still after an action; return whether it did in time.

    A desktop with `wait_settled(timeout=...)` (X11Desktop, VirtualDesktop: from X DAMAGE
    events, with no polling) is asked; `interval` and `frames` then do not apply. Any
    other is polled with compare_frames(). `timeout` is seconds; False once it passes
    with the screen still changing. Raises UsageError for frames < 2.
    """
    if frames < 2:
        raise UsageError(f"frames={frames!r} must be at least 2: it counts frames compared")
    settled = getattr(desktop, "wait_settled", None)
    if callable(settled):
        return bool(settled(timeout=timeout))
    return compare_frames(desktop, timeout=timeout, interval=interval, frames=frames)


def compare_frames(
    desktop: Desktop, *, timeout: float = 5.0, interval: float = 0.05, frames: int = 3
) -> bool:
    """Poll screenshots every `interval` seconds until `frames` successive ones look the
    same; return whether they did before `timeout` seconds passed.

    Frames are compared as grey images shrunk `_DOWNSCALE` times, pixel for pixel; a
    blinking text cursor therefore counts as change, but its pauses are long enough to
    settle in. Raises UsageError for frames < 2.
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
