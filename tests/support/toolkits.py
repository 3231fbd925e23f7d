"""Which desktop toolkits the system's Python has, for tests that start real apps on a
VirtualDesktop: `GTK4` is the marks a GTK 4 test file sets as its `pytestmark` (an X
display, a D-Bus daemon, GTK 4's introspection for /usr/bin/python3), `ACCESSIBLE` those
of a test reading apps' accessibility trees (Xvfb, D-Bus and at-spi2-core), each skip
saying what is missing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["ACCESSIBLE", "GTK4", "has_gtk4"]

_SYSTEM_PYTHON = Path("/usr/bin/python3")


def has_gtk4() -> bool:
    """Whether /usr/bin/python3 can import GTK 4 through gi."""
    if not _SYSTEM_PYTHON.exists():
        return False
    code = "import gi; gi.require_version('Gtk', '4.0'); from gi.repository import Gtk"
    run = subprocess.run([str(_SYSTEM_PYTHON), "-c", code], capture_output=True)
    return run.returncode == 0


GTK4 = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="no dbus-daemon"),
    pytest.mark.skipif(not has_gtk4(), reason="no GTK 4 for /usr/bin/python3"),
]


ACCESSIBLE = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.skipif(
        shutil.which("dbus-daemon") is None
        or not Path("/usr/libexec/at-spi-bus-launcher").exists(),
        reason="needs dbus-daemon and at-spi2-core (scripts/setup.sh)",
    ),
]
