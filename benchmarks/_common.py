"""What every benchmark script shares: the description of the machine it ran on.

Each script prints it beside its numbers, so that a table pasted into
docs/performance.md carries the machine and the date. Start at machine().
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

__all__ = ["machine"]


def machine() -> str:
    """`<date>, <n> CPUs (<model>), Python <version>, <OS>, load <1-min average>` of this
    machine, now: what a table pasted into docs/performance.md must say."""
    model = platform.processor() or platform.machine() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}, {os.cpu_count()} CPUs ({model}), "
        f"Python {platform.python_version()}, {platform.system()}, "
        f"load {os.getloadavg()[0]:.2f}"
    )
