"""A Qt 6 form read as gui_agent reads it (placed by the desktop's windows): its open
drop-down offers the current option too, though Qt lays it exactly over the drop-down,
and its tab widget says which tab is current, though Qt 6.4 marks no tab selected (only
"focused", even after the focus moved into the page)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gui_harness.actions import Click
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySnapshot, AccessibilitySource, Component
from tests.gui_harness.perception.tree.test_desktop_accessibility import labelled, wait_for

_PYTHON = "/usr/bin/python3"  # Debian's PyQt6 lives in the system Python


def _has_pyqt6() -> bool:
    probe = [_PYTHON, "-c", "import PyQt6.QtWidgets"]
    return Path(_PYTHON).exists() and subprocess.run(probe, capture_output=True).returncode == 0


pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="no dbus-daemon"),
    pytest.mark.skipif(not _has_pyqt6(), reason="python3-pyqt6 is not installed"),
]

_FORM = """
import sys
from PyQt6.QtGui import QFont
from PyQt6.QtWidgets import (QApplication, QComboBox, QFormLayout, QLineEdit, QTabWidget,
    QVBoxLayout, QWidget)
app = QApplication(sys.argv)
app.setFont(QFont('DejaVu Sans', 14))
win = QWidget(); win.setWindowTitle('Preferences'); win.setGeometry(40, 40, 640, 460)
tabs = QTabWidget()
general = QWidget(); form = QFormLayout(general)
name = QLineEdit(); name.setAccessibleName('Display name'); form.addRow('Display name', name)
lang = QComboBox(); lang.addItems(['English', 'French', 'German'])
lang.setAccessibleName('Language'); form.addRow('Language', lang)
advanced = QWidget(); form2 = QFormLayout(advanced)
proxy = QLineEdit(); proxy.setAccessibleName('Proxy host'); form2.addRow('Proxy host', proxy)
tabs.addTab(general, 'General'); tabs.addTab(advanced, 'Advanced')
QVBoxLayout(win).addWidget(tabs)
win.show()
app.exec()
"""


def _source(desktop: VirtualDesktop) -> AccessibilitySource:
    return AccessibilitySource(
        desktop.accessibility_bus,
        screen=desktop.size,
        timeout=5.0,
        windows=desktop.desktop.visible_windows,
    )


def _form(tmp_path: Path) -> App:
    script = tmp_path / "form.py"
    script.write_text(_FORM)
    return App([_PYTHON, str(script)], timeout=60.0)


def _click(component: Component) -> Click:
    return Click(x=component.center[0], y=component.center[1])


def _click_until(
    desktop: VirtualDesktop, target: Component, shown: Callable[[AccessibilitySnapshot], bool]
) -> AccessibilitySnapshot:
    """Clicks `target` until a source that kept nothing reads what the click shows (a
    click a busy machine's Qt drops is clicked again); what that source read.

    (A source that keeps what it read missed this page change once in about six runs at
    load 10: the app had started while its watch registered, and never heard of it, so
    it told nothing; see test_late_listeners.py. The kept source is asked too.)"""
    for _ in range(3):
        desktop.execute(_click(target))
        desktop.wait_settled(timeout=10.0)
        landed = _fresh(desktop, shown)
        if shown(landed):
            return landed
    pytest.fail(f"three clicks on {target.label!r} did not show what they should")


def _fresh(
    desktop: VirtualDesktop, condition: Callable[[AccessibilitySnapshot], bool]
) -> AccessibilitySnapshot:
    """What a source that kept nothing reads once `condition` holds (or after 30 s)."""
    fresh = _source(desktop)
    try:
        return wait_for(fresh, condition, limit=30)
    finally:
        fresh.close()


def _tabs(seen: AccessibilitySnapshot) -> dict[str | None, tuple[str, ...]]:
    return {c.label: c.states for c in seen.components if c.kind == "tab"}


def test_an_open_qt6_drop_down_offers_its_current_option(tmp_path: Path) -> None:
    with VirtualDesktop((800, 600), [_form(tmp_path)]) as desktop:
        source = _source(desktop)
        try:
            seen = wait_for(source, lambda s: bool(labelled(s, "dropdown", "English")))
            (closed,) = labelled(seen, "dropdown", "English")
            assert not labelled(seen, "button", "English")  # a closed one's options: none
            desktop.execute(_click(closed))
            seen = wait_for(source, lambda s: bool(labelled(s, "button", "German")))
            (current,) = labelled(seen, "button", "English")  # over the drop-down itself
            (french,) = labelled(seen, "button", "French")
            assert abs(current.box[1] - closed.box[1]) <= 4, (current.box, closed.box)
            assert current.box[1] + current.box[3] <= french.box[1] + 2
            assert "selected" in current.states
        finally:
            source.close()


def test_a_qt6_tab_widget_says_which_tab_is_current_wherever_the_focus_is(
    tmp_path: Path,
) -> None:
    with VirtualDesktop((800, 600), [_form(tmp_path)]) as desktop:
        source = _source(desktop)
        try:
            seen = wait_for(source, lambda s: len(_tabs(s)) == 2)
            assert "selected" in _tabs(seen)["General"]
            assert "selected" not in _tabs(seen)["Advanced"]
            (advanced,) = labelled(seen, "tab", "Advanced")
            page = _click_until(
                desktop, advanced, lambda s: bool(labelled(s, "field", "Proxy host"))
            )
            # the source that kept the tree reads the page too (stop 45 saw it not)
            kept = wait_for(source, lambda s: bool(labelled(s, "field", "Proxy host")), limit=30)
            assert labelled(kept, "field", "Proxy host"), [c.label for c in kept.components]
            seen = page
            (proxy,) = labelled(seen, "field", "Proxy host")
            seen = _click_until(  # the focus leaves the tab bar for the page
                desktop,
                proxy,
                lambda s: any("focused" in c.states for c in labelled(s, "field", "Proxy host")),
            )
            assert any("focused" in c.states for c in labelled(seen, "field", "Proxy host"))
            assert _tabs(seen) == {"General": (), "Advanced": ("selected",)}
            (general,) = labelled(seen, "tab", "General")
            seen = _click_until(
                desktop, general, lambda s: bool(labelled(s, "dropdown", "English"))
            )
            assert "selected" in _tabs(seen)["General"]
            assert "selected" not in _tabs(seen)["Advanced"]
        finally:
            source.close()
