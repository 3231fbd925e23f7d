"""A Qt tab bar that gains a tab says nothing of it (no event at all, though the app
knows the watch listens): a source that kept the app's tree asks each of its tab lists
for its count every snapshot (AppWalk.check(), with the managed lists: what Qt changes
unsaid), and reads one that changed again."""

from __future__ import annotations

from pathlib import Path

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySnapshot
from tests.gui_harness.perception.tree.test_desktop_accessibility import wait_for
from tests.gui_harness.perception.tree.test_qt6_states import _PYTHON, _fresh, _source
from tests.gui_harness.perception.tree.test_qt6_states import pytestmark as pytestmark

# a tab bar that adds a tab when the file named by its first argument appears
_BAR = """
import os, sys
from PyQt6.QtCore import QTimer
from PyQt6.QtGui import QFont
from PyQt6.QtWidgets import QApplication, QLineEdit, QTabBar, QVBoxLayout, QWidget
app = QApplication(sys.argv)
app.setFont(QFont('DejaVu Sans', 14))
win = QWidget(); win.setWindowTitle('Tabs'); win.setGeometry(40, 40, 640, 460)
bar = QTabBar(); bar.addTab('One')
layout = QVBoxLayout(win); layout.addWidget(bar)
field = QLineEdit(); field.setAccessibleName('Notes'); layout.addWidget(field)
flag = sys.argv[1]
def poll():
    if os.path.exists(flag):
        os.remove(flag)
        bar.addTab('Two')
timer = QTimer(); timer.timeout.connect(poll); timer.start(50)
win.show()
app.exec()
"""


def _tabs(seen: AccessibilitySnapshot) -> list[str | None]:
    return sorted(c.label for c in seen.components if c.kind == "tab")


def test_a_tab_qt_adds_without_a_word_comes_to_a_kept_tree(tmp_path: Path) -> None:
    script, flag = tmp_path / "bar.py", tmp_path / "add-a-tab"
    script.write_text(_BAR)
    app = App([_PYTHON, str(script), str(flag)], timeout=60)
    with VirtualDesktop((800, 600), [app]) as desktop:
        source = _source(desktop)
        try:
            seen = wait_for(source, lambda s: _tabs(s) == ["One"])
            assert _tabs(seen) == ["One"], _tabs(seen)
            source.snapshot()  # kept: read once more from what it holds
            flag.touch()
            fresh = _fresh(desktop, lambda s: len(_tabs(s)) == 2)  # the tab is there
            assert _tabs(fresh) == ["One", "Two"], _tabs(fresh)
            kept = wait_for(source, lambda s: len(_tabs(s)) == 2, limit=30)
            assert _tabs(kept) == ["One", "Two"], _tabs(kept)
            (one,) = [c for c in kept.components if c.label == "One"]
            assert "selected" in one.states
        finally:
            source.close()
