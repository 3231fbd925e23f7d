"""The oracle clicks the dialog's button, not the one of the same name under it (issue
41, the unseen-apps task set): Qt Designer's Save As dialog has a "Save" button and its
main window a "Save" tool button, first in reading order, which a modal dialog leaves
showing and deaf; "click Save" clicked the tool button and nothing was saved. Among the
matches, those in the topmost window holding any count. A real Qt 6 app (PyQt6) on
Xvfb: a main window with a Save tool button and a modal dialog with its own Save."""

from __future__ import annotations

from pathlib import Path

import pytest

from gui_harness.bench.desktop_oracle import find_target
from gui_harness.bench.desktop_spec import Target
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySource
from tests.gui_harness.perception.tree.test_captions import _PYTHON, _has_pyqt6
from tests.gui_harness.perception.tree.test_desktop_accessibility import wait_for
from tests.support.toolkits import ACCESSIBLE

pytestmark = [
    *ACCESSIBLE,
    pytest.mark.skipif(not _has_pyqt6(), reason="python3-pyqt6 is not installed"),
]

_APP = """
import sys
from PyQt6.QtWidgets import (QApplication, QDialog, QHBoxLayout, QLineEdit, QMainWindow,
                             QPushButton, QToolBar)
app = QApplication(sys.argv)
win = QMainWindow(); win.setWindowTitle('Editor'); win.setGeometry(0, 0, 900, 600)
bar = QToolBar(); bar.addAction('Open'); bar.addAction('Save'); win.addToolBar(bar)
win.show()
dialog = QDialog(win); dialog.setWindowTitle('Save As'); dialog.setModal(True)
row = QHBoxLayout(dialog); row.addWidget(QLineEdit('untitled.ui'))
row.addWidget(QPushButton('Save')); row.addWidget(QPushButton('Cancel'))
dialog.setGeometry(250, 250, 400, 80)
dialog.show()
app.exec()
"""


def test_the_oracle_takes_the_topmost_windows_match(tmp_path: Path) -> None:
    script = tmp_path / "editor.py"
    script.write_text(_APP)
    with VirtualDesktop((1280, 800), [App([_PYTHON, str(script)], timeout=60.0)]) as desktop:
        source = AccessibilitySource(
            desktop.accessibility_bus, screen=desktop.size, timeout=5.0,
            windows=desktop.desktop.visible_windows,
        )  # fmt: skip
        try:
            seen = wait_for(
                source,
                lambda s: len(s.windows) >= 2 and sum(c.label == "Save" for c in s.components) >= 2,
            )
        finally:
            source.close()
    saves = [c for c in seen.components if c.label == "Save"]
    assert len(saves) >= 2, seen.components
    dialog = seen.windows[-1]
    assert dialog.title == "Save As", seen.windows
    found = find_target(Target(label="Save"), seen.components, seen.windows)
    assert found is not None
    x, y = found.center
    assert dialog.x <= x < dialog.x + dialog.width and dialog.y <= y < dialog.y + dialog.height
    # without the windows, the first in reading order: the tool button above the dialog
    first = find_target(Target(label="Save"), seen.components)
    assert first is not None and first.center[1] < dialog.y
