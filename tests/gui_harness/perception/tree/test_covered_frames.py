"""Nothing covered is offered, a window's frame included: the title bar the window manager
draws over another window hides what is under it, though it is no part of the window's
own box (a file dialog over its app's menu bar: the menu's entries were offered in the
strip between the dialog's frame and its client area). A real PyQt6 app on Xvfb with
Openbox."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySource
from tests.gui_harness.perception.tree.test_desktop_accessibility import labelled, wait_for

_PYTHON = "/usr/bin/python3"


def _has_pyqt6() -> bool:
    probe = [_PYTHON, "-c", "import PyQt6.QtWidgets"]
    return shutil.which(_PYTHON) is not None and subprocess.run(probe).returncode == 0


pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="no dbus-daemon"),
    pytest.mark.skipif(not _has_pyqt6(), reason="python3-pyqt6 is not installed"),
]

_APP = """
import sys
from PyQt6.QtCore import QTimer
from PyQt6.QtWidgets import QApplication, QMainWindow, QPushButton, QWidget, QVBoxLayout
app = QApplication(sys.argv)
window = QMainWindow()
window.setWindowTitle('Back')
for name in ('File', 'Edit', 'View'):
    window.menuBar().addMenu(name)
window.setCentralWidget(QPushButton('Back button'))
window.resize(500, 300)
window.move(0, 0)
window.show()
front = QWidget()
front.setWindowTitle('Front')
QVBoxLayout(front).addWidget(QPushButton('Front button'))
front.resize(420, 200)
def show_front():
    front.move(0, 24)  # its frame's top edge: the title bar over Back's menu bar
    front.show()
QTimer.singleShot(1500, show_front)
app.exec()
"""


def test_a_windows_title_bar_hides_the_menu_bar_under_it(tmp_path: Path) -> None:
    script = tmp_path / "frames.py"
    script.write_text(_APP)
    with VirtualDesktop((1024, 768), [App([_PYTHON, str(script)], timeout=60.0)]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            seen = wait_for(source, lambda s: bool(labelled(s, "button", "Front button")))
            windows = {w.title: w for w in d.desktop.visible_windows()}
        finally:
            source.close()
    back, front = windows["Back"], windows["Front"]
    assert front.frame is not None and front.frame[1] < front.y  # a title bar above it
    assert front.frame[1] <= back.y + 10  # ... over Back's menu bar
    assert labelled(seen, "button", "Front button")
    covered = [c for c in seen.components if c.label in ("File", "Edit", "View")]
    assert not covered, covered
