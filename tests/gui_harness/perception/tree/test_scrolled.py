"""What a scroll pane shows of what it holds is all that is offered of it: a check box
scrolled half out of its pane is offered as the part that shows, one scrolled wholly out
not at all (FeatherPad's Preferences offered a check box at its whole box, half of it
under the dialog's Help button). A real PyQt6 window on Xvfb."""

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
from PyQt6.QtWidgets import (QApplication, QCheckBox, QPushButton, QScrollArea,
                             QVBoxLayout, QWidget)
app = QApplication(sys.argv)
window = QWidget()
window.setWindowTitle('Options')
layout = QVBoxLayout(window)
inner = QWidget()
column = QVBoxLayout(inner)
for n in range(12):
    column.addWidget(QCheckBox(f'Option {n}'))
area = QScrollArea()
area.setWidget(inner)
area.setFixedHeight(130)
layout.addWidget(area)
layout.addWidget(QPushButton('Help'))
window.resize(360, 240)
window.move(0, 0)
window.show()
app.exec()
"""


def test_a_scroll_pane_offers_only_what_it_shows(tmp_path: Path) -> None:
    script = tmp_path / "scrolled.py"
    script.write_text(_APP)
    with VirtualDesktop((1024, 768), [App([_PYTHON, str(script)], timeout=60.0)]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            seen = wait_for(source, lambda s: bool(labelled(s, "button", "Help")), limit=60)
        finally:
            source.close()
    (help_button,) = labelled(seen, "button", "Help")
    options = [c for c in seen.components if (c.label or "").startswith("Option ")]
    assert options and len(options) < 12, options  # the pane shows a few of the twelve
    bottom = max(c.box[1] + c.box[3] for c in options)
    assert bottom <= help_button.box[1], (options, help_button)  # none drawn under Help
    assert "Option 11" not in {c.label for c in options}  # scrolled wholly out
