"""Nothing covered is offered, Qt's popups included: an open Qt menu long enough to
cover a drop-down of the window under it hides that drop-down (Qt keeps a drop-down
under a popup surface of its own, which was taken for an item of the menu's popup and
offered on top of it; featherpad's search box under its File menu). What the menu
leaves showing of the window's other controls stays. A real PyQt6 window on Xvfb."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gui_harness.actions import Click
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
from PyQt6.QtWidgets import (QApplication, QComboBox, QLineEdit, QMainWindow, QPushButton,
                             QVBoxLayout, QWidget)
app = QApplication(sys.argv)
window = QMainWindow()
window.setWindowTitle('Menus')
window.resize(500, 400)
menu = window.menuBar().addMenu('&File')
for n in range(18):
    menu.addAction(f'Item {n}')
body = QWidget()
layout = QVBoxLayout(body)
layout.addWidget(QPushButton('Wide button'))
combo = QComboBox()
combo.addItems(['Under', 'Other'])
combo.setFixedWidth(110)
layout.addWidget(combo)
layout.addWidget(QLineEdit())
window.setCentralWidget(body)
window.show()
app.exec()
"""


def test_an_open_qt_menu_hides_the_drop_down_under_it(tmp_path: Path) -> None:
    script = tmp_path / "menus.py"
    script.write_text(_APP)
    with VirtualDesktop((1024, 768), [App([_PYTHON, str(script)], timeout=60.0)]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            seen = wait_for(source, lambda s: bool(labelled(s, "dropdown", "Under")))
            (under,) = labelled(seen, "dropdown", "Under")
            (file,) = labelled(seen, "button", "File")
            d.execute(Click(x=file.center[0], y=file.center[1]))
            seen = wait_for(source, lambda s: bool(labelled(s, "button", "Item 17")), limit=20)
            seen = source.snapshot()  # (the menu's window listed, its items placed)
        finally:
            source.close()
    items = [c for c in seen.components if (c.label or "").startswith("Item ")]
    top = min(c.box[1] for c in items)
    bottom = max(c.box[1] + c.box[3] for c in items)
    right = max(c.box[0] + c.box[2] for c in items)
    assert top <= under.box[1] and under.box[1] + under.box[3] <= bottom
    assert under.box[0] + under.box[2] <= right  # the menu covers the drop-down whole
    assert not labelled(seen, "dropdown", "Under"), seen.components
    (wide,) = labelled(seen, "button", "Wide button")
    assert wide.box[0] >= right - 2  # the part of it the menu leaves showing
