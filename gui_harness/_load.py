"""How loaded the machine is: `patience()`, the factor by which waits for an app's
answer are stretched when apps queue for a CPU.

Owns that one rule, below every part that waits on an app (the desktop's damage watch,
the accessibility tree's event watch and reads), so each stretches its waits alike.
"""

from __future__ import annotations

import os

__all__ = ["MAX_PATIENCE", "patience"]

MAX_PATIENCE = 8.0
"""The most patience() returns: what it stretches stays bounded on an overloaded machine."""


def patience() -> float:
    """How many times longer than on an idle machine an app may take to get a CPU: the
    runnable processes per CPU (1-minute load average), at least 1 and at most
    MAX_PATIENCE."""
    try:
        return min(MAX_PATIENCE, max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1)))
    except OSError:  # no load average on this platform
        return 1.0
